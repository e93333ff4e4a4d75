// LockBench is the Java side of "zkgo bench lock -client curator"
// (tools/bench, curator.go): Apache Curator's InterProcessMutex under
// contention. Each contender is a thread with its own CuratorFramework
// client (its own session, on server i mod n of SERVERS) and its own
// InterProcessMutex on LOCKPATH; it loops acquire(), hold, release(),
// timing each acquire() with System.nanoTime. A shared holder count checks
// mutual exclusion: an acquire that finds another contender holding the
// lock is a violation.
//
// Usage: LockBench SERVERS LOCKPATH CONTENDERS WARMUP_NS DURATION_NS HOLD_NS SESSION_MS
//
// Lines on stdout:
//   ready JAVA CURATOR ZOOKEEPER    every client is connected; waiting for "go"
//                                   (the versions of Java, Curator and the ZooKeeper client)
//   lat P NS NS ...                 acquire latencies (batched every 100 ms); P is the
//                                   phase the acquire completed in: w (warm-up),
//                                   m (measured window) or x (after it)
//   err P N MESSAGE                 N failed acquire or release calls in phase P
//                                   (MESSAGE: the first one's)
//   viol N                          N acquires found the lock held by another contender
//   stuck N                         N contenders had not stopped 15 s after the window
//   end WINDOW_NS HANDOFFS ERRORS VIOLATIONS
//                                   the measured window's length, the acquires and
//                                   errors in it, violations in the whole run; then exit 0
//   fail MESSAGE                    a fatal error; exit 1
//
// "go" on stdin starts the warm-up, then the measured window; the run
// stops by itself at their end. End of stdin stops it earlier (the window
// then ends there) or, before "go", ends the program. A watchdog halts the
// JVM if the run has not ended 60 s after the window should have.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class LockBench {
    static final int WARMUP = 0, MEASURED = 1, AFTER = 2;
    static final String[] PHASES = {"w", "m", "x"};
    static final int PER_LINE = 500; // latencies per "lat" line

    static final PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);

    static void emit(String s) {
        synchronized (out) {
            out.print(s);
            out.flush();
        }
    }

    static void fail(String msg) {
        emit("fail " + oneLine(msg) + "\n");
        Runtime.getRuntime().halt(1);
    }

    static String oneLine(String s) {
        return s == null ? "" : s.replace('\n', ' ').replace('\r', ' ');
    }

    static String describe(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /** The version in a jar's Maven metadata, or "?". */
    static String version(String group, String artifact) {
        String res = "META-INF/maven/" + group + "/" + artifact + "/pom.properties";
        try (InputStream in = LockBench.class.getClassLoader().getResourceAsStream(res)) {
            if (in == null) {
                return "?";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "?");
        } catch (Exception e) {
            return "?";
        }
    }

    /**
     * Recorder collects what the contenders observe. The measured window's
     * ends are set and read under the same monitor as the samples, so each
     * sample falls in the phase its completion time belongs to: a sample
     * taken before begin() or finish() took its own time is recorded
     * either before (then that end is still unset and later than the
     * sample) or after (then it compares the times).
     */
    static final class Recorder {
        private long start = Long.MAX_VALUE, end = Long.MAX_VALUE;
        private final long[][] lat = {new long[256], new long[256], new long[256]};
        private final int[] nlat = new int[3];
        private final long[] errs = new long[3];
        private final String[] firstErr = new String[3];
        private long viol;
        private long measuredAcquires, measuredErrors, violations;

        /** Starts the measured window and returns its start. */
        synchronized long begin() {
            if (start == Long.MAX_VALUE) {
                start = System.nanoTime();
            }
            return start;
        }

        synchronized void finish() {
            if (end == Long.MAX_VALUE) {
                end = System.nanoTime();
            }
            if (start == Long.MAX_VALUE) {
                start = end; // stopped during the warm-up: an empty window
            }
        }

        private int phase(long t) {
            return t < start ? WARMUP : t < end ? MEASURED : AFTER;
        }

        synchronized void acquired(long at, long nanos) {
            int p = phase(at);
            if (nlat[p] == lat[p].length) {
                long[] bigger = new long[lat[p].length * 2];
                System.arraycopy(lat[p], 0, bigger, 0, nlat[p]);
                lat[p] = bigger;
            }
            lat[p][nlat[p]++] = nanos;
            if (p == MEASURED) {
                measuredAcquires++;
            }
        }

        synchronized void failed(long at, String what, Throwable t) {
            int p = phase(at);
            errs[p]++;
            if (firstErr[p] == null) {
                firstErr[p] = what + ": " + describe(t);
            }
            if (p == MEASURED) {
                measuredErrors++;
            }
        }

        synchronized void violation() {
            viol++;
            violations++;
        }

        /** Returns the lines for what was recorded since the last drain. */
        synchronized String drain() {
            StringBuilder b = new StringBuilder();
            for (int p = 0; p < 3; p++) {
                for (int i = 0; i < nlat[p]; i += PER_LINE) {
                    b.append("lat ").append(PHASES[p]);
                    for (int j = i; j < Math.min(nlat[p], i + PER_LINE); j++) {
                        b.append(' ').append(lat[p][j]);
                    }
                    b.append('\n');
                }
                nlat[p] = 0;
                if (errs[p] > 0) {
                    b.append("err ").append(PHASES[p]).append(' ').append(errs[p]).append(' ')
                            .append(oneLine(firstErr[p])).append('\n');
                    errs[p] = 0;
                    firstErr[p] = null;
                }
            }
            if (viol > 0) {
                b.append("viol ").append(viol).append('\n');
                viol = 0;
            }
            return b.toString();
        }

        synchronized String endLine() {
            return "end " + (end - start) + " " + measuredAcquires + " " + measuredErrors + " " + violations + "\n";
        }
    }

    static final Recorder rec = new Recorder();
    static final AtomicInteger holders = new AtomicInteger();
    static volatile boolean stop;

    static void hold(long nanos) {
        if (nanos <= 0) {
            return;
        }
        long until = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    static void contend(InterProcessMutex mutex, long holdNanos) {
        while (!stop) {
            long t0 = System.nanoTime();
            try {
                mutex.acquire();
            } catch (Exception e) {
                rec.failed(System.nanoTime(), "acquire", e);
                hold(10_000_000L); // do not spin on a server that fails
                continue;
            }
            long t1 = System.nanoTime();
            if (holders.incrementAndGet() != 1) {
                rec.violation();
            }
            rec.acquired(t1, t1 - t0);
            hold(holdNanos);
            holders.decrementAndGet();
            try {
                mutex.release();
            } catch (Exception e) {
                rec.failed(System.nanoTime(), "release", e);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            fail("usage: LockBench SERVERS LOCKPATH CONTENDERS WARMUP_NS DURATION_NS HOLD_NS SESSION_MS");
        }
        String[] servers = args[0].split(",");
        String lockPath = args[1];
        int contenders = Integer.parseInt(args[2]);
        long warmupNanos = Long.parseLong(args[3]);
        long durationNanos = Long.parseLong(args[4]);
        long holdNanos = Long.parseLong(args[5]);
        int sessionMs = Integer.parseInt(args[6]);

        // Connect every contender's client, in parallel.
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < contenders; i++) {
            CuratorFramework c = CuratorFrameworkFactory.builder()
                    .connectString(servers[i % servers.length].trim())
                    .sessionTimeoutMs(sessionMs)
                    .connectionTimeoutMs(15_000)
                    .retryPolicy(new ExponentialBackoffRetry(100, 3))
                    .build();
            clients.add(c);
            c.start();
        }
        for (int i = 0; i < contenders; i++) {
            if (!clients.get(i).blockUntilConnected(30, TimeUnit.SECONDS)) {
                fail("contender " + i + ": no connection to " + servers[i % servers.length] + " within 30 s");
            }
        }
        if (servers.length > 1) {
            // Each session catches up with the leader before the load, as
            // the Go clients do on an ensemble.
            CountDownLatch synced = new CountDownLatch(contenders);
            for (CuratorFramework c : clients) {
                c.sync().inBackground((client, event) -> synced.countDown()).forPath("/");
            }
            if (!synced.await(30, TimeUnit.SECONDS)) {
                fail("sync: " + synced.getCount() + " sessions not synced within 30 s");
            }
        }

        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch eof = new CountDownLatch(1);
        AtomicBoolean started = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.trim().equals("go")) {
                        started.set(true);
                        go.countDown();
                    }
                }
            } catch (Exception e) {
                // treated as the end of stdin
            }
            eof.countDown();
            go.countDown();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        emit("ready " + System.getProperty("java.version") + " " + version("org.apache.curator", "curator-recipes")
                + " " + version("org.apache.zookeeper", "zookeeper") + "\n");
        go.await();
        if (!started.get()) {
            closeAll(clients);
            System.exit(0);
        }

        long boundMs = (warmupNanos + durationNanos) / 1_000_000 + 60_000;
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(boundMs);
            } catch (InterruptedException e) {
                return;
            }
            fail("watchdog: the run did not end within " + boundMs + " ms");
        }, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();

        Thread printer = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    break;
                }
                String s = rec.drain();
                if (!s.isEmpty()) {
                    emit(s);
                }
            }
        }, "printer");
        printer.setDaemon(true);
        printer.start();

        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < contenders; i++) {
            InterProcessMutex mutex = new InterProcessMutex(clients.get(i), lockPath);
            Thread t = new Thread(() -> contend(mutex, holdNanos), "contender-" + i);
            t.setDaemon(true);
            threads.add(t);
        }
        for (Thread t : threads) {
            t.start();
        }

        boolean early = eof.await(warmupNanos, TimeUnit.NANOSECONDS);
        if (!early) {
            long left = rec.begin() + durationNanos - System.nanoTime();
            eof.await(Math.max(left, 0), TimeUnit.NANOSECONDS);
        }
        rec.finish();
        stop = true;

        // The holder releases; each waiter gets the lock once more, releases
        // it and sees stop.
        long joinUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        int stuck = 0;
        for (Thread t : threads) {
            t.join(Math.max(1, (joinUntil - System.nanoTime()) / 1_000_000));
            if (t.isAlive()) {
                stuck++;
            }
        }
        printer.interrupt();
        printer.join(5_000);
        StringBuilder last = new StringBuilder(rec.drain());
        if (stuck > 0) {
            last.append("stuck ").append(stuck).append('\n');
        }
        last.append(rec.endLine());
        closeAll(clients); // the sessions end, and with them their lock nodes
        emit(last.toString());
        Runtime.getRuntime().halt(0);
    }

    /** Closes the clients in parallel (each close waits for the server's answer), for at most 5 s. */
    static void closeAll(List<CuratorFramework> clients) throws InterruptedException {
        List<Thread> closers = new ArrayList<>();
        for (CuratorFramework c : clients) {
            Thread t = new Thread(() -> {
                try {
                    c.close();
                } catch (Exception e) {
                    // the session expires on the server
                }
            }, "close");
            t.setDaemon(true);
            t.start();
            closers.add(t);
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (Thread t : closers) {
            t.join(Math.max(1, (until - System.nanoTime()) / 1_000_000));
        }
    }
}
