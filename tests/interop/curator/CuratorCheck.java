// CuratorCheck exercises Apache Curator recipes against a ZooKeeper-compatible
// server, to check wire and semantic compatibility of zkgo.
//
// Usage: java -cp <curator+zookeeper jars>:<dir> CuratorCheck <connectString> <rootPath>
//
// It prints one line per scenario, "PASS name (duration)" or
// "FAIL name: reason", and exits 0 only if every scenario passed. Every wait
// is bounded; a watchdog ends the JVM if the whole run takes too long.
//
// It is compiled and run by the Go tests in this directory (see curator.go).

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

public class CuratorCheck {
    static final long WAIT_SECONDS = 20;
    static final long WATCHDOG_SECONDS = 240;

    static String connectString;
    static String root;
    static final List<CuratorFramework> clients = new ArrayList<>();

    /** A failed expectation inside a scenario. */
    static final class CheckFailure extends Exception {
        private static final long serialVersionUID = 1L;

        CheckFailure(String msg) {
            super(msg);
        }
    }

    interface Scenario {
        void run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[1].startsWith("/") || args[1].length() < 2) {
            System.err.println("usage: CuratorCheck <connectString> </rootPath>");
            System.exit(2);
        }
        connectString = args[0];
        root = args[1];

        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(TimeUnit.SECONDS.toMillis(WATCHDOG_SECONDS));
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("FAIL watchdog: the whole check took more than " + WATCHDOG_SECONDS + "s");
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();

        Map<String, Scenario> scenarios = new java.util.LinkedHashMap<>();
        scenarios.put("basics", CuratorCheck::basics);
        scenarios.put("leader-latch", CuratorCheck::leaderLatch);
        scenarios.put("leader-selector", CuratorCheck::leaderSelector);
        scenarios.put("mutex", CuratorCheck::mutex);
        scenarios.put("read-write-lock", CuratorCheck::readWriteLock);
        scenarios.put("curator-cache", CuratorCheck::curatorCache);

        // Fail fast (instead of once per scenario) if the server is unreachable.
        try {
            newClient();
        } catch (Throwable t) {
            System.out.println("FAIL connect: " + describe(t));
            System.out.flush();
            Runtime.getRuntime().halt(1);
        } finally {
            closeClients();
        }

        int failed = 0;
        for (Map.Entry<String, Scenario> e : scenarios.entrySet()) {
            long start = System.nanoTime();
            try {
                e.getValue().run();
                System.out.printf("PASS %s (%dms)%n", e.getKey(), (System.nanoTime() - start) / 1_000_000);
            } catch (Throwable t) {
                failed++;
                System.out.printf("FAIL %s: %s%n", e.getKey(), describe(t));
                if (!(t instanceof CheckFailure)) {
                    t.printStackTrace(System.out);
                }
            } finally {
                closeClients();
            }
            System.out.flush();
        }

        try {
            CuratorFramework c = newClient();
            c.delete().deletingChildrenIfNeeded().forPath(root);
        } catch (Throwable t) {
            System.out.println("WARN cleanup of " + root + ": " + describe(t));
        } finally {
            closeClients();
        }

        System.out.println(failed == 0 ? "ALL PASS" : failed + " scenario(s) FAILED");
        System.out.flush();
        Runtime.getRuntime().halt(failed == 0 ? 0 : 1);
    }

    static String describe(Throwable t) {
        String m = t.getMessage();
        return t instanceof CheckFailure ? m : t.getClass().getName() + (m == null ? "" : ": " + m);
    }

    // ---- helpers ----

    static CuratorFramework newClient() throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs(5000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        synchronized (clients) {
            clients.add(c);
        }
        c.start();
        if (!c.blockUntilConnected((int) WAIT_SECONDS, TimeUnit.SECONDS)) {
            throw new CheckFailure("client did not connect to " + connectString + " within " + WAIT_SECONDS + "s");
        }
        return c;
    }

    /** Closes all clients, in parallel: each ZooKeeper client close lingers ~100ms. */
    static void closeClients() {
        List<Thread> closers = new ArrayList<>();
        synchronized (clients) {
            for (CuratorFramework c : clients) {
                Thread t = new Thread(() -> {
                    try {
                        c.close();
                    } catch (Throwable ignored) {
                        // best effort
                    }
                }, "closer");
                t.setDaemon(true);
                t.start();
                closers.add(t);
            }
            clients.clear();
        }
        for (Thread t : closers) {
            try {
                t.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    static void check(boolean cond, String fmt, Object... args) throws CheckFailure {
        if (!cond) {
            throw new CheckFailure(String.format(fmt, args));
        }
    }

    static void await(BooleanSupplier cond, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        long sleep = 5;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new CheckFailure("timed out after " + WAIT_SECONDS + "s waiting for " + what);
            }
            Thread.sleep(sleep);
            sleep = Math.min(sleep * 2, 100);
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? "null" : new String(b, StandardCharsets.UTF_8);
    }

    // ---- scenarios ----

    /** Plain CRUD, versions, sequential/ephemeral nodes, watches, transactions. */
    static void basics() throws Exception {
        CuratorFramework c = newClient();
        String base = root + "/basics";
        c.create().creatingParentsIfNeeded().forPath(base + "/a", bytes("one"));
        Stat st = new Stat();
        check(str(c.getData().storingStatIn(st).forPath(base + "/a")).equals("one"), "getData after create");
        check(st.getVersion() == 0 && st.getDataLength() == 3, "stat after create: %s", st);

        try {
            c.create().forPath(base + "/a");
            throw new CheckFailure("second create of the same path succeeded");
        } catch (KeeperException.NodeExistsException expected) {
            // ok
        }

        Stat st2 = c.setData().withVersion(0).forPath(base + "/a", bytes("two"));
        check(st2.getVersion() == 1, "version after setData: %d", st2.getVersion());
        try {
            c.setData().withVersion(0).forPath(base + "/a", bytes("three"));
            throw new CheckFailure("setData with a stale version succeeded");
        } catch (KeeperException.BadVersionException expected) {
            // ok
        }

        // A one-shot data watch fires on change.
        CountDownLatch fired = new CountDownLatch(1);
        AtomicReference<WatchedEvent> ev = new AtomicReference<>();
        c.getData().usingWatcher((Watcher) e -> {
            ev.set(e);
            fired.countDown();
        }).forPath(base + "/a");
        c.setData().forPath(base + "/a", bytes("four"));
        check(fired.await(WAIT_SECONDS, TimeUnit.SECONDS), "data watch did not fire");
        check(ev.get().getType() == Watcher.Event.EventType.NodeDataChanged, "watch event type %s", ev.get().getType());

        String s1 = c.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(base + "/seq-");
        String s2 = c.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(base + "/seq-");
        check(s1.matches(".*/seq-\\d{10}") && s2.compareTo(s1) > 0, "sequential names %s, %s", s1, s2);
        check(c.checkExists().forPath(s1).getEphemeralOwner() == c.getZookeeperClient().getZooKeeper().getSessionId(),
                "ephemeral owner is not our session");

        List<String> kids = c.getChildren().forPath(base);
        kids.sort(null);
        check(kids.size() == 3 && kids.get(0).equals("a"), "children %s", kids);

        // Transactions: all-or-nothing.
        List<CuratorOp> ok = Arrays.asList(
                c.transactionOp().check().withVersion(2).forPath(base + "/a"),
                c.transactionOp().create().forPath(base + "/t1", bytes("x")),
                c.transactionOp().setData().forPath(base + "/a", bytes("five")));
        Collection<CuratorTransactionResult> res = c.transaction().forOperations(ok);
        check(res.size() == 3, "transaction results: %s", res);
        check(str(c.getData().forPath(base + "/a")).equals("five"), "data after transaction");
        List<CuratorOp> bad = Arrays.asList(
                c.transactionOp().create().forPath(base + "/t2"),
                c.transactionOp().delete().withVersion(99).forPath(base + "/t1"));
        try {
            c.transaction().forOperations(bad);
            throw new CheckFailure("failing transaction succeeded");
        } catch (KeeperException.BadVersionException expected) {
            // ok
        }
        check(c.checkExists().forPath(base + "/t2") == null, "a failed transaction left /t2 behind");

        c.delete().deletingChildrenIfNeeded().forPath(base);
        check(c.checkExists().forPath(base) == null, "delete deletingChildrenIfNeeded");
    }

    static int leaders(List<LeaderLatch> latches) {
        int n = 0;
        for (LeaderLatch l : latches) {
            if (l.hasLeadership()) {
                n++;
            }
        }
        return n;
    }

    static int participants(LeaderLatch l) {
        try {
            return l.getParticipants().size();
        } catch (Exception e) {
            return -1;
        }
    }

    static LeaderLatch theLeader(List<LeaderLatch> latches) {
        for (LeaderLatch l : latches) {
            if (l.hasLeadership()) {
                return l;
            }
        }
        return null;
    }

    static void leaderLatch() throws Exception {
        String path = root + "/latch";
        List<LeaderLatch> latches = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                LeaderLatch l = new LeaderLatch(newClient(), path, "p" + i);
                latches.add(l);
                l.start();
            }
            // Each latch creates its node asynchronously: the first one may
            // lead before the others have joined.
            await(() -> participants(latches.get(0)) == 3, "3 latch participants");
            await(() -> leaders(latches) == 1, "exactly one of 3 latches to lead");
            LeaderLatch leader = theLeader(latches);
            Collection<Participant> ps = latches.get(0).getParticipants();
            check(ps.size() == 3, "participants %s, want 3", ps);
            Participant lp = latches.get(1).getLeader();
            check(lp.isLeader() && lp.getId().equals(leader.getId()),
                    "getLeader says %s, but %s has leadership", lp, leader.getId());

            latches.remove(leader);
            leader.close();
            check(!leader.hasLeadership(), "closed latch still has leadership");
            await(() -> leaders(latches) == 1, "one of the 2 remaining latches to take over");
            LeaderLatch next = theLeader(latches);
            check(next.await(WAIT_SECONDS, TimeUnit.SECONDS), "await on the new leader returned false");
            await(() -> participants(next) == 2, "2 latch participants after close");
            ps = next.getParticipants();
            check(ps.size() == 2, "participants after close %s, want 2", ps);
            for (LeaderLatch l : latches) {
                if (l != next) {
                    check(!l.await(200, TimeUnit.MILLISECONDS), "non-leader %s: await returned true", l.getId());
                }
            }
            check(leaders(latches) == 1, "leadership count changed to %d", leaders(latches));
        } finally {
            for (LeaderLatch l : latches) {
                try {
                    l.close();
                } catch (Exception ignored) {
                    // already closed
                }
            }
        }
    }

    static void leaderSelector() throws Exception {
        String path = root + "/selector";
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlap = new AtomicInteger();
        BlockingQueue<String> elected = new LinkedBlockingQueue<>();
        Map<String, Semaphore> release = new TreeMap<>();
        List<LeaderSelector> selectors = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                String id = "s" + i;
                Semaphore rel = new Semaphore(0);
                release.put(id, rel);
                LeaderSelector sel = new LeaderSelector(newClient(), path, new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework client) throws Exception {
                        if (inside.incrementAndGet() != 1) {
                            overlap.incrementAndGet();
                        }
                        elected.add(id);
                        try {
                            rel.tryAcquire(2 * WAIT_SECONDS, TimeUnit.SECONDS);
                        } finally {
                            inside.decrementAndGet();
                        }
                    }
                });
                sel.setId(id);
                selectors.add(sel);
                sel.start();
            }
            List<String> order = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                String id = elected.poll(WAIT_SECONDS, TimeUnit.SECONDS);
                check(id != null, "round %d: no leader elected within %ds (so far %s)", round, WAIT_SECONDS, order);
                check(!order.contains(id), "%s elected twice without requeue: %s", id, order);
                order.add(id);
                if (round == 0) {
                    await(() -> {
                        try {
                            return selectors.get(0).getParticipants().size() == 3;
                        } catch (Exception e) {
                            return false;
                        }
                    }, "3 selector participants");
                }
                LeaderSelector cur = selectors.get(Integer.parseInt(id.substring(1)));
                check(cur.hasLeadership(), "%s elected but hasLeadership is false", id);
                release.get(id).release();
            }
            check(overlap.get() == 0, "two selectors were leader at the same time");
            // Let the last leader give up its lock node before closing
            // (closing interrupts a leader that is still releasing).
            await(() -> {
                try {
                    return selectors.get(0).getParticipants().isEmpty();
                } catch (KeeperException.NoNodeException e) {
                    return true; // the container was already reaped
                } catch (Exception e) {
                    return false;
                }
            }, "all selector lock nodes to be deleted");
        } finally {
            for (Semaphore s : release.values()) {
                s.release();
            }
            for (LeaderSelector s : selectors) {
                try {
                    s.close();
                } catch (Exception ignored) {
                    // already closed
                }
            }
        }
    }

    static void mutex() throws Exception {
        String path = root + "/lock";
        CuratorFramework c1 = newClient();
        CuratorFramework c2 = newClient();
        int threads = 4;
        int rounds = 25;
        AtomicInteger inside = new AtomicInteger();
        AtomicReference<String> problem = new AtomicReference<>();
        int[] counter = {0};
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                InterProcessMutex m = new InterProcessMutex(t % 2 == 0 ? c1 : c2, path);
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < rounds; i++) {
                        if (!m.acquire(WAIT_SECONDS, TimeUnit.SECONDS)) {
                            throw new CheckFailure("acquire timed out");
                        }
                        try {
                            if (inside.incrementAndGet() != 1) {
                                problem.compareAndSet(null, "two threads inside the lock at once");
                            }
                            int v = counter[0];
                            Thread.yield();
                            counter[0] = v + 1;
                            inside.decrementAndGet();
                        } finally {
                            m.release();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                try {
                    f.get(3 * WAIT_SECONDS, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
                }
            }
        } finally {
            pool.shutdownNow();
        }
        check(problem.get() == null, "%s", problem.get());
        check(counter[0] == threads * rounds, "counter %d, want %d", counter[0], threads * rounds);

        // Reentrancy.
        InterProcessMutex m = new InterProcessMutex(c1, path);
        InterProcessMutex other = new InterProcessMutex(c2, path);
        check(m.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "first acquire");
        check(m.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "reentrant acquire");
        check(m.isAcquiredInThisProcess() && m.isOwnedByCurrentThread(), "not owned after acquire");
        check(!other.acquire(200, TimeUnit.MILLISECONDS), "another client acquired a held lock");
        m.release();
        check(m.isOwnedByCurrentThread(), "released too early (reentrant count)");
        check(!other.acquire(200, TimeUnit.MILLISECONDS), "another client acquired a lock held once more");
        m.release();
        check(!m.isAcquiredInThisProcess(), "still acquired after two releases");
        check(other.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "other client could not acquire a free lock");
        other.release();
        await(() -> {
            try {
                return c1.getChildren().forPath(path).isEmpty();
            } catch (KeeperException.NoNodeException e) {
                return true; // the container was already reaped
            } catch (Exception e) {
                return false;
            }
        }, "lock nodes to be deleted");
    }

    static void readWriteLock() throws Exception {
        String path = root + "/rwlock";
        InterProcessReadWriteLock rw1 = new InterProcessReadWriteLock(newClient(), path);
        InterProcessReadWriteLock rw2 = new InterProcessReadWriteLock(newClient(), path);
        InterProcessReadWriteLock rw3 = new InterProcessReadWriteLock(newClient(), path);

        check(rw1.readLock().acquire(WAIT_SECONDS, TimeUnit.SECONDS), "reader 1 acquire");
        check(rw2.readLock().acquire(WAIT_SECONDS, TimeUnit.SECONDS), "reader 2 acquire while reader 1 holds");
        check(!rw3.writeLock().acquire(200, TimeUnit.MILLISECONDS), "writer acquired while readers hold");
        rw1.readLock().release();
        check(!rw3.writeLock().acquire(200, TimeUnit.MILLISECONDS), "writer acquired while reader 2 holds");
        rw2.readLock().release();
        check(rw3.writeLock().acquire(WAIT_SECONDS, TimeUnit.SECONDS), "writer acquire after readers released");
        check(!rw1.readLock().acquire(200, TimeUnit.MILLISECONDS), "reader acquired while writer holds");
        check(!rw2.writeLock().acquire(200, TimeUnit.MILLISECONDS), "second writer acquired while writer holds");
        rw3.writeLock().release();
        check(rw1.readLock().acquire(WAIT_SECONDS, TimeUnit.SECONDS), "reader acquire after writer released");
        rw1.readLock().release();
    }

    static void curatorCache() throws Exception {
        String path = root + "/cache";
        CuratorFramework c = newClient();
        c.create().creatingParentsIfNeeded().forPath(path, bytes("root"));
        c.create().forPath(path + "/pre", bytes("p"));

        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        CountDownLatch initialized = new CountDownLatch(1);
        CuratorCache cache = CuratorCache.build(newClient(), path);
        cache.listenable().addListener(new CuratorCacheListener() {
            @Override
            public void event(Type type, ChildData oldData, ChildData data) {
                ChildData d = data != null ? data : oldData;
                events.add(type + " " + d.getPath() + " " + str(d.getData()));
            }

            @Override
            public void initialized() {
                initialized.countDown();
            }
        });
        try {
            cache.start();
            check(initialized.await(WAIT_SECONDS, TimeUnit.SECONDS), "cache not initialized within %ds", WAIT_SECONDS);
            List<String> initial = new ArrayList<>();
            events.drainTo(initial);
            initial.sort(null);
            check(initial.equals(Arrays.asList(
                    "NODE_CREATED " + path + " root",
                    "NODE_CREATED " + path + "/pre p")), "initial events %s", initial);

            c.create().forPath(path + "/a", bytes("1"));
            expect(events, "NODE_CREATED " + path + "/a 1");
            c.setData().forPath(path + "/a", bytes("2"));
            expect(events, "NODE_CHANGED " + path + "/a 2");
            c.create().forPath(path + "/a/deep", bytes("d"));
            expect(events, "NODE_CREATED " + path + "/a/deep d");
            c.create().forPath(path + "/b", bytes("3"));
            expect(events, "NODE_CREATED " + path + "/b 3");
            c.delete().forPath(path + "/pre");
            expect(events, "NODE_DELETED " + path + "/pre p");
            c.delete().deletingChildrenIfNeeded().forPath(path + "/a");
            List<String> dels = Arrays.asList(next(events), next(events));
            check(dels.equals(Arrays.asList("NODE_DELETED " + path + "/a/deep d", "NODE_DELETED " + path + "/a 2")),
                    "events after recursive delete %s", dels);
            c.setData().forPath(path, bytes("root2"));
            expect(events, "NODE_CHANGED " + path + " root2");

            Map<String, String> got = new TreeMap<>();
            cache.stream().forEach(d -> got.put(d.getPath(), str(d.getData())));
            Map<String, String> want = new TreeMap<>();
            want.put(path, "root2");
            want.put(path + "/b", "3");
            check(got.equals(want), "cache contents %s, want %s", got, want);
            Optional<ChildData> b = cache.get(path + "/b");
            check(b.isPresent() && b.get().getStat().getVersion() == 0, "cache.get(b) %s", b);
            String extra = events.poll(200, TimeUnit.MILLISECONDS);
            check(extra == null, "unexpected extra event %s", extra);
        } finally {
            cache.close();
        }
    }

    static String next(BlockingQueue<String> events) throws Exception {
        String e = events.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        if (e == null) {
            throw new CheckFailure("no cache event within " + WAIT_SECONDS + "s");
        }
        return e;
    }

    static void expect(BlockingQueue<String> events, String want) throws Exception {
        String e = events.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        check(e != null, "no cache event within %ds, want '%s'", WAIT_SECONDS, want);
        check(e.equals(want), "cache event '%s', want '%s'", e, want);
    }
}
