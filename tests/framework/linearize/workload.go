package linearize

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Workload is sessions doing a random mix of linearizable reads and
// writes on a few znodes, recorded for the checker. A request that ends
// in a connection loss is recorded as unknown, and the session goes on
// after a pause (its Conn reconnects); any other error but a definite
// answer (NoNode, NodeExists, BadVersion) stops the session and fails
// the test. Callers: the ensemble tests of cmd/zkgo and tests/deploy.
type Workload struct {
	// Clients is the number of sessions; a test's own sessions record
	// under client ids from Clients on.
	Clients  int
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	answers  atomic.Int64 // operations with a definite outcome

	mu       sync.Mutex // guards failures
	failures []error
}

// StartWorkload starts clients sessions recording into rec as clients 0
// to clients-1, each connected to its own random order of servers and
// with its own generator seeded from rng, with opts added to the
// connection's options (a dialer, say). They stop at Finish, or when the
// test ends.
func StartWorkload(ctx context.Context, t testing.TB, rec *Recorder, rng *rand.Rand, servers []string, clients int, keys []string, opts ...zk.Option) *Workload {
	w := &Workload{Clients: clients, stop: make(chan struct{})}
	for id := range clients {
		order := make([]string, len(servers))
		for i, j := range rng.Perm(len(servers)) {
			order[i] = servers[j]
		}
		crng := rand.New(rand.NewPCG(rng.Uint64(), uint64(id)))
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if err := w.run(ctx, rec, id, order, crng, keys, opts); err != nil {
				w.mu.Lock()
				w.failures = append(w.failures, fmt.Errorf("client %d: %w", id, err))
				w.mu.Unlock()
			}
		}()
	}
	t.Cleanup(w.halt)
	return w
}

func (w *Workload) halt() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// run is one session's loop; it returns nil when stopped.
func (w *Workload) run(ctx context.Context, rec *Recorder, id int, servers []string, rng *rand.Rand, keys []string, opts []zk.Option) error {
	conn, err := zk.Connect(ctx, servers, append([]zk.Option{zk.WithHostShuffle(false), zk.WithSessionTimeout(10 * time.Second)}, opts...)...)
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
		var out Output
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
		if out.Status == OK {
			seen[key] = out.Version
		}
		switch {
		case out.Status != Unknown:
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

// WaitOps waits until the sessions have had n more operations answered,
// failing the test if one failed or ctx ends first.
func (w *Workload) WaitOps(ctx context.Context, t testing.TB, n int64, what string) {
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

// Finish stops the sessions and fails the test if one failed.
func (w *Workload) Finish(t testing.TB) {
	t.Helper()
	w.halt()
	if len(w.failures) > 0 {
		t.Fatalf("sessions failed: %v", w.failures)
	}
}
