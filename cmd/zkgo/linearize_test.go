package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/linearize"
	"github.com/zkgo/zkgo/zk"
)

var linSeed = flag.Uint64("lin.seed", 0, "the seed of the tests that check linearizability (TestLinearizableUnderKills, TestRollingReplacement): the members killed, the sessions' connection orders and operations (0: a new one, logged); the timing is not replayed")

// linRand returns the generator of a linearizability test, seeded by
// -lin.seed or at random, and logs the seed.
func linRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *linSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -lin.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// TestLinearizableUnderKills: three zoo.cfg processes; six clients, each
// connected with its own order of the members, read (sync, then getData)
// and write (setData, unconditional or on the version last seen; create)
// five znodes at random, while members are killed with SIGKILL and
// started again one at a time — the leader, a follower, the leader again,
// each started again once the other two have answered operations without
// it — and then every member in turn in a rolling restart. The clients see
// no error but connection losses, and the recorded history, with every
// request that ended in a connection loss taken as possibly done, is
// linearizable (internal/linearize). A last session reads every znode at
// the end, so an acknowledged write lost late shows too.
func TestLinearizableUnderKills(t *testing.T) {
	rng := linRand(t)

	const n = 3
	// A session timeout the clients get (the default maximum is 20
	// ticks, 2 s here): a kill must cost them connection losses only.
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nsnapCount=500\n")
	var servers []string
	for _, l := range lines {
		_, client, _ := strings.Cut(l, ";")
		servers = append(servers, client)
	}
	m := newMemberProcs(t, cfgs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m.startHealthy(ctx, servers, "/lin")

	keys := make([]string, 5)
	for i := range keys {
		keys[i] = fmt.Sprintf("/lin/k%d", i)
	}
	rec := linearize.NewRecorder()
	w := startLinWorkload(ctx, t, rec, rng, servers, 6, keys)
	// Between steps the clients have this many operations answered, and
	// a random number more, so kills fall at different points.
	const progress = 100
	steps := func() int64 { return progress + rng.Int64N(progress) }
	w.waitOps(ctx, t, steps(), "starting")

	leader := func() int {
		for i := range n {
			if mntrKey(ctx, m.procs[i].addr, "zk_server_state") == "leader" {
				return i
			}
		}
		return rng.IntN(n)
	}
	restart := func(i int, what string) {
		t.Helper()
		m.procs[i].kill() // returns once the process is gone: its data directory is free
		w.waitOps(ctx, t, steps(), what+", without it")
		m.start(i)
		waitHealthy(ctx, t, servers, what)
		w.waitOps(ctx, t, steps(), what)
	}
	for k := range 3 {
		victim := leader()
		if k == 1 { // a follower
			victim = (victim + 1 + rng.IntN(n-1)) % n
		}
		restart(victim, fmt.Sprintf("kill %d (member %d)", k+1, victim+1))
	}
	for _, i := range rng.Perm(n) {
		restart(i, fmt.Sprintf("rolling restart: member %d", i+1))
	}
	w.finish(t)

	final, err := zk.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	defer final.Close()
	fc := rec.Client(w.clients, final)
	for _, k := range keys {
		if err := retryLoss(ctx, func() error { _, err := fc.Get(ctx, k); return err }); err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("final read of %s: %v", k, err)
		}
	}

	start := time.Now()
	linearize.Require(t, rec.History(), time.Minute)
	t.Logf("%+v: linearizable (checked in %v)", rec.Counts(), time.Since(start).Round(time.Millisecond))
}

// linWorkload is sessions doing a random mix of linearizable reads and
// writes on a few znodes, recorded for the linearizability checker. A
// request that ends in a connection loss is recorded as unknown, and the
// session goes on after a pause (its Conn reconnects); any other error
// but a definite answer (NoNode, NodeExists, BadVersion) stops the session
// and fails the test.
type linWorkload struct {
	clients  int
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	answers  atomic.Int64 // operations with a definite outcome

	mu       sync.Mutex // guards failures
	failures []error
}

// startLinWorkload starts clients sessions recording into rec as clients
// 0 to clients-1, each with its own random order of servers and its own
// generator seeded from rng. They stop at finish, or when the test ends.
func startLinWorkload(ctx context.Context, t *testing.T, rec *linearize.Recorder, rng *rand.Rand, servers []string, clients int, keys []string) *linWorkload {
	w := &linWorkload{clients: clients, stop: make(chan struct{})}
	for id := range clients {
		order := make([]string, len(servers))
		for i, j := range rng.Perm(len(servers)) {
			order[i] = servers[j]
		}
		crng := rand.New(rand.NewPCG(rng.Uint64(), uint64(id)))
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if err := w.run(ctx, rec, id, order, crng, keys); err != nil {
				w.mu.Lock()
				w.failures = append(w.failures, fmt.Errorf("client %d: %w", id, err))
				w.mu.Unlock()
			}
		}()
	}
	t.Cleanup(w.halt)
	return w
}

func (w *linWorkload) halt() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// run is one session's loop; it returns nil when stopped.
func (w *linWorkload) run(ctx context.Context, rec *linearize.Recorder, id int, servers []string, rng *rand.Rand, keys []string) error {
	conn, err := zk.Connect(ctx, servers, zk.WithHostShuffle(false), zk.WithSessionTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer conn.Close()
	c := rec.Client(id, conn)
	seen := make(map[string]int32) // the last version of each znode this session saw
	var backoff time.Duration      // > 0 after a connection loss
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return nil
		default:
		}
		key := keys[rng.IntN(len(keys))]
		data := fmt.Sprintf("c%d-%d", id, i) // every write's data is unique
		var out linearize.Output
		switch p := rng.IntN(100); {
		case p < 45 || backoff > 0:
			// After a connection loss only reads, until one is
			// answered: a write whose outcome is unknown stays open to
			// the end of the history, and many of them on one znode
			// make the check exponential.
			out, err = c.Get(ctx, key)
		case p < 90:
			version := int32(-1)
			if v, ok := seen[key]; ok && rng.IntN(2) == 0 {
				version = v
			}
			out, err = c.Set(ctx, key, data, version)
		default:
			out, err = c.Create(ctx, key, data)
		}
		if out.Status == linearize.OK {
			seen[key] = out.Version
		}
		switch {
		case out.Status != linearize.Unknown:
			w.answers.Add(1)
			backoff = 0
		case !errors.Is(err, zk.ErrConnectionLoss):
			return err
		default:
			// A growing pause, as Curator's retry policies make: until
			// the followers notice that the leader died, what they
			// forward is lost as fast as it is sent.
			backoff = min(max(2*backoff, 10*time.Millisecond), 200*time.Millisecond)
			select {
			case <-time.After(backoff/2 + time.Duration(rng.Int64N(int64(backoff/2)))):
			case <-w.stop:
			}
		}
	}
}

// waitOps waits until the sessions have had n more operations answered,
// failing the test if one failed or ctx ends first.
func (w *linWorkload) waitOps(ctx context.Context, t *testing.T, n int64, what string) {
	t.Helper()
	target := w.answers.Load() + n
	for w.answers.Load() < target {
		w.mu.Lock()
		failures := w.failures
		w.mu.Unlock()
		if len(failures) > 0 {
			t.Fatalf("sessions failed (%s): %v", what, failures)
		}
		if ctx.Err() != nil {
			t.Fatalf("operations stopped (%s): %d answered", what, w.answers.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finish stops the sessions and fails the test if one failed.
func (w *linWorkload) finish(t *testing.T) {
	t.Helper()
	w.halt()
	if len(w.failures) > 0 {
		t.Fatalf("sessions failed: %v", w.failures)
	}
}
