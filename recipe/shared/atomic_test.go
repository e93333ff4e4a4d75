package shared

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

func TestAtomicLong(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/a/long"
		admin := e.Connect(t)
		l := NewAtomicLong(e.Connect(t), path)
		type step struct {
			name      string
			do        func() (Result[int64], error)
			ok        bool
			pre, post int64
		}
		steps := []step{
			{"get missing", func() (Result[int64], error) { return l.Get(ctx) }, true, 0, 0},
			{"increment creates", func() (Result[int64], error) { return l.Increment(ctx) }, true, 0, 1},
			{"add", func() (Result[int64], error) { return l.Add(ctx, 41) }, true, 1, 42},
			{"subtract", func() (Result[int64], error) { return l.Subtract(ctx, 50) }, true, 42, -8},
			{"decrement", func() (Result[int64], error) { return l.Decrement(ctx) }, true, -8, -9},
			{"cas mismatch", func() (Result[int64], error) { return l.CompareAndSet(ctx, 5, 6) }, false, -9, 0},
			{"cas match", func() (Result[int64], error) { return l.CompareAndSet(ctx, -9, 7) }, true, -9, 7},
			{"trySet", func() (Result[int64], error) { return l.TrySet(ctx, 1<<40) }, true, 7, 1 << 40},
			{"get", func() (Result[int64], error) { return l.Get(ctx) }, true, 1 << 40, 1 << 40},
		}
		for _, tt := range steps {
			r, err := tt.do()
			if err != nil || r.Succeeded != tt.ok || r.Pre != tt.pre || r.Post != tt.post {
				t.Fatalf("%s: %+v %v, want ok %v pre %d post %d", tt.name, r, err, tt.ok, tt.pre, tt.post)
			}
		}
		data, _, err := admin.Get(ctx, path)
		if err != nil || !bytes.Equal(data, []byte{0, 0, 1, 0, 0, 0, 0, 0}) {
			t.Fatalf("stored as %x %v, want 8 bytes big-endian", data, err)
		}
		if ok, err := l.Initialize(ctx, 3); ok || err != nil {
			t.Fatalf("Initialize of an existing node: %v %v", ok, err)
		}
		if err := l.ForceSet(ctx, -1); err != nil {
			t.Fatal(err)
		}
		if r, _ := l.Get(ctx); r.Post != -1 {
			t.Fatalf("after ForceSet: %+v", r)
		}
		// Another node: Initialize, ForceSet creating it, a missing node
		// in compareAndSet, corrupt data.
		l2 := NewAtomicLong(admin, e.Root+"/b/long")
		if r, err := l2.CompareAndSet(ctx, 0, 1); r.Succeeded || err != nil {
			t.Fatalf("CompareAndSet of a missing node: %+v %v", r, err)
		}
		if ok, err := l2.Initialize(ctx, 3); !ok || err != nil {
			t.Fatalf("Initialize: %v %v", ok, err)
		}
		if err := NewAtomicLong(admin, e.Root+"/c/long").ForceSet(ctx, 5); err != nil {
			t.Fatalf("ForceSet of a missing node: %v", err)
		}
		if _, err := admin.Set(ctx, e.Root+"/b/long", []byte{1, 2, 3}, zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if _, err := l2.Increment(ctx); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Increment of corrupt data: %v", err)
		}
		if _, err := admin.Set(ctx, e.Root+"/b/long", nil, zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if r, err := l2.Increment(ctx); err != nil || r.Pre != 0 || r.Post != 1 {
			t.Fatalf("Increment of empty data: %+v %v", r, err)
		}
	})
}

// TestAtomicLongContention: sessions add random amounts to one AtomicLong,
// repeating each add until it succeeds; the total is exact, and the
// successful adds form one chain (each Pre is some other add's Post).
// Optimistic only, and promoted to the mutex after one optimistic try.
func TestAtomicLongContention(t *testing.T) {
	tests := []struct {
		name string
		opts func(root string) []Option
	}{
		{"optimistic", func(string) []Option { return nil }},
		{"promoted", func(root string) []Option {
			return []Option{WithRetry(zk.NTimes{}), WithPromotion(root+"/promo-lock", zk.NTimes{N: 3, Delay: time.Millisecond}, 0)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recipetest.ForEach(t, func(t *testing.T, e *env) {
				rng := testRand(t)
				ctx := recipetest.Ctx(t)
				path := e.Root + "/counter"
				const workers, rounds = 6, 20
				var total int64
				var mu sync.Mutex // guards pairs and promoted
				var pairs [][2]int64
				promoted := 0
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for range workers {
					l := NewAtomicLong(e.Connect(t), path, tt.opts(e.Root)...)
					deltas := make([]int64, rounds)
					for i := range deltas {
						deltas[i] = 1 + rng.Int64N(5)
						total += deltas[i]
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, d := range deltas {
							for {
								r, err := l.Add(ctx, d)
								if err != nil {
									errs <- err
									return
								}
								if r.Succeeded {
									if r.Post-r.Pre != d {
										errs <- fmt.Errorf("add %d: %+v", d, r)
									}
									mu.Lock()
									pairs = append(pairs, [2]int64{r.Pre, r.Post})
									if r.Stats.PromotedTries > 0 {
										promoted++
									}
									mu.Unlock()
									break
								}
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				r, err := NewAtomicLong(e.Connect(t), path).Get(ctx)
				if err != nil || r.Post != total {
					t.Fatalf("total %+v %v, want %d", r, err, total)
				}
				slices.SortFunc(pairs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
				for i, p := range pairs {
					if (i == 0 && p[0] != 0) || (i > 0 && p[0] != pairs[i-1][1]) {
						t.Fatalf("add %d starts at %d, not where the previous ended (%v)", i, p[0], pairs[max(i-1, 0)])
					}
				}
				t.Logf("%d of %d successful adds were promoted", promoted, len(pairs))
				if tt.name == "promoted" {
					ch, _, err := e.Connect(t).Children(ctx, e.Root+"/promo-lock")
					if err != nil && !errors.Is(err, zk.ErrNoNode) {
						t.Fatal(err)
					}
					if len(ch) != 0 {
						t.Fatalf("lock nodes left: %v", ch)
					}
				}
			})
		})
	}
}

// TestAtomicValueBytes: the byte-level operations and Update's error.
func TestAtomicValueBytes(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		a := NewAtomicValue(e.Connect(t), e.Root+"/bytes", WithRetry(zk.NTimes{}))
		if r, err := a.Get(ctx); !r.Succeeded || r.Pre != nil || err != nil {
			t.Fatalf("Get of a missing node: %+v %v", r, err)
		}
		if r, err := a.TrySet(ctx, []byte("a")); !r.Succeeded || string(r.Post) != "a" || err != nil {
			t.Fatalf("TrySet creating: %+v %v", r, err)
		}
		if r, err := a.CompareAndSet(ctx, []byte("a"), []byte("b")); !r.Succeeded || string(r.Pre) != "a" || err != nil {
			t.Fatalf("CompareAndSet: %+v %v", r, err)
		}
		boom := errors.New("boom")
		if _, err := a.Update(ctx, func([]byte) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
			t.Fatalf("Update's error: %v", err)
		}
		r, err := a.Update(ctx, func(cur []byte) ([]byte, error) { return append(bytes.Clone(cur), 'c'), nil })
		if err != nil || string(r.Pre) != "b" || string(r.Post) != "bc" || r.Stats.OptimisticTries != 1 {
			t.Fatalf("Update: %+v %v", r, err)
		}
	})
}
