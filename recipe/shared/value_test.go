package shared

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

type env = recipetest.Env

var seedFlag = flag.Uint64("shared.seed", 0, "seed of the randomized tests (0: random)")

func testRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -shared.seed %d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// nextValue waits for the next ValueChanged event.
func nextValue[T any](t *testing.T, ch <-chan Event[T]) Event[T] {
	t.Helper()
	ctx := recipetest.Ctx(t)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatal("events closed")
			}
			if e.Kind == ValueChanged {
				return e
			}
		case <-ctx.Done():
			t.Fatal("no value event")
		}
	}
}

func TestValue(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/a/value"
		a := NewValue(e.Connect(t), path, []byte("seed"))
		if err := a.Set(ctx, []byte("x")); !errors.Is(err, ErrNotStarted) {
			t.Fatalf("Set before Start: %v", err)
		}
		if v := a.Versioned(); string(v.Value) != "seed" || v.Version != -1 || v.Zxid != -1 {
			t.Fatalf("before Start: %+v", v)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if err := a.Start(ctx); !errors.Is(err, ErrStarted) {
			t.Fatalf("second Start: %v", err)
		}
		b := NewValue(e.Connect(t), path, []byte("other seed"))
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if got := b.Get(); string(got) != "seed" {
			t.Fatalf("second Value read %q, want the first's seed", got)
		}
		bev := b.Events()

		if err := a.Set(ctx, []byte("one")); err != nil {
			t.Fatal(err)
		}
		if ev := nextValue(t, bev); string(ev.Value.Value) != "one" || ev.Value.Version != 1 {
			t.Fatalf("event %+v", ev)
		}
		if string(b.Get()) != "one" {
			t.Fatalf("b.Get = %q", b.Get())
		}

		// TrySet: a stale Versioned loses, a current one wins.
		stale := a.Versioned()
		cur := b.Versioned()
		if ok, err := b.TrySet(ctx, cur, []byte("two")); !ok || err != nil {
			t.Fatalf("TrySet with the current value: %v %v", ok, err)
		}
		// b reports its own write. It reads the node again when its
		// watch fires: a write landing before that read would be what
		// it reports instead (watches are one-shot), so a writes only
		// after b has seen "two".
		if ev := nextValue(t, bev); string(ev.Value.Value) != "two" {
			t.Fatalf("event %+v, want two (b's own write)", ev)
		}
		ok, err := a.TrySet(ctx, stale, []byte("lost"))
		if ok || err != nil {
			t.Fatalf("TrySet with a stale value: %v %v", ok, err)
		}
		if got := a.Versioned(); string(got.Value) != "two" || got.Version != 2 {
			t.Fatalf("after a failed TrySet a holds %+v, want the current value", got)
		}
		if ok, err := a.TrySet(ctx, a.Versioned(), []byte("three")); !ok || err != nil {
			t.Fatalf("TrySet after refresh: %v %v", ok, err)
		}
		if ev := nextValue(t, bev); string(ev.Value.Value) != "three" {
			t.Fatalf("event %+v, want three", ev)
		}

		// Deleted and created again: b waits and reads it.
		admin := e.Connect(t)
		if err := admin.Delete(ctx, path, zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
		// CreateAll: the parent is a container, which Apache ZooKeeper's
		// reaper may delete once its only child is gone.
		if _, err := admin.CreateAll(ctx, path, []byte("again"), recipetest.OpenACL, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if ev := nextValue(t, bev); string(ev.Value.Value) != "again" || ev.Value.Version != 0 {
			t.Fatalf("after re-creation: %+v", ev)
		}

		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		for range bev {
		}
		if !errors.Is(b.Err(), recipe.ErrClosed) {
			t.Fatalf("Err after Close: %v", b.Err())
		}
	})
}

func TestCountLayout(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/count"
		admin := e.Connect(t)
		c := NewCount(e.Connect(t), path, -2)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		data, _, err := admin.Get(ctx, path)
		if err != nil || !bytes.Equal(data, []byte{0xff, 0xff, 0xff, 0xfe}) {
			t.Fatalf("seed stored as %x %v", data, err)
		}
		ev := c.Events()
		// recipe/lock's shared semaphore count writes the same layout.
		if err := lock.SetSharedCount(ctx, admin, path, 70000); err != nil {
			t.Fatal(err)
		}
		if got := nextValue(t, ev); got.Value.Value != 70000 || c.Get() != 70000 {
			t.Fatalf("event %+v, Get %d", got, c.Get())
		}
		// Too short: reported, and Get keeps the last good count.
		if _, err := admin.Set(ctx, path, []byte{1, 2}, zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if got := nextValue(t, ev); !errors.Is(got.Err, ErrCorrupt) || c.Get() != 70000 {
			t.Fatalf("corrupt count: event %+v, Get %d", got, c.Get())
		}
		// Longer than 4 bytes: the first 4 count, as with ByteBuffer.getInt.
		if _, err := admin.Set(ctx, path, []byte{0, 0, 0, 9, 7}, zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if got := nextValue(t, ev); got.Value.Value != 9 || got.Err != nil {
			t.Fatalf("5-byte count: %+v", got)
		}
	})
}

// TestCountContention: sessions add random steps to one Count with
// TrySet loops; no step is lost, and an observer's events see the count
// grow to the total.
func TestCountContention(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		rng := testRand(t)
		ctx := recipetest.Ctx(t)
		path := e.Root + "/contended"
		const workers, rounds = 6, 15
		obs := NewCount(e.Connect(t), path, 0)
		if err := obs.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer obs.Close()
		events := obs.Events()
		var total int32
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			c := NewCount(e.Connect(t), path, 0)
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			steps := make([]int32, rounds)
			for i := range steps {
				steps[i] = 1 + rng.Int32N(3)
				total += steps[i]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, d := range steps {
					for {
						v := c.Versioned()
						ok, err := c.TrySet(ctx, v, v.Value+d)
						if err != nil {
							errs <- err
							return
						}
						if ok {
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
		fresh := NewCount(e.Connect(t), path, 0)
		if err := fresh.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if got := fresh.Get(); got != total {
			t.Fatalf("count %d, want %d", got, total)
		}
		var last Versioned[int32]
		for last.Value != total {
			ev := nextValue(t, events)
			if ev.Value.Zxid <= last.Zxid || ev.Value.Value <= last.Value {
				t.Fatalf("event %+v after %+v", ev.Value, last)
			}
			last = ev.Value
		}
	})
}

func TestValueSessionEnd(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/expiring"
		nw := &recipetest.Net{}
		conn := e.Connect(t, nw.Dialer())
		v := NewValue(conn, path, []byte("v1"))
		if err := v.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		ev := v.Events()
		admin := e.Connect(t)

		// A cut connection: the change made meanwhile is still seen.
		states, stop := conn.NotifyState()
		defer stop()
		nw.Block(true)
		nw.Cut()
		recipetest.WaitState(t, states, zk.StateSuspended)
		if _, err := admin.Set(ctx, path, []byte("v2"), zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
		nw.Block(false)
		if got := nextValue(t, ev); string(got.Value.Value) != "v2" {
			t.Fatalf("after reconnecting: %+v", got)
		}

		nw.Expire(t, e.Addr, conn)
		var seen []zk.State
		for e := range ev {
			if e.Kind == StateChanged {
				seen = append(seen, e.State)
			}
		}
		if len(seen) == 0 || seen[len(seen)-1] != zk.StateLost {
			t.Fatalf("states seen %v, want Lost last", seen)
		}
		if !errors.Is(v.Err(), zk.ErrSessionExpired) {
			t.Fatalf("Err after expiry: %v", v.Err())
		}
		if err := v.Set(ctx, []byte("v3")); !errors.Is(err, zk.ErrSessionExpired) {
			t.Fatalf("Set after expiry: %v", err)
		}
		if string(v.Get()) != "v2" {
			t.Fatalf("Get after expiry: %q", v.Get())
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := NewValue(admin, path, nil).Start(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Start with a cancelled ctx: %v", err)
		}
	})
}

// TestValueConnClosed: closing the Conn ends the Value with zk.ErrClosing,
// StateClosed being the last event.
func TestValueConnClosed(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		conn := e.Connect(t)
		c := NewCount(conn, e.Root+"/closing", 1)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		ev := c.Events()
		conn.Close()
		var last Event[int32]
		for e := range ev {
			last = e
		}
		if last.Kind != StateChanged || last.State != zk.StateClosed {
			t.Fatalf("last event %+v, want StateClosed", last)
		}
		if !errors.Is(c.Err(), zk.ErrClosing) {
			t.Fatalf("Err = %v", c.Err())
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
