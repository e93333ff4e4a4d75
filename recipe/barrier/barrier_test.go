package barrier

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

type env = recipetest.Env

// waitChildren waits (with a children watch) until path has n children
// that keep reports true for.
func waitChildren(t *testing.T, c *zk.Conn, path string, n int, keep func(string) bool) []string {
	t.Helper()
	ctx := recipetest.Ctx(t)
	for {
		ch, _, ev, err := c.ChildrenW(ctx, path)
		if errors.Is(err, zk.ErrNoNode) {
			var st *zk.Stat
			st, ev, err = c.ExistsW(ctx, path)
			if err == nil && st != nil {
				// Created since the listing: its data watch would
				// never fire for a child; list again.
				continue
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, name := range ch {
			if keep == nil || keep(name) {
				kept = append(kept, name)
			}
		}
		if len(kept) == n {
			return kept
		}
		select {
		case <-ev:
		case <-ctx.Done():
			t.Fatalf("%s never had %d children (have %v)", path, n, ch)
		}
	}
}

// waitWatches waits until the connections of nets have sent want reads
// that leave a watch, then makes a round trip on each of conns, after
// which the server has registered them.
func waitWatches(t *testing.T, nets []*recipetest.Net, conns []*zk.Conn, want int64) {
	t.Helper()
	ctx := recipetest.Ctx(t)
	for _, nw := range nets {
		for nw.WatchReads() < want {
			select {
			case <-ctx.Done():
				t.Fatal("a waiter never set its watch")
			default:
			}
			waitTick()
		}
	}
	for _, c := range conns {
		if _, err := c.Exists(ctx, "/"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBarrier(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/a/b/barrier"
		admin := New(e.Connect(t), path)
		if err := admin.Wait(ctx); err != nil {
			t.Fatalf("Wait on a barrier that is not up: %v", err)
		}
		if err := admin.Remove(ctx); err != nil {
			t.Fatalf("Remove of a barrier that is not up: %v", err)
		}
		for range 2 { // setting twice is not an error
			if err := admin.Set(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if up, err := admin.IsSet(ctx); !up || err != nil {
			t.Fatalf("IsSet after Set: %v %v", up, err)
		}

		// Many sessions wait; none passes before the barrier is removed.
		const waiters = 8
		var removed atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, waiters)
		var nets []*recipetest.Net
		var conns []*zk.Conn
		for range waiters {
			nw := &recipetest.Net{}
			c := e.Connect(t, nw.Dialer())
			nets, conns = append(nets, nw), append(conns, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := New(c, path).Wait(ctx)
				if err == nil && !removed.Load() {
					err = errors.New("Wait returned while the barrier was up")
				}
				errs <- err
			}()
		}
		waitWatches(t, nets, conns, 1)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := New(e.Connect(t), path).Wait(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Wait: %v", err)
		}
		removed.Store(true)
		if err := admin.Remove(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if up, err := admin.IsSet(ctx); up || err != nil {
			t.Fatalf("IsSet after Remove: %v %v", up, err)
		}
	})
}

// TestBarrierWaitSession: a waiter rides out a cut connection (its watch
// is re-registered) and stops with the session's error when the session
// expires.
func TestBarrierWaitSession(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/barrier"
		admin := New(e.Connect(t), path)
		if err := admin.Set(ctx); err != nil {
			t.Fatal(err)
		}
		nw := &recipetest.Net{}
		c := e.Connect(t, nw.Dialer())
		done := make(chan error, 1)
		go func() { done <- New(c, path).Wait(ctx) }()
		waitWatches(t, []*recipetest.Net{nw}, []*zk.Conn{c}, 1)
		states, stop := c.NotifyState()
		defer stop()
		nw.Cut()
		recipetest.WaitState(t, states, zk.StateReconnected)
		if err := admin.Remove(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("Wait across a reconnection: %v", err)
		}

		if err := admin.Set(ctx); err != nil {
			t.Fatal(err)
		}
		nw2 := &recipetest.Net{}
		c2 := e.Connect(t, nw2.Dialer())
		go func() { done <- New(c2, path).Wait(ctx) }()
		waitWatches(t, []*recipetest.Net{nw2}, []*zk.Conn{c2}, 1)
		nw2.Expire(t, e.Addr, c2)
		if err := <-done; !errors.Is(err, zk.ErrSessionExpired) {
			t.Fatalf("Wait whose session expired: %v", err)
		}
		if up, err := admin.IsSet(ctx); !up || err != nil {
			t.Fatalf("the barrier did not outlive the waiter's session: %v %v", up, err)
		}
	})
}
