package cache

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

var (
	faultSeed  = flag.Uint64("cache.seed", 0, "seed of TestFaults (0: a random one, printed)")
	faultIters = flag.Int("cache.iters", 40, "iterations of TestFaults per server and watch mode")
)

// followed is a cache under TestFaults, with what its events are
// checked against.
type followed struct {
	name   string
	evs    <-chan Event
	store  *store
	eng    *engine
	root   string
	depth  int
	seen   []string // every event, described (shown when the cache fails)
	ready  bool     // Initialized was seen
	last   int64    // the Zxid of the last node event
	events int
}

// TestFaults drives four caches (a TreeCache, a TreeCache of depth 1, a
// ChildrenCache and a NodeCache) through random changes made by other
// sessions — creates, sets, deletes, multis, ephemeral nodes whose session
// ends — while their connections are cut (and kept down for a while),
// their sessions expired (they rebuild with WithRedial) and, on zkgo, the
// server restarted. At the end of every iteration the writers stop, a
// marker node is written, and once each cache has reported the marker it
// must equal a fresh read of its tree (with one-shot watches: must come to
// equal it, event by event). Node events must come in zxid order
// (persistent watches) and no cache may stop. The random choices come from
// -cache.seed, which a failure prints.
func TestFaults(t *testing.T) {
	seed := *faultSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay the choices with -cache.seed=%d)", seed, seed)
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				fe := &faultEnv{t: t, e: e, root: fmt.Sprintf("%s-f%s", e.Root, m.name), rng: rand.New(rand.NewPCG(seed, uint64(len(m.name))))}
				if e.Name == "zkgo" {
					// A cluster of one member can be stopped and started
					// again with its data and its address.
					cl := zktest.StartCluster(t, 1)
					fe.addr = cl.Addr(0)
					fe.restart = func() {
						cl.Stop(0)
						cl.Restart(0)
					}
				} else {
					fe.addr = e.Addr
				}
				fe.run(m, seed)
			})
		}
	})
}

type faultEnv struct {
	t       *testing.T
	e       *env
	addr    string
	root    string
	rng     *rand.Rand
	restart func() // nil: the server cannot be restarted
	net     recipetest.Net
	writers [2]*zk.Conn
}

func (f *faultEnv) connect(opts ...zk.Option) *zk.Conn {
	f.t.Helper()
	opts = append([]zk.Option{zk.WithSessionTimeout(6 * time.Second)}, opts...)
	c, err := zk.Connect(recipetest.Ctx(f.t), f.addr, opts...)
	if err != nil {
		f.t.Fatalf("connect: %v", err)
	}
	f.t.Cleanup(func() { c.Close() })
	return c
}

// names is the namespace of the random writes: three levels of a-d.
func (f *faultEnv) randomPath() string {
	p := f.root
	for d := 0; d < 1+f.rng.IntN(3); d++ {
		p += "/" + string(rune('a'+f.rng.IntN(4)))
	}
	return p
}

func (f *faultEnv) run(m mode, seed uint64) {
	t := f.t
	ctx := recipetest.Ctx(t)
	for i := range f.writers {
		f.writers[i] = f.connect()
	}
	w := f.writers[0]
	if err := w.EnsurePath(ctx, f.root+"/a", zk.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	marker := f.root + "/marker"
	create(t, w, marker, "0")

	redial := func(ctx context.Context) (*zk.Conn, error) {
		return zk.Connect(ctx, f.addr, zk.WithSessionTimeout(6*time.Second), f.net.Dialer())
	}
	opts := append([]Option{WithRedial(redial)}, m.opts...)
	var caches []*followed
	add := func(name string, eng *engine, depth int) {
		c := &followed{name: name, eng: eng, store: eng.store, root: eng.root, depth: depth, evs: eng.eventsChan()}
		if err := eng.startChecked(ctx); err != nil {
			t.Fatalf("%s: start: %v", name, err)
		}
		t.Cleanup(func() { eng.close() })
		caches = append(caches, c)
	}
	add("tree", NewTree(f.connect(f.net.Dialer()), f.root, opts...).e, unlimited)
	add("tree1", NewTree(f.connect(f.net.Dialer()), f.root, append(opts, WithMaxDepth(1))...).e, 1)
	add("children", NewChildren(f.connect(f.net.Dialer()), f.root, opts...).e, 1)
	add("node", NewNode(f.connect(f.net.Dialer()), marker, opts...).e, 0)

	stats := map[string]int{}
	for it := 1; it <= *faultIters; it++ {
		// The writers and a fault, at the same time.
		var wg sync.WaitGroup
		for i := range f.writers {
			ops := f.plan(1 + f.rng.IntN(15))
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.write(ctx, i, ops)
			}()
		}
		fault := f.rng.IntN(10)
		if testing.Verbose() {
			t.Logf("iteration %d: fault %d", it, fault)
		}
		switch {
		case fault < 3:
			stats["cut"]++
			f.net.Cut()
		case fault < 5:
			stats["cut while writing"]++
			f.net.Block(true)
			f.net.Cut()
			wg.Wait()
			f.net.Block(false)
		case fault < 7:
			stats["expiry"]++
			victim := caches[f.rng.IntN(len(caches))]
			f.net.Expire(t, f.addr, victim.eng.currentConn())
		case fault < 8 && f.restart != nil:
			stats["restart"]++
			f.restart()
		default:
			stats["none"]++
		}
		wg.Wait()
		// Quiescent: the marker is the last write; once a cache has
		// shown it, it must equal the tree.
		val := fmt.Sprint(it)
		for {
			_, err := f.writers[0].Set(ctx, marker, []byte(val), -1)
			if err == nil {
				break
			}
			if !errors.Is(err, zk.ErrConnectionLoss) {
				t.Fatalf("seed %d, iteration %d: set marker: %v", seed, it, err)
			}
		}
		for _, c := range caches {
			f.settleOn(c, marker, val, m, seed, it)
		}
	}
	n := 0
	for _, c := range caches {
		n += c.events
	}
	t.Logf("%d iterations, faults %v, %d events", *faultIters, stats, n)
}

// op is one random write.
type op struct {
	kind string
	path string
	data string
}

func (f *faultEnv) plan(n int) []op {
	kinds := []string{"create", "create", "set", "set", "delete", "multi", "ephemeral", "sequential", "session"}
	ops := make([]op, n)
	for i := range ops {
		ops[i] = op{kind: kinds[f.rng.IntN(len(kinds))], path: f.randomPath(), data: fmt.Sprint(f.rng.IntN(1000))}
	}
	return ops
}

// write applies ops with writer i; outcomes do not matter (the caches are
// compared with the tree, not with a model), only progress does.
func (f *faultEnv) write(ctx context.Context, i int, ops []op) {
	for _, o := range ops {
		c := f.writers[i]
		var err error
		switch o.kind {
		case "create":
			_, err = c.Create(ctx, o.path, []byte(o.data), zk.OpenACLUnsafe, zk.ModePersistent)
		case "set":
			_, err = c.Set(ctx, o.path, []byte(o.data), -1)
		case "delete":
			err = c.Delete(ctx, o.path, -1)
		case "multi":
			_, err = c.Multi(ctx, zk.CreateOp(o.path, []byte(o.data), zk.OpenACLUnsafe, zk.ModePersistent),
				zk.SetDataOp(parentOf(o.path), []byte(o.data), -1))
		case "ephemeral":
			_, err = c.Create(ctx, o.path, []byte(o.data), zk.OpenACLUnsafe, zk.ModeEphemeral)
		case "sequential":
			_, err = c.Create(ctx, o.path+"-", []byte(o.data), zk.OpenACLUnsafe, zk.ModePersistentSequential)
		case "session":
			// The writer's session ends: its ephemeral nodes go.
			c.Close()
			f.writers[i] = f.connect()
		}
		if err != nil && !isExpectedWriteErr(err) {
			f.t.Errorf("%s %s: %v", o.kind, o.path, err)
		}
	}
}

func isExpectedWriteErr(err error) bool {
	for _, e := range []error{zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNotEmpty, zk.ErrNoChildrenForEphemerals, zk.ErrConnectionLoss, zk.ErrRuntimeInconsistency} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// settleOn waits until c reports the marker's value val, checking the
// order of its events on the way, then compares it with the tree.
func (f *faultEnv) settleOn(c *followed, marker, val string, m mode, seed uint64, it int) {
	t := f.t
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("seed %d, iteration %d, %s cache: %s", seed, it, c.name, fmt.Sprintf(format, a...))
	}
	take := func(ev Event) {
		t.Helper()
		c.events++
		c.seen = append(c.seen, fmt.Sprintf("it%d %s", it, describe(ev)))
		switch ev.Type {
		case Stopped:
			fail("stopped: %v", ev.Err)
		case Initialized:
			c.ready, c.last = true, ev.Zxid
		case Created, Changed, Deleted:
			if c.ready && m.name == "persistent" && ev.Zxid < c.last {
				fail("%s after an event at zxid %d", describe(ev), c.last)
			}
			c.last = max(c.last, ev.Zxid)
		}
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		var ev Event
		select {
		case ev = <-c.evs:
		case <-timeout.C:
			fail("the marker's value %q was not reported within 30s", val)
		}
		take(ev)
		if (ev.Type == Created || ev.Type == Changed) && ev.Path == marker && string(ev.Data) == val {
			break
		}
	}
	ctx := recipetest.Ctx(t)
	tree, err := readTree(ctx, f.writers[0], c.root, c.depth)
	if err != nil {
		t.Fatal(err)
	}
	for {
		cached, _ := c.store.snapshot()
		d := diffState(cached, tree)
		if d == "" {
			return
		}
		if m.name == "persistent" {
			fail("once the marker was reported, the cache differs from the tree:\n%s", d)
		}
		// One-shot watches: the events that make up the difference may
		// still be on their way.
		select {
		case ev := <-c.evs:
			take(ev)
		case <-timeout.C:
			// What the cache reported of the differing nodes, and which
			// watches the server holds for it on their parents.
			conn := c.eng.currentConn()
			for _, line := range strings.Split(d, "\n") {
				p := strings.SplitN(line, ":", 2)[0]
				for _, s := range c.seen {
					if strings.Contains(s, " "+p+" ") || strings.Contains(s, "Resynced") || strings.Contains(s, "Suspended") || strings.Contains(s, "Lost") {
						t.Logf("event %s", s)
					}
				}
				par := parentOf(p)
				t.Logf("%s: the server's child watch on %s: %v, data watch: %v; tree stat %+v, parent's %+v; Conn last zxid %d",
					p, par, conn.CheckWatches(ctx, par, zk.WatcherChildren), conn.CheckWatches(ctx, par, zk.WatcherData),
					tree[p].Stat, tree[par].Stat, conn.LastZxid())
			}
			dumpTrace(c.eng, "/tmp/cache-trace-"+c.name+".txt")
			fail("the cache does not come to equal the tree:\n%s", strings.TrimSpace(d))
		}
	}
}
