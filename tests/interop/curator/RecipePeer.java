// RecipePeer is a Curator process driven line by line over stdin, so Go
// tests can check that zkgo's recipes and Curator's exclude each other on
// the same paths. Each command prints exactly one line: the answer, or
// "ERR <message>".
//
// Usage: java -cp <curator+zookeeper jars>:<dir> RecipePeer <connectString> [session-policy]
//
// With "session-policy", Curator's SessionConnectionStateErrorPolicy: a
// lock or leadership counts as lost only when the session is (LOST), not
// on every suspension, as applications that ride out a server's restart
// configure it.
//
// Commands (MS is a wait in milliseconds):
//   mutex-acquire PATH MS   -> LOCKED | TIMEOUT     (InterProcessMutex)
//   mutex-release PATH      -> OK
//   read-acquire PATH MS    -> LOCKED | TIMEOUT     (InterProcessReadWriteLock)
//   read-release PATH       -> OK
//   write-acquire PATH MS   -> LOCKED | TIMEOUT
//   write-release PATH      -> OK
//   sem-acquire PATH MAX MS -> LEASED | TIMEOUT     (InterProcessSemaphoreV2)
//   sem-release PATH        -> OK
//   latch-start PATH ID     -> OK                   (LeaderLatch)
//   latch-await MS          -> LEADER | TIMEOUT
//   latch-close             -> OK
//   leader PATH             -> the leader's id, as LeaderLatch sees it
//   mutex-held PATH         -> HELD | NOT           (isAcquiredInThisProcess)
//   latch-has               -> LEADER | NOT         (hasLeadership)
//   state                   -> lost=N suspended=N reconnected=N session=HEX
//                              (connection state changes so far; the
//                              current session id)
//   connect-string          -> the connection string Curator uses now
//                              (its EnsembleTracker rewrites it from
//                              /zookeeper/config)
//   quit                    -> BYE

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.SessionConnectionStateErrorPolicy;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class RecipePeer {
    public static void main(String[] args) throws Exception {
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
            .connectString(args[0])
            .sessionTimeoutMs(10000)
            .connectionTimeoutMs(10000)
            .retryPolicy(new ExponentialBackoffRetry(50, 5));
        if (args.length > 1 && args[1].equals("session-policy")) {
            builder = builder.connectionStateErrorPolicy(new SessionConnectionStateErrorPolicy());
        }
        CuratorFramework client = builder.build();
        AtomicInteger lost = new AtomicInteger(), suspended = new AtomicInteger(), reconnected = new AtomicInteger();
        client.getConnectionStateListenable().addListener((c, st) -> {
            if (st == ConnectionState.LOST) {
                lost.incrementAndGet();
            } else if (st == ConnectionState.SUSPENDED) {
                suspended.incrementAndGet();
            } else if (st == ConnectionState.RECONNECTED) {
                reconnected.incrementAndGet();
            }
        });
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            System.out.println("ERR not connected");
            System.exit(1);
        }
        Map<String, InterProcessMutex> mutexes = new HashMap<>();
        Map<String, InterProcessReadWriteLock> rws = new HashMap<>();
        Map<String, InterProcessSemaphoreV2> sems = new HashMap<>();
        Map<String, Lease> leases = new HashMap<>();
        LeaderLatch latch = null;
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] a = line.trim().split(" ");
            String out;
            try {
                switch (a[0]) {
                    case "mutex-acquire": {
                        InterProcessMutex m = mutexes.computeIfAbsent(a[1], p -> new InterProcessMutex(client, p));
                        out = m.acquire(Long.parseLong(a[2]), TimeUnit.MILLISECONDS) ? "LOCKED" : "TIMEOUT";
                        break;
                    }
                    case "mutex-release":
                        mutexes.get(a[1]).release();
                        out = "OK";
                        break;
                    case "read-acquire":
                    case "write-acquire": {
                        InterProcessReadWriteLock rw = rws.computeIfAbsent(a[1], p -> new InterProcessReadWriteLock(client, p));
                        InterProcessMutex m = a[0].startsWith("read") ? rw.readLock() : rw.writeLock();
                        out = m.acquire(Long.parseLong(a[2]), TimeUnit.MILLISECONDS) ? "LOCKED" : "TIMEOUT";
                        break;
                    }
                    case "read-release":
                        rws.get(a[1]).readLock().release();
                        out = "OK";
                        break;
                    case "write-release":
                        rws.get(a[1]).writeLock().release();
                        out = "OK";
                        break;
                    case "sem-acquire": {
                        int max = Integer.parseInt(a[2]);
                        InterProcessSemaphoreV2 s = sems.computeIfAbsent(a[1], p -> new InterProcessSemaphoreV2(client, p, max));
                        Lease l = s.acquire(Long.parseLong(a[3]), TimeUnit.MILLISECONDS);
                        if (l != null) {
                            leases.put(a[1], l);
                        }
                        out = l != null ? "LEASED" : "TIMEOUT";
                        break;
                    }
                    case "sem-release":
                        leases.remove(a[1]).close();
                        out = "OK";
                        break;
                    case "latch-start":
                        latch = new LeaderLatch(client, a[1], a[2]);
                        latch.start();
                        out = "OK";
                        break;
                    case "latch-await":
                        out = latch.await(Long.parseLong(a[1]), TimeUnit.MILLISECONDS) ? "LEADER" : "TIMEOUT";
                        break;
                    case "latch-close":
                        latch.close();
                        latch = null;
                        out = "OK";
                        break;
                    case "leader": {
                        LeaderLatch probe = new LeaderLatch(client, a[1]);
                        out = probe.getLeader().getId();
                        break;
                    }
                    case "mutex-held": {
                        InterProcessMutex m = mutexes.get(a[1]);
                        out = m != null && m.isAcquiredInThisProcess() ? "HELD" : "NOT";
                        break;
                    }
                    case "latch-has":
                        out = latch != null && latch.hasLeadership() ? "LEADER" : "NOT";
                        break;
                    case "state":
                        out = "lost=" + lost.get() + " suspended=" + suspended.get() + " reconnected=" + reconnected.get()
                            + " session=" + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
                        break;
                    case "connect-string":
                        out = client.getZookeeperClient().getCurrentConnectionString();
                        break;
                    case "quit":
                        System.out.println("BYE");
                        System.out.flush();
                        client.close();
                        return;
                    default:
                        if ((out = CoordPeer.handle(client, a)) != null) break; // barriers, counts, queues
                        if ((out = CachePeer.handle(client, a)) != null) break; // cache commands (CachePeer.java)
                        if ((out = discovery(client, a)) != null) break; // disc-* commands (DiscoveryPeer.java)
                        out = "ERR unknown command " + a[0];
                }
            } catch (Exception e) {
                out = "ERR " + e;
            }
            System.out.println(out);
            System.out.flush();
        }
        client.close();
    }

    // discovery hands disc-* commands to DiscoveryPeer, which is compiled
    // only when curator-x-discovery is installed; it is found by name so
    // that RecipePeer compiles without it.
    static String discovery(CuratorFramework client, String[] a) throws Exception {
        if (!a[0].startsWith("disc-")) {
            return null;
        }
        java.lang.reflect.Method m;
        try {
            m = Class.forName("DiscoveryPeer").getMethod("handle", CuratorFramework.class, String[].class);
        } catch (ClassNotFoundException e) {
            return "ERR curator-x-discovery is not installed";
        }
        try {
            return (String) m.invoke(null, client, a);
        } catch (java.lang.reflect.InvocationTargetException e) {
            if (e.getCause() instanceof Exception) {
                throw (Exception) e.getCause();
            }
            throw e;
        }
    }
}
