package cache

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

func TestTreeCache(t *testing.T) {
	forEachMode(t, func(t *testing.T, e *env, m mode) {
		ctx := recipetest.Ctx(t)
		c, w := e.Connect(t), e.Connect(t)
		r := e.Root
		create(t, w, r, "r")
		create(t, w, r+"/a", "a")
		create(t, w, r+"/a/x", "ax")
		last := create(t, w, r+"/b", "b")
		tc := NewTree(c, r, m.opts...)
		defer tc.Close()
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// The snapshot, parents first, then Initialized at the zxid of
		// the last change.
		expect(t, evs, want{Created, r, "r"}, want{Created, r + "/a", "a"}, want{Created, r + "/a/x", "ax"}, want{Created, r + "/b", "b"})
		if ev := expect(t, evs, want{Initialized, "", ""})[0]; ev.Zxid != last.Czxid {
			t.Errorf("Initialized at zxid %d, want %d (the last create)", ev.Zxid, last.Czxid)
		}
		if !tc.Synced() || tc.Len() != 4 {
			t.Fatalf("Synced %v, Len %d", tc.Synced(), tc.Len())
		}
		if got := tc.Children(r); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("Children(root) = %v", got)
		}

		st := create(t, w, r+"/a/y", "ay")
		if ev := expect(t, evs, want{Created, r + "/a/y", "ay"})[0]; ev.Zxid != st.Czxid || ev.Stat != *st {
			t.Errorf("Created: zxid %d stat %+v, want %d %+v", ev.Zxid, ev.Stat, st.Czxid, *st)
		}
		st = set(t, w, r+"/a/y", "ay2")
		if ev := expect(t, evs, want{Changed, r + "/a/y", "ay2"})[0]; ev.Zxid != st.Mzxid {
			t.Errorf("Changed at zxid %d, want %d", ev.Zxid, st.Mzxid)
		}
		if en, ok := tc.Get(r + "/a/y"); !ok || string(en.Data) != "ay2" || en.Stat != *st {
			t.Fatalf("Get after Changed: %v %q %+v", ok, en.Data, en.Stat)
		}
		del(t, w, r+"/a/x")
		parent, err := w.Exists(ctx, r+"/a")
		if err != nil {
			t.Fatal(err)
		}
		if ev := expect(t, evs, want{Deleted, r + "/a/x", "ax"})[0]; ev.Zxid != parent.Pzxid {
			t.Errorf("Deleted at zxid %d, want %d (the deletion)", ev.Zxid, parent.Pzxid)
		}
		// The parent's Stat follows its children without an event.
		if en, _ := tc.Get(r + "/a"); en.Stat.NumChildren != 1 || en.Stat.Pzxid != parent.Pzxid {
			t.Errorf("parent stat %+v, want numChildren 1, pzxid %d", en.Stat, parent.Pzxid)
		}
		// A subtree deleted: children first.
		if err := w.DeleteAll(ctx, r+"/a"); err != nil {
			t.Fatal(err)
		}
		expect(t, evs, want{Deleted, r + "/a/y", "ay2"}, want{Deleted, r + "/a", "a"})
		requireTree(t, tc, w, r, unlimited)

		// The root deleted and created again, within one transaction:
		// Deleted then Created at the same zxid.
		del(t, w, r+"/b")
		expect(t, evs, want{Deleted, r + "/b", "b"})
		res, err := w.Multi(ctx, zk.DeleteOp(r, -1), zk.CreateOp(r, []byte("r2"), zk.OpenACLUnsafe, zk.ModePersistent))
		if err != nil {
			t.Fatal(err, res)
		}
		got := expect(t, evs, want{Deleted, r, "r"}, want{Created, r, "r2"})
		if got[0].Zxid != got[1].Zxid || got[1].Zxid != got[1].Stat.Czxid {
			t.Errorf("re-creation: Deleted at %d, Created at %d (czxid %d)", got[0].Zxid, got[1].Zxid, got[1].Stat.Czxid)
		}
		del(t, w, r)
		expect(t, evs, want{Deleted, r, "r2"})
		if _, ok := tc.Get(r); ok || tc.Len() != 0 {
			t.Fatalf("root still cached after its deletion (Len %d)", tc.Len())
		}
		create(t, w, r, "r3")
		expect(t, evs, want{Created, r, "r3"})
		requireTree(t, tc, w, r, unlimited)
	})
}

func TestTreeCacheMaxDepth(t *testing.T) {
	forEachMode(t, func(t *testing.T, e *env, m mode) {
		ctx := recipetest.Ctx(t)
		c, w := e.Connect(t), e.Connect(t)
		r := e.Root
		create(t, w, r, "")
		create(t, w, r+"/a", "a")
		create(t, w, r+"/a/deep", "d")
		tc := NewTree(c, r, append(m.opts, WithMaxDepth(1))...)
		defer tc.Close()
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, evs, want{Created, r, ""}, want{Created, r + "/a", "a"}, want{Initialized, "", ""})
		create(t, w, r+"/a/deep2", "")
		set(t, w, r+"/a/deep", "d2")
		create(t, w, r+"/b", "b")
		// Nothing below depth 1 is reported; /a's child count follows.
		expect(t, evs, want{Created, r + "/b", "b"})
		if _, ok := tc.Get(r + "/a/deep"); ok {
			t.Fatal("a node below the maximum depth is cached")
		}
		if en, _ := tc.Get(r + "/a"); en.Stat.NumChildren != 2 {
			t.Errorf("/a numChildren %d, want 2", en.Stat.NumChildren)
		}
		requireTree(t, tc, w, r, 1)
	})
}

func TestNodeCache(t *testing.T) {
	forEachMode(t, func(t *testing.T, e *env, m mode) {
		ctx := recipetest.Ctx(t)
		c, w := e.Connect(t), e.Connect(t)
		p := e.Root
		nc := NewNode(c, p, m.opts...)
		defer nc.Close()
		evs := nc.Events()
		if err := nc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, evs, want{Initialized, "", ""})
		if _, ok := nc.Get(); ok {
			t.Fatal("a missing node is cached")
		}
		st := create(t, w, p, "v1")
		if ev := expect(t, evs, want{Created, p, "v1"})[0]; ev.Zxid != st.Czxid {
			t.Errorf("Created at %d, want %d", ev.Zxid, st.Czxid)
		}
		set(t, w, p, "v2")
		expect(t, evs, want{Changed, p, "v2"})
		// A child changes the Stat, silently; the next change shows it.
		create(t, w, p+"/child", "")
		set(t, w, p, "v3")
		ev := expect(t, evs, want{Changed, p, "v3"})[0]
		if ev.Stat.NumChildren != 1 {
			t.Errorf("numChildren %d after a child was created, want 1", ev.Stat.NumChildren)
		}
		if en, ok := nc.Get(); !ok || string(en.Data) != "v3" || en.Stat.NumChildren != 1 {
			t.Fatalf("Get: %v %q %+v", ok, en.Data, en.Stat)
		}
		if err := w.DeleteAll(ctx, p); err != nil {
			t.Fatal(err)
		}
		expect(t, evs, want{Deleted, p, "v3"})
		if _, ok := nc.Get(); ok {
			t.Fatal("a deleted node is cached")
		}
		create(t, w, p, "v4")
		expect(t, evs, want{Created, p, "v4"})
	})
}

func TestChildrenCache(t *testing.T) {
	forEachMode(t, func(t *testing.T, e *env, m mode) {
		ctx := recipetest.Ctx(t)
		c, w := e.Connect(t), e.Connect(t)
		r := e.Root
		create(t, w, r, "parent")
		create(t, w, r+"/a", "a")
		cc := NewChildren(c, r, m.opts...)
		defer cc.Close()
		evs := cc.Events()
		if err := cc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		// The parent is never reported.
		expect(t, evs, want{Created, r + "/a", "a"}, want{Initialized, "", ""})
		set(t, w, r, "parent2")
		create(t, w, r+"/b", "b")
		expect(t, evs, want{Created, r + "/b", "b"})
		create(t, w, r+"/b/grandchild", "g")
		set(t, w, r+"/b/grandchild", "g2")
		set(t, w, r+"/a", "a2")
		expect(t, evs, want{Changed, r + "/a", "a2"})
		// With a persistent watch every event before /a's change has been
		// taken when it is reported. One-shot watches reach the cache
		// each through its own goroutine, so /b's child watch may be
		// taken in a later round (settle.go, barrier): wait for it.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			en, _ := cc.Get(r + "/b")
			if en.Stat.NumChildren == 1 {
				break
			}
			if m.name != "oneshot" || time.Now().After(deadline) {
				t.Fatalf("/b numChildren %d, want 1", en.Stat.NumChildren)
			}
		}
		if _, ok := cc.Get(r); ok {
			t.Error("Get returns the parent")
		}
		cur := cc.Current()
		if len(cur) != 2 || cur[0].Path != r+"/a" || cur[1].Path != r+"/b" {
			t.Fatalf("Current = %v", cur)
		}
		if err := w.DeleteAll(ctx, r+"/b"); err != nil {
			t.Fatal(err)
		}
		expect(t, evs, want{Deleted, r + "/b", "b"})
		// The parent deleted: its children are reported deleted.
		if err := w.DeleteAll(ctx, r); err != nil {
			t.Fatal(err)
		}
		expect(t, evs, want{Deleted, r + "/a", "a2"})
		create(t, w, r, "")
		create(t, w, r+"/c", "c")
		expect(t, evs, want{Created, r + "/c", "c"})
		if cur := cc.Current(); len(cur) != 1 || string(cur[0].Data) != "c" {
			t.Fatalf("Current = %v", cur)
		}
	})
}

func TestLifecycle(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		c, w := e.Connect(t), e.Connect(t)
		create(t, w, e.Root, "x")
		if err := NewTree(c, "no-slash").Start(ctx); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("Start with a bad path: %v", err)
		}
		tc := NewTree(c, e.Root)
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tc.Start(ctx); !errors.Is(err, ErrStarted) {
			t.Errorf("second Start: %v", err)
		}
		if tc.Err() != nil {
			t.Errorf("Err while running: %v", tc.Err())
		}
		tc.Close()
		tc.Close()
		for range evs {
		}
		if _, ok := tc.Get(e.Root); ok || tc.Synced() || !errors.Is(tc.Err(), ErrClosed) {
			t.Errorf("after Close: cached %v, synced %v, err %v", ok, tc.Synced(), tc.Err())
		}
		if err := tc.Start(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("Start after Close: %v", err)
		}
		// The watch is gone from the server with the cache.
		if err := c.CheckWatches(ctx, e.Root, zk.WatcherAny); !errors.Is(err, zk.ErrNoWatcher) {
			t.Errorf("checkWatches after Close: %v", err)
		}
		// A Start whose context ends first closes the cache.
		cctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
		defer cancel()
		<-cctx.Done()
		tc2 := NewTree(c, e.Root)
		if err := tc2.Start(cctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Start with an expired context: %v", err)
		}
		if !errors.Is(tc2.Err(), ErrClosed) {
			t.Errorf("Err after a failed Start: %v", tc2.Err())
		}
		// A Start whose context ends while it reads: the error or, if the
		// snapshot was complete first, success; the cache works either way
		// until closed.
		cctx2, cancel2 := context.WithCancel(ctx)
		tc3 := NewTree(c, e.Root)
		go cancel2()
		if err := tc3.Start(cctx2); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Start cancelled meanwhile: %v", err)
		}
		tc3.Close()
	})
}
