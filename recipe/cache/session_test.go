package cache

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

// offlineChanges builds a tree, then (while the cache is disconnected or
// its session gone) changes it in every way a cache must notice, and
// returns the events a resync must deliver, in zxid order.
func offlineSetup(t *testing.T, w *zk.Conn, r string) {
	create(t, w, r, "")
	for _, n := range []string{"keep", "change", "delete", "recreate", "revert", "deep"} {
		create(t, w, r+"/"+n, n)
	}
	create(t, w, r+"/deep/child", "dc")
}

func offlineChanges(t *testing.T, w *zk.Conn, r string) []want {
	ctx := recipetest.Ctx(t)
	set(t, w, r+"/change", "changed")
	del(t, w, r+"/delete")
	del(t, w, r+"/recreate")
	create(t, w, r+"/recreate", "new")
	set(t, w, r+"/revert", "tmp")
	set(t, w, r+"/revert", "revert") // same data, new mzxid: Changed
	if err := w.DeleteAll(ctx, r+"/deep"); err != nil {
		t.Fatal(err)
	}
	create(t, w, r+"/new", "n")
	create(t, w, r+"/new/child", "nc")
	return []want{
		{Changed, r + "/change", "changed"},
		{Deleted, r + "/delete", "delete"},
		{Deleted, r + "/recreate", "recreate"},
		{Created, r + "/recreate", "new"},
		{Changed, r + "/revert", "revert"},
		{Deleted, r + "/deep/child", "dc"},
		{Deleted, r + "/deep", "deep"},
		{Created, r + "/new", "n"},
		{Created, r + "/new/child", "nc"},
	}
}

// checkResync checks the node events a resync delivered against ws (as
// sets: deletions carry bounds, so their order among creations made after
// them may differ) and that their zxids do not decrease.
func checkResync(t *testing.T, got []Event, ws []want) {
	t.Helper()
	var last int64
	for _, ev := range got {
		if ev.Zxid < last {
			t.Errorf("%s after zxid %d", describe(ev), last)
		}
		last = ev.Zxid
	}
	var gs, wss []string
	for _, ev := range got {
		gs = append(gs, want{ev.Type, ev.Path, string(ev.Data)}.String())
	}
	for _, w := range ws {
		wss = append(wss, w.String())
	}
	slices.Sort(gs)
	slices.Sort(wss)
	if !slices.Equal(gs, wss) {
		t.Fatalf("resync events:\n  %v\nwant:\n  %v", gs, wss)
	}
}

// TestReconnectResync: changes made while the cache's connection is down
// reach it after the reconnection as exactly the differences, in zxid
// order, followed by Resynced.
func TestReconnectResync(t *testing.T) {
	forEachMode(t, func(t *testing.T, e *env, m mode) {
		ctx := recipetest.Ctx(t)
		var n recipetest.Net
		c, w := e.Connect(t, n.Dialer()), e.Connect(t)
		r := e.Root
		offlineSetup(t, w, r)
		tc := NewTree(c, r, m.opts...)
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		waitType(t, evs, Initialized)

		n.Block(true)
		n.Cut()
		if ev, skipped := waitType(t, evs, Suspended); len(skipped) > 0 {
			t.Fatalf("events before Suspended: %v", skipped)
		} else if tc.Synced() {
			t.Fatalf("Synced after %s", describe(ev))
		}
		ws := offlineChanges(t, w, r)
		n.Block(false)
		ev, got := waitType(t, evs, Resynced)
		checkResync(t, got, ws)
		if !tc.Synced() || ev.Zxid < got[len(got)-1].Zxid {
			t.Fatalf("Resynced at zxid %d (synced %v) after events up to %d", ev.Zxid, tc.Synced(), got[len(got)-1].Zxid)
		}
		requireTree(t, tc, w, r, unlimited)
		// And it follows changes again.
		set(t, w, r+"/keep", "kept")
		expect(t, evs, want{Changed, r + "/keep", "kept"})
	})
}

// TestExpiryStops: without WithRedial, a cache whose session expires says
// so (Lost, then Stopped) and serves nothing from then on.
func TestExpiryStops(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		var n recipetest.Net
		c, w := e.Connect(t, n.Dialer()), e.Connect(t)
		create(t, w, e.Root, "x")
		tc := NewTree(c, e.Root)
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		waitType(t, evs, Initialized)
		n.Expire(t, e.Addr, c)
		expect(t, evs, want{Suspended, "", ""})
		if ev := expect(t, evs, want{Lost, "", ""})[0]; !errors.Is(ev.Err, zk.ErrSessionExpired) {
			t.Errorf("Lost: %v", ev.Err)
		}
		if ev := expect(t, evs, want{Stopped, "", ""})[0]; !errors.Is(ev.Err, zk.ErrSessionExpired) {
			t.Errorf("Stopped: %v", ev.Err)
		}
		if ev, ok := <-evs; ok {
			t.Fatalf("event after Stopped: %s", describe(ev))
		}
		if _, ok := tc.Get(e.Root); ok || tc.Synced() || !errors.Is(tc.Err(), zk.ErrSessionExpired) {
			t.Fatalf("after expiry: cached %v, synced %v, err %v", ok, tc.Synced(), tc.Err())
		}
	})
}

// TestExpiryRedial: with WithRedial, the cache rebuilds on a new session
// after Lost and delivers what changed while it had none.
func TestExpiryRedial(t *testing.T) {
	forEachMode(t, func(t *testing.T, e *env, m mode) {
		ctx := recipetest.Ctx(t)
		var n recipetest.Net
		c, w := e.Connect(t, n.Dialer()), e.Connect(t)
		r := e.Root
		offlineSetup(t, w, r)
		var changes []want
		dials := 0
		redial := func(ctx context.Context) (*zk.Conn, error) {
			dials++
			if dials == 1 {
				// The first attempt fails: the cache reports it and
				// tries again. The changes are made meanwhile.
				changes = offlineChanges(t, w, r)
				return nil, errors.New("no server yet")
			}
			return zk.Connect(ctx, e.Addr, zk.WithSessionTimeout(4e9), n.Dialer())
		}
		tc := NewTree(c, r, append(m.opts, WithRedial(redial))...)
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		waitType(t, evs, Initialized)
		n.Expire(t, e.Addr, c)
		expect(t, evs, want{Suspended, "", ""}, want{Lost, "", ""})
		if ev := nextEvent(t, evs); ev.Type != Error || ev.Err == nil {
			t.Fatalf("after a failed redial: %s", describe(ev))
		}
		ev, got := waitType(t, evs, Resynced)
		checkResync(t, got, changes)
		if !tc.Synced() || tc.Err() != nil {
			t.Fatalf("after %s: synced %v, err %v", describe(ev), tc.Synced(), tc.Err())
		}
		requireTree(t, tc, w, r, unlimited)
		set(t, w, r+"/keep", "kept")
		expect(t, evs, want{Changed, r + "/keep", "kept"})
		// A second expiry: the Conn the cache dialled is replaced (and
		// closed) in turn.
		tc2conn := tc.e.currentConn()
		n.Expire(t, e.Addr, tc2conn)
		waitType(t, evs, Resynced)
		if tc2conn.State() != zk.StateClosed {
			t.Errorf("the replaced Conn is %v, want closed", tc2conn.State())
		}
		set(t, w, r+"/keep", "kept2")
		expect(t, evs, want{Changed, r + "/keep", "kept2"})
	})
}

// TestWatchRemoved: when the cache's watch is removed from under it, it
// sets it again and reads the subtree again.
func TestWatchRemoved(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		c, w := e.Connect(t), e.Connect(t)
		r := e.Root
		create(t, w, r, "r")
		tc := NewTree(c, r)
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		waitType(t, evs, Initialized)
		if err := c.RemoveWatches(ctx, r, zk.WatcherAny); err != nil {
			t.Fatal(err)
		}
		waitType(t, evs, Resynced)
		set(t, w, r, "r2")
		expect(t, evs, want{Changed, r, "r2"})
	})
}

// TestResyncSeesNodeCreatedMidRead: a whole read (here after a session
// expiry, one-shot watches) whose first round lists a parent before a
// child is created again, and whose second round lists the parent again
// because of that creation, reads the new child. The old node of that
// path, still in the store and not found by the first round, must not
// make the second round take the child for known.
func TestResyncSeesNodeCreatedMidRead(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		var n recipetest.Net
		c, w := e.Connect(t, n.Dialer()), e.Connect(t)
		r := e.Root
		create(t, w, r, "")
		create(t, w, r+"/d", "")
		create(t, w, r+"/d/d", "old")
		redial := func(ctx context.Context) (*zk.Conn, error) {
			return zk.Connect(ctx, e.Addr, zk.WithSessionTimeout(4e9), n.Dialer())
		}
		tc := NewTree(c, r, WithOneShotWatches(), WithRedial(redial))
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		waitType(t, evs, Initialized)

		var armed atomic.Bool
		testHookAfterFetch = func(eng *engine, full bool, round int) {
			if eng != tc.e || !full || round != 1 || !armed.CompareAndSwap(true, false) {
				return
			}
			// The first round listed r/d without d. Create it, and hand
			// the child watch's event to the second round.
			create(t, w, r+"/d/d", "new")
			select {
			case sh := <-eng.shots.inbox.C():
				eng.shots.inbox.Send(sh)
			case <-time.After(10 * time.Second):
				t.Error("the child watch of the first round did not fire")
			}
		}
		defer func() { testHookAfterFetch = nil }()

		del(t, w, r+"/d/d")
		armed.Store(true)
		n.Expire(t, e.Addr, c)
		_, got := waitType(t, evs, Resynced)
		if armed.Load() {
			t.Fatal("the resync did not read in two rounds")
		}
		checkResync(t, nodeEvents(got), []want{{Deleted, r + "/d/d", "old"}, {Created, r + "/d/d", "new"}})
		requireTree(t, tc, w, r, unlimited)
	})
}

// nodeEvents keeps the events about nodes.
func nodeEvents(evs []Event) []Event {
	var out []Event
	for _, ev := range evs {
		if ev.Type == Created || ev.Type == Changed || ev.Type == Deleted {
			out = append(out, ev)
		}
	}
	return out
}
