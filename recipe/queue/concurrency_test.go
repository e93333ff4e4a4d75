package queue

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

var seedFlag = flag.Uint64("queue.seed", 0, "seed of the randomized queue tests (0: random)")

func testRand(t *testing.T) (*rand.Rand, uint64) {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -queue.seed %d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0)), seed
}

// tally counts how often each value was acked, and signals when a number
// of acks is reached.
type tally struct {
	mu     sync.Mutex // guards counts, total and waits
	counts map[string]int
	total  int
	waits  map[int]chan struct{}
}

func newTally() *tally { return &tally{counts: map[string]int{}, waits: map[int]chan struct{}{}} }

func (t *tally) add(v string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[v]++
	t.total++
	if ch, ok := t.waits[t.total]; ok {
		close(ch)
		delete(t.waits, t.total)
	}
}

// reached returns a channel closed once n acks were counted.
func (t *tally) reached(n int) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := make(chan struct{})
	if t.total >= n {
		close(ch)
	} else {
		t.waits[n] = ch
	}
	return ch
}

// check fails unless every value of want was counted exactly once and
// nothing else was.
func (t *tally) check(tb testing.TB, want []string, seed uint64) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, v := range want {
		if n := t.counts[v]; n != 1 {
			tb.Errorf("value %q acked %d times (seed %d)", v, n, seed)
		}
	}
	if t.total != len(want) {
		tb.Errorf("%d acks, want %d (seed %d)", t.total, len(want), seed)
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-recipetest.Ctx(t).Done():
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestExactlyOnce: producers put (single and multi items, chosen at
// random) while consumers take, with and without a lock path; every value
// is delivered exactly once.
func TestExactlyOnce(t *testing.T) {
	for _, lockSafe := range []bool{false, true} {
		t.Run(fmt.Sprintf("lockSafe=%v", lockSafe), func(t *testing.T) {
			recipetest.ForEach(t, func(t *testing.T, e *env) {
				rng, seed := testRand(t)
				ctx, cancel := context.WithCancel(recipetest.Ctx(t))
				defer cancel()
				path := e.Root + "/once"
				var opts []Option
				if lockSafe {
					opts = append(opts, WithLockPath(e.Root+"/once-locks"))
				}
				const producers, perProducer, consumers = 3, 30, 4
				var want []string
				batches := make([][][][]byte, producers)
				for p := range producers {
					for i := 0; i < perProducer; {
						n := 1 + rng.IntN(3)
						var batch [][]byte
						for j := 0; j < n && i < perProducer; j, i = j+1, i+1 {
							v := fmt.Sprintf("p%d-%d", p, i)
							want = append(want, v)
							batch = append(batch, []byte(v))
						}
						batches[p] = append(batches[p], batch)
					}
				}
				got := newTally()
				all := got.reached(len(want))
				var wg sync.WaitGroup
				errs := make(chan error, producers+consumers)
				for c := range consumers {
					q := New(e.Connect(t), path, opts...)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							m, err := q.Take(ctx)
							if err != nil {
								if ctx.Err() == nil {
									errs <- fmt.Errorf("consumer %d: %w", c, err)
								}
								return
							}
							if err := m.Ack(ctx); err != nil {
								errs <- fmt.Errorf("consumer %d ack: %w", c, err)
								return
							}
							for _, v := range m.Values {
								got.add(string(v))
							}
						}
					}()
				}
				for p := range producers {
					q := New(e.Connect(t), path, opts...)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, b := range batches[p] {
							var err error
							if len(b) == 1 {
								err = q.Put(ctx, b[0])
							} else {
								err = q.PutMulti(ctx, b)
							}
							if err != nil {
								errs <- fmt.Errorf("producer %d: %w", p, err)
								return
							}
						}
					}()
				}
				select {
				case <-all:
				case err := <-errs:
					t.Fatal(err)
				case <-ctx.Done():
					t.Fatal("not every value arrived")
				}
				cancel()
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				got.check(t, want, seed)
			})
		})
	}
}

// TestLockSafeConsumerDies: a consumer's session ends while it holds an
// item; the item is acked exactly once, by another consumer, and the dead
// consumer's Ack fails.
func TestLockSafeConsumerDies(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		rng, seed := testRand(t)
		ctx, cancel := context.WithCancel(recipetest.Ctx(t))
		defer cancel()
		path, locks := e.Root+"/dies", e.Root+"/dies-locks"
		const items, consumers = 30, 3
		producer := New(e.Connect(t), path)
		var want []string
		for i := range items {
			v := fmt.Sprintf("item-%d", i)
			want = append(want, v)
			if err := producer.Put(ctx, []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		got := newTally()
		// The victim acks a few items, then takes one and dies with it.
		nw := &recipetest.Net{}
		vc := e.Connect(t, nw.Dialer())
		victim := New(vc, path, WithLockPath(locks), WithPolicy(recipe.Session))
		before := rng.IntN(5)
		for range before {
			m := take(t, victim)
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			got.add(values(m))
		}
		held := take(t, victim)
		t.Logf("the victim acked %d items and dies holding %s (%s)", before, values(held), held.Name)

		var wg sync.WaitGroup
		errs := make(chan error, consumers)
		for c := range consumers {
			q := New(e.Connect(t), path, WithLockPath(locks))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					m, err := q.Take(ctx)
					if err != nil {
						if ctx.Err() == nil {
							errs <- fmt.Errorf("consumer %d: %w", c, err)
						}
						return
					}
					if err := m.Ack(ctx); err != nil {
						errs <- fmt.Errorf("consumer %d ack: %w", c, err)
						return
					}
					got.add(values(m))
				}
			}()
		}
		wait(t, got.reached(items-1), "every item but the held one")
		nw.Expire(t, e.Addr, vc)
		<-held.Grant().Done()
		wait(t, got.reached(items), "the held item, after its consumer died")
		if err := held.Ack(ctx); !errors.Is(err, zk.ErrSessionExpired) {
			t.Fatalf("the dead consumer's Ack: %v", err)
		}
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		got.check(t, want, seed)
	})
}

// TestConsumeErrorModes: Consume's function fails at random; with Requeue
// every value is eventually processed successfully exactly once, with
// Delete every value is processed exactly once, failed or not.
func TestConsumeErrorModes(t *testing.T) {
	for _, mode := range []ErrorMode{Requeue, Delete} {
		t.Run(fmt.Sprintf("mode=%d", mode), func(t *testing.T) {
			recipetest.ForEach(t, func(t *testing.T, e *env) {
				rng, seed := testRand(t)
				ctx, cancel := context.WithCancel(recipetest.Ctx(t))
				defer cancel()
				path := e.Root + "/modes"
				opts := []Option{WithLockPath(e.Root + "/modes-locks"), WithErrorMode(mode)}
				const items, consumers = 24, 3
				var want []string
				fail := map[string]bool{}
				q := New(e.Connect(t), path, opts...)
				for i := range items {
					v := fmt.Sprintf("v%d", i)
					want = append(want, v)
					fail[v] = rng.IntN(3) == 0
					if err := q.Put(ctx, []byte(v)); err != nil {
						t.Fatal(err)
					}
				}
				var mu sync.Mutex // guards failed
				failed := map[string]bool{}
				got := newTally()
				done := make(chan error, consumers)
				for range consumers {
					cq := New(e.Connect(t), path, opts...)
					go func() {
						done <- cq.Consume(ctx, func(_ context.Context, b []byte) error {
							v := string(b)
							mu.Lock()
							first := fail[v] && !failed[v]
							failed[v] = failed[v] || first
							mu.Unlock()
							if first {
								if mode == Delete {
									got.add(v)
								}
								return errors.New("first attempt fails")
							}
							got.add(v)
							return nil
						})
					}()
				}
				wait(t, got.reached(items), "every value")
				// Nothing is left once the last acks are through.
				waitEmpty(t, e.Connect(t), path)
				cancel()
				for range consumers {
					if err := <-done; !errors.Is(err, context.Canceled) {
						t.Errorf("Consume returned %v", err)
					}
				}
				got.check(t, want, seed)
			})
		})
	}
}

// waitEmpty waits (with a children watch) until path has no items.
func waitEmpty(t *testing.T, c *zk.Conn, path string) {
	t.Helper()
	ctx := recipetest.Ctx(t)
	for {
		ch, _, ev, err := c.ChildrenW(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(sortItems(fifo, ch)) == 0 {
			return
		}
		select {
		case <-ev:
		case <-ctx.Done():
			t.Fatalf("items left: %v", ch)
		}
	}
}
