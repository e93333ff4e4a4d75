package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

type env = recipetest.Env

func children(t *testing.T, c *zk.Conn, p string) []string {
	t.Helper()
	ch, _, err := c.Children(recipetest.Ctx(t), p)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return ch
}

// waitQueue waits until path has n children.
func waitQueue(t *testing.T, c *zk.Conn, p string, n int) {
	t.Helper()
	ctx := recipetest.Ctx(t)
	for {
		ch, _, ev, err := c.ChildrenW(ctx, p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		if errors.Is(err, zk.ErrNoNode) {
			_, ev, err = c.ExistsW(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
		} else if len(ch) == n {
			return
		}
		select {
		case <-ev:
		case <-ctx.Done():
			t.Fatalf("queue %s never reached %d nodes (have %v)", p, n, ch)
		}
	}
}

func TestMutexExclusion(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/counter-lock"
		const workers, rounds = 8, 15
		var inside, maxInside atomic.Int32
		counter := 0
		var tokens sync.Map
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			c := e.Connect(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := NewMutex(c, path)
				var last int64
				for i := 0; i < rounds; i++ {
					g, err := m.Lock(ctx)
					if err != nil {
						errs <- err
						return
					}
					if n := inside.Add(1); n > maxInside.Load() {
						maxInside.Store(n)
					}
					if _, dup := tokens.LoadOrStore(g.Token(), true); dup {
						errs <- fmt.Errorf("token %d granted twice", g.Token())
					}
					if g.Token() <= last {
						errs <- fmt.Errorf("token went from %d to %d", last, g.Token())
					}
					last = g.Token()
					v := counter
					counter = v + 1
					inside.Add(-1)
					if err := m.Unlock(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if maxInside.Load() != 1 || counter != workers*rounds {
			t.Fatalf("max holders %d, counter %d (want 1, %d)", maxInside.Load(), counter, workers*rounds)
		}
		c := e.Connect(t)
		if left := children(t, c, path); len(left) != 0 {
			t.Fatalf("nodes left behind: %v", left)
		}
	})
}

func TestMutexReentrantAndTry(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/re"
		a := NewMutex(e.Connect(t), path)
		b := NewMutex(e.Connect(t), path)
		if err := a.Unlock(ctx); !errors.Is(err, recipe.ErrNotHeld) {
			t.Fatalf("unlock of a free mutex: %v", err)
		}
		g1, err := a.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g2, err := a.Lock(ctx)
		if err != nil || g2 != g1 {
			t.Fatalf("reentrant lock: %v %v", g2, err)
		}
		if !strings.Contains(g1.Path(), "/_c_") || !strings.Contains(g1.Path(), "-lock-") {
			t.Fatalf("node name %s is not Curator's", g1.Path())
		}
		if _, ok, err := b.TryLock(ctx); ok || err != nil {
			t.Fatalf("TryLock while held: %v %v", ok, err)
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if !a.IsHeld() {
			t.Fatal("one Unlock of two released the lock")
		}
		if _, ok, _ := b.TryLock(ctx); ok {
			t.Fatal("TryLock succeeded while still held once")
		}
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if g1.Held() || !errors.Is(g1.Err(), recipe.ErrReleased) {
			t.Fatalf("grant after unlock: %v", g1.Err())
		}
		gb, ok, err := b.TryLock(ctx)
		if !ok || err != nil {
			t.Fatalf("TryLock of a free mutex: %v %v", ok, err)
		}
		if gb.Token() <= g1.Token() {
			t.Fatalf("token %d not above %d", gb.Token(), g1.Token())
		}
		ps, err := b.Participants(ctx)
		if err != nil || len(ps) != 1 || ps[0].Path != gb.Path() || !ps[0].Leader {
			t.Fatalf("participants %+v %v", ps, err)
		}
		if n := len(children(t, e.Connect(t), path)); n != 1 {
			t.Fatalf("%d nodes, want 1 (failed TryLocks must clean up)", n)
		}
	})
}

func TestMutexCancelCleansUp(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/cancel"
		obs := e.Connect(t)
		a := NewMutex(e.Connect(t), path)
		if _, err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		b := NewMutex(e.Connect(t), path)
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := b.Lock(cctx); done <- err }()
		waitQueue(t, obs, path, 2)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Lock: %v", err)
		}
		tctx, tcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := b.Lock(tctx)
		tcancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("timed-out Lock: %v", err)
		}
		if ch := children(t, obs, path); len(ch) != 1 || !strings.HasSuffix(a.Grant().Path(), ch[0]) {
			t.Fatalf("after cancel: %v (holder %s)", ch, a.Grant().Path())
		}
	})
}

// TestMutexFIFOAndNoHerd: waiters get the lock in arrival order, and each
// release wakes two of them however long the queue: the next holder, and
// the waiter after it, which lists the queue again while the next holder
// holds (its look-ahead watch).
func TestMutexFIFOAndNoHerd(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/fifo"
		obs := e.Connect(t)
		holder := NewMutex(e.Connect(t), path)
		if _, err := holder.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		const n = 5
		type waiter struct {
			m   *Mutex
			c   *zk.Conn
			net *recipetest.Net
		}
		var ws []waiter
		order := make(chan int, n)
		for i := 0; i < n; i++ {
			nw := &recipetest.Net{}
			c := e.Connect(t, nw.Dialer())
			w := waiter{NewMutex(c, path), c, nw}
			ws = append(ws, w)
			go func() {
				if _, err := w.m.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				order <- i
			}()
			waitQueue(t, obs, path, i+2)
			// The waiter's node is in the queue, but its watches
			// (its own node; its predecessor; behind the first
			// waiter, the node before that) may not be set yet; a
			// release before then would let it go on without a
			// notification.
			watches := int64(3)
			if i == 0 {
				watches = 2
			}
			waitWatchReads(t, c, nw, watches)
		}
		release := func(m *Mutex) {
			if err := m.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		before := make([]int64, n)
		for i, w := range ws {
			before[i] = w.net.Notifications()
		}
		release(holder)
		for want := 0; want < n; want++ {
			got := <-order
			if got != want {
				t.Fatalf("waiter %d got the lock, want %d", got, want)
			}
			// Notifications reach a client before the reply to any
			// later request, so a round trip on each waiter flushes
			// them.
			for _, w := range ws[want:] {
				if _, err := w.c.Exists(ctx, "/"); err != nil {
					t.Fatal(err)
				}
			}
			var woken []int
			for i := want; i < n; i++ {
				if ws[i].net.Notifications() > before[i] {
					woken = append(woken, i)
				}
				before[i] = ws[i].net.Notifications()
			}
			wake := []int{want, want + 1}
			if want+1 == n {
				wake = wake[:1]
			}
			if !slices.Equal(woken, wake) {
				t.Fatalf("release %d woke waiters %v, want %v", want, woken, wake)
			}
			release(ws[want].m)
		}
	})
}

func TestMutexLostOnExpiryAndSuspension(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/lost"
		// Strict policy: a suspension ends the grant at once.
		nw := &recipetest.Net{}
		a := NewMutex(e.Connect(t, nw.Dialer()), path)
		g, err := a.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nw.Cut()
		<-g.Done()
		if !errors.Is(g.Err(), recipe.ErrSuspended) {
			t.Fatalf("strict grant ended with %v", g.Err())
		}
		if err := a.Unlock(ctx); err != nil { // cleans up after reconnecting
			t.Fatal(err)
		}

		// Session policy: a suspension is not a loss; expiry is, and a
		// waiter then gets the lock with a larger token.
		nw2 := &recipetest.Net{}
		ca := e.Connect(t, nw2.Dialer())
		a2 := NewMutex(ca, path, WithPolicy(recipe.Session))
		g, err = a2.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		states, stop := ca.NotifyState()
		defer stop()
		nw2.Cut()
		recipetest.WaitState(t, states, zk.StateReconnected)
		if !g.Held() {
			t.Fatalf("session-policy grant lost on suspension: %v", g.Err())
		}
		b := NewMutex(e.Connect(t), path)
		got := make(chan *recipe.Grant, 1)
		go func() {
			gb, err := b.Lock(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- gb
		}()
		waitQueue(t, e.Connect(t), path, 2)
		nw2.Expire(t, e.Addr, ca)
		<-g.Done()
		if !errors.Is(g.Err(), zk.ErrSessionExpired) && !errors.Is(g.Err(), recipe.ErrNodeDeleted) {
			t.Fatalf("grant ended with %v", g.Err())
		}
		gb := <-got
		if gb == nil || gb.Token() <= g.Token() {
			t.Fatalf("next holder %v", gb)
		}
		// Fencing: a write guarded by the old holder's node fails.
		w := e.Connect(t)
		if _, err := w.Create(ctx, e.Root+"/resource", nil, recipetest.OpenACL, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		_, err = w.Multi(ctx, g.Guard(), zk.SetDataOp(e.Root+"/resource", []byte("stale"), -1))
		if !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("guarded write of the old holder: %v", err)
		}
		if _, err := gb.GuardedMulti(ctx, zk.SetDataOp(e.Root+"/resource", []byte("fresh"), -1)); err != nil {
			t.Fatalf("guarded write of the holder: %v", err)
		}
	})
}

func TestWaiterStopsOnOwnExpiry(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/expire-waiter"
		a := NewMutex(e.Connect(t), path)
		if _, err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		nb := &recipetest.Net{}
		cb := e.Connect(t, nb.Dialer())
		b := NewMutex(cb, path)
		done := make(chan error, 1)
		go func() { _, err := b.Lock(ctx); done <- err }()
		waitQueue(t, e.Connect(t), path, 2)
		nb.Expire(t, e.Addr, cb)
		if err := <-done; !errors.Is(err, zk.ErrSessionExpired) {
			t.Fatalf("waiter whose session expired: %v", err)
		}
	})
}

func TestRevocation(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/revoke"
		revoked := make(chan struct{}, 1)
		a := NewMutex(e.Connect(t), path, WithRevocation(func() { revoked <- struct{}{} }))
		g, err := a.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := e.Connect(t)
		if err := AttemptRevoke(ctx, c, g.Path()); err != nil {
			t.Fatal(err)
		}
		<-revoked
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := NewMutex(c, path).TryLock(ctx); !ok || err != nil {
			t.Fatalf("after revocation: %v %v", ok, err)
		}
	})
}
