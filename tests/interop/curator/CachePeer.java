// CachePeer holds RecipePeer's cache commands: Curator's CuratorCache and
// NodeCache following what a Go process writes, and plain writes for a Go
// cache to follow. RecipePeer hands it every command it does not know;
// handle answers null for commands that are not its own.
//
// Commands (NAME names a cache; MS is a wait in milliseconds; DATA has no
// spaces, "-" for empty):
//   cache-start NAME PATH        -> OK   (CuratorCache of the subtree; once
//                                         it is initialized)
//   nodecache-start NAME PATH    -> OK   (NodeCache of the node; once built)
//   cache-await NAME EVENT MS    -> SEEN | TIMEOUT, where EVENT is
//                                   CREATED:PATH:DATA, CHANGED:PATH:DATA or
//                                   DELETED:PATH (CuratorCache) and
//                                   NODE:PATH:DATA or NODE:PATH:NONE
//                                   (NodeCache: the node as it is after a
//                                   change). Events seen are consumed.
//   cache-get NAME PATH          -> DATA | NONE (the cached node now)
//   cache-close NAME             -> OK
//   write-create PATH DATA       -> OK   (a persistent node)
//   write-set PATH DATA          -> OK
//   write-delete PATH            -> OK

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.NodeCache;

public class CachePeer {
    // A cache and the events it reported, not yet awaited.
    static final class Followed {
        final List<String> events = new ArrayList<>();
        CuratorCache cache;
        NodeCache node;

        synchronized void add(String ev) {
            events.add(ev);
            notifyAll();
        }

        synchronized boolean await(String ev, long ms) throws InterruptedException {
            long deadline = System.currentTimeMillis() + ms;
            while (true) {
                int i = events.indexOf(ev);
                if (i >= 0) {
                    events.subList(0, i + 1).clear();
                    return true;
                }
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    return false;
                }
                wait(left);
            }
        }
    }

    static final Map<String, Followed> caches = new HashMap<>();

    static String str(byte[] b) {
        return b == null || b.length == 0 ? "-" : new String(b, StandardCharsets.UTF_8);
    }

    static byte[] data(String s) {
        return s.equals("-") ? new byte[0] : s.getBytes(StandardCharsets.UTF_8);
    }

    public static String handle(CuratorFramework client, String[] a) throws Exception {
        switch (a[0]) {
            case "cache-start": {
                Followed f = new Followed();
                CountDownLatch initialized = new CountDownLatch(1);
                f.cache = CuratorCache.build(client, a[2]);
                f.cache.listenable().addListener(new CuratorCacheListener() {
                    @Override
                    public void event(Type type, ChildData oldData, ChildData data) {
                        switch (type) {
                            case NODE_CREATED:
                                f.add("CREATED:" + data.getPath() + ":" + str(data.getData()));
                                break;
                            case NODE_CHANGED:
                                f.add("CHANGED:" + data.getPath() + ":" + str(data.getData()));
                                break;
                            case NODE_DELETED:
                                f.add("DELETED:" + oldData.getPath());
                                break;
                        }
                    }

                    @Override
                    public void initialized() {
                        initialized.countDown();
                    }
                });
                f.cache.start();
                if (!initialized.await(30, TimeUnit.SECONDS)) {
                    return "ERR not initialized";
                }
                caches.put(a[1], f);
                return "OK";
            }
            case "nodecache-start": {
                Followed f = new Followed();
                NodeCache nc = new NodeCache(client, a[2]);
                f.node = nc;
                nc.getListenable().addListener(() -> {
                    ChildData d = nc.getCurrentData();
                    f.add("NODE:" + a[2] + ":" + (d == null ? "NONE" : str(d.getData())));
                });
                nc.start(true);
                caches.put(a[1], f);
                return "OK";
            }
            case "cache-await":
                return caches.get(a[1]).await(a[2], Long.parseLong(a[3])) ? "SEEN" : "TIMEOUT";
            case "cache-get": {
                Followed f = caches.get(a[1]);
                ChildData d;
                if (f.node != null) {
                    d = f.node.getCurrentData();
                } else {
                    Optional<ChildData> o = f.cache.get(a[2]);
                    d = o.orElse(null);
                }
                return d == null ? "NONE" : str(d.getData());
            }
            case "cache-close": {
                Followed f = caches.remove(a[1]);
                if (f.node != null) {
                    f.node.close();
                } else {
                    f.cache.close();
                }
                return "OK";
            }
            case "write-create":
                client.create().forPath(a[1], data(a[2]));
                return "OK";
            case "write-set":
                client.setData().forPath(a[1], data(a[2]));
                return "OK";
            case "write-delete":
                client.delete().forPath(a[1]);
                return "OK";
        }
        return null;
    }
}
