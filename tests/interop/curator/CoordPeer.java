// CoordPeer holds RecipePeer's commands for barriers, shared counts,
// atomic longs and queues (Curator's barriers, shared, atomic and queue
// recipes), so Go tests can check that zkgo's recipe/barrier, recipe/shared
// and recipe/queue interoperate with them. RecipePeer's default branch
// hands every command it does not know to handle, which answers null for
// commands that are not its own.
//
// Commands (MS is a wait in milliseconds; queue values are strings, UTF-8,
// without spaces; KIND is fifo, prio, delay or id):
//   barrier-set PATH            -> OK       (DistributedBarrier.setBarrier)
//   barrier-remove PATH         -> OK
//   barrier-wait PATH MS        -> DOWN | TIMEOUT
//   dbarrier-enter PATH N       -> OK       (DistributedDoubleBarrier.enter, in the background)
//   dbarrier-entered PATH MS    -> ENTERED | TIMEOUT
//   dbarrier-leave PATH         -> OK       (leave, in the background)
//   dbarrier-left PATH MS       -> LEFT | TIMEOUT
//   count-start PATH SEED       -> OK       (SharedCount.start, with a listener)
//   count-get PATH              -> the count
//   count-set PATH N            -> OK
//   count-add PATH DELTA TIMES  -> OK       (TIMES trySetCount loops, each until it succeeds)
//   count-await PATH N MS       -> SEEN | TIMEOUT (the listener heard N, or getCount is N)
//   count-close PATH            -> OK
//   along-add PATH DELTA TIMES  -> OK       (DistributedAtomicLong.add, each repeated until it succeeds)
//   along-get PATH              -> the value
//   queue-put KIND PATH VALUE [ARG]       -> OK (ARG: priority, delay in ms from now, id)
//   queue-putmulti KIND PATH V1,V2.. [ARG] -> OK
//   queue-consume KIND PATH LOCKPATH|-    -> OK (a consuming queue, lock-safe unless "-")
//   queue-take PATH MS          -> VALUE | TIMEOUT (the next value the consumer received)
//   queue-stop PATH             -> OK       (close the consuming queue)
//   squeue-offer PATH VALUE     -> OK       (SimpleDistributedQueue.offer)
//   squeue-poll PATH MS         -> VALUE | EMPTY (poll(), or poll(MS) if MS > 0)
//   squeue-peek PATH            -> VALUE | EMPTY
//   squeue-take PATH            -> VALUE    (take(), blocking)

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

public class CoordPeer {
    static final ExecutorService background = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "CoordPeer");
        t.setDaemon(true);
        return t;
    });
    static final Map<String, DistributedDoubleBarrier> doubles = new HashMap<>();
    static final Map<String, Future<?>> entering = new HashMap<>();
    static final Map<String, Future<?>> leaving = new HashMap<>();
    static final Map<String, SharedCount> counts = new HashMap<>();
    static final Map<String, Set<Integer>> heard = new HashMap<>();
    static final Map<String, Object> producers = new HashMap<>();
    static final Map<String, java.io.Closeable> consumers = new HashMap<>();
    static final Map<String, BlockingQueue<String>> received = new HashMap<>();

    static final QueueSerializer<String> strings = new QueueSerializer<String>() {
        @Override
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    /** Runs one command; null if it is not one of CoordPeer's. */
    public static String handle(CuratorFramework client, String[] a) throws Exception {
        switch (a[0]) {
            case "barrier-set":
                new DistributedBarrier(client, a[1]).setBarrier();
                return "OK";
            case "barrier-remove":
                new DistributedBarrier(client, a[1]).removeBarrier();
                return "OK";
            case "barrier-wait":
                return new DistributedBarrier(client, a[1]).waitOnBarrier(Long.parseLong(a[2]), TimeUnit.MILLISECONDS)
                    ? "DOWN" : "TIMEOUT";
            case "dbarrier-enter": {
                DistributedDoubleBarrier b = new DistributedDoubleBarrier(client, a[1], Integer.parseInt(a[2]));
                doubles.put(a[1], b);
                entering.put(a[1], background.submit(() -> {
                    b.enter();
                    return null;
                }));
                return "OK";
            }
            case "dbarrier-entered":
                return await(entering.get(a[1]), a[2]) ? "ENTERED" : "TIMEOUT";
            case "dbarrier-leave": {
                DistributedDoubleBarrier b = doubles.get(a[1]);
                leaving.put(a[1], background.submit(() -> {
                    b.leave();
                    return null;
                }));
                return "OK";
            }
            case "dbarrier-left":
                return await(leaving.get(a[1]), a[2]) ? "LEFT" : "TIMEOUT";
            case "count-start": {
                SharedCount c = new SharedCount(client, a[1], Integer.parseInt(a[2]));
                Set<Integer> seen = ConcurrentHashMap.newKeySet();
                c.addListener(new SharedCountListener() {
                    @Override
                    public void countHasChanged(SharedCountReader r, int n) {
                        synchronized (seen) {
                            seen.add(n);
                            seen.notifyAll();
                        }
                    }

                    @Override
                    public void stateChanged(CuratorFramework f, ConnectionState s) {}
                });
                c.start();
                counts.put(a[1], c);
                heard.put(a[1], seen);
                return "OK";
            }
            case "count-get":
                return Integer.toString(counts.get(a[1]).getCount());
            case "count-set":
                counts.get(a[1]).setCount(Integer.parseInt(a[2]));
                return "OK";
            case "count-add": {
                SharedCount c = counts.get(a[1]);
                int delta = Integer.parseInt(a[2]);
                for (int i = Integer.parseInt(a[3]); i > 0; i--) {
                    while (true) {
                        VersionedValue<Integer> v = c.getVersionedValue();
                        if (c.trySetCount(v, v.getValue() + delta)) {
                            break;
                        }
                    }
                }
                return "OK";
            }
            case "count-await": {
                SharedCount c = counts.get(a[1]);
                Set<Integer> seen = heard.get(a[1]);
                int want = Integer.parseInt(a[2]);
                long deadline = System.currentTimeMillis() + Long.parseLong(a[3]);
                synchronized (seen) {
                    while (!seen.contains(want) && c.getCount() != want) {
                        long left = deadline - System.currentTimeMillis();
                        if (left <= 0) {
                            return "TIMEOUT";
                        }
                        seen.wait(left);
                    }
                }
                return "SEEN";
            }
            case "count-close":
                counts.remove(a[1]).close();
                return "OK";
            case "along-add": {
                DistributedAtomicLong l = new DistributedAtomicLong(client, a[1], new RetryNTimes(20, 5));
                long delta = Long.parseLong(a[2]);
                for (int i = Integer.parseInt(a[3]); i > 0; i--) {
                    while (!l.add(delta).succeeded()) {
                    }
                }
                return "OK";
            }
            case "along-get": {
                AtomicValue<Long> v = new DistributedAtomicLong(client, a[1], new RetryNTimes(0, 0)).get();
                return v.succeeded() ? Long.toString(v.postValue()) : "ERR get failed";
            }
            case "queue-put":
            case "queue-putmulti":
                return put(client, a);
            case "queue-consume": {
                BlockingQueue<String> got = new LinkedBlockingQueue<>();
                QueueConsumer<String> consumer = new QueueConsumer<String>() {
                    @Override
                    public void consumeMessage(String message) {
                        got.add(message);
                    }

                    @Override
                    public void stateChanged(CuratorFramework f, ConnectionState s) {}
                };
                QueueBuilder<String> qb = QueueBuilder.builder(client, consumer, strings, a[2]);
                if (!a[3].equals("-")) {
                    qb = qb.lockPath(a[3]);
                }
                java.io.Closeable q;
                switch (a[1]) {
                    case "prio": {
                        DistributedPriorityQueue<String> p = qb.buildPriorityQueue(0);
                        p.start();
                        q = p;
                        break;
                    }
                    case "delay": {
                        DistributedDelayQueue<String> d = qb.buildDelayQueue();
                        d.start();
                        q = d;
                        break;
                    }
                    case "id": {
                        DistributedIdQueue<String> d = qb.buildIdQueue();
                        d.start();
                        q = d;
                        break;
                    }
                    default: {
                        DistributedQueue<String> d = qb.buildQueue();
                        d.start();
                        q = d;
                    }
                }
                consumers.put(a[2], q);
                received.put(a[2], got);
                return "OK";
            }
            case "queue-take": {
                String v = received.get(a[1]).poll(Long.parseLong(a[2]), TimeUnit.MILLISECONDS);
                return v != null ? v : "TIMEOUT";
            }
            case "queue-stop":
                consumers.remove(a[1]).close();
                return "OK";
            case "squeue-offer":
                new SimpleDistributedQueue(client, a[1]).offer(a[2].getBytes(StandardCharsets.UTF_8));
                return "OK";
            case "squeue-poll": {
                SimpleDistributedQueue q = new SimpleDistributedQueue(client, a[1]);
                long ms = Long.parseLong(a[2]);
                return text(ms > 0 ? q.poll(ms, TimeUnit.MILLISECONDS) : q.poll());
            }
            case "squeue-peek":
                return text(new SimpleDistributedQueue(client, a[1]).peek());
            case "squeue-take":
                return text(new SimpleDistributedQueue(client, a[1]).take());
            default:
                return null;
        }
    }

    static String text(byte[] b) {
        return b == null ? "EMPTY" : new String(b, StandardCharsets.UTF_8);
    }

    static boolean await(Future<?> f, String ms) throws Exception {
        try {
            f.get(Long.parseLong(ms), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        }
    }

    static MultiItem<String> multi(String csv) {
        java.util.Iterator<String> it = Arrays.asList(csv.split(",")).iterator();
        return () -> it.hasNext() ? it.next() : null;
    }

    /** queue-put / queue-putmulti KIND PATH VALUE(S) [ARG], through a producer-only queue per path. */
    static String put(CuratorFramework client, String[] a) throws Exception {
        boolean many = a[0].equals("queue-putmulti");
        String kind = a[1], path = a[2], value = a[3];
        Object q = producers.get(path);
        if (q == null) {
            QueueBuilder<String> qb = QueueBuilder.builder(client, null, strings, path).putInBackground(false);
            switch (kind) {
                case "prio":
                    q = qb.buildPriorityQueue(0);
                    ((DistributedPriorityQueue<String>) q).start();
                    break;
                case "delay":
                    q = qb.buildDelayQueue();
                    ((DistributedDelayQueue<String>) q).start();
                    break;
                case "id":
                    q = qb.buildIdQueue();
                    ((DistributedIdQueue<String>) q).start();
                    break;
                default:
                    q = qb.buildQueue();
                    ((DistributedQueue<String>) q).start();
            }
            producers.put(path, q);
        }
        switch (kind) {
            case "prio": {
                DistributedPriorityQueue<String> p = (DistributedPriorityQueue<String>) q;
                int prio = Integer.parseInt(a[4]);
                if (many) {
                    p.putMulti(multi(value), prio);
                } else {
                    p.put(value, prio);
                }
                break;
            }
            case "delay": {
                DistributedDelayQueue<String> d = (DistributedDelayQueue<String>) q;
                long until = System.currentTimeMillis() + Long.parseLong(a[4]);
                if (many) {
                    d.putMulti(multi(value), until);
                } else {
                    d.put(value, until);
                }
                break;
            }
            case "id":
                ((DistributedIdQueue<String>) q).put(value, a[4]);
                break;
            default: {
                DistributedQueue<String> d = (DistributedQueue<String>) q;
                if (many) {
                    d.putMulti(multi(value));
                } else {
                    d.put(value);
                }
            }
        }
        return "OK";
    }
}
