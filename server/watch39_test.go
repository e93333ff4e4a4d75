package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

func recvEvent(t *testing.T, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return zk.Event{}
}

// Watch notifications carry the zxid of the change (ZooKeeper 3.9,
// ZOOKEEPER-4655), through the server and the Go client: NodeCreated the
// node's czxid, NodeDataChanged its mzxid, NodeChildrenChanged the parent's
// pzxid, NodeDeleted the deletion's zxid (the parent's pzxid after it), for
// one-shot, persistent and persistent recursive watches.
func TestWatchEventsCarryZxid(t *testing.T) {
	ctx, c, w, must := twoSessions(t)
	var err error
	stat := func(p string) *zk.Stat {
		t.Helper()
		st, err := c.Exists(ctx, p)
		if err != nil || st == nil {
			t.Fatalf("exists %s: %v %v", p, st, err)
		}
		return st
	}
	check := func(what string, ev zk.Event, typ zk.EventType, path string, zxid int64) {
		t.Helper()
		if ev.Type != typ || ev.Path != path || ev.Zxid != zxid {
			t.Fatalf("%s: got %+v, want %v %s zxid %#x", what, ev, typ, path, zxid)
		}
	}
	_, err = c.Create(ctx, "/z", nil, zk.OpenACLUnsafe, zk.ModePersistent)
	must(err)
	pers, err := w.AddWatch(ctx, "/z", proto.AddWatchPersistent)
	must(err)
	rec, err := w.AddWatch(ctx, "/", proto.AddWatchPersistentRecursive)
	must(err)
	_, exCh, err := w.ExistsW(ctx, "/z/a")
	must(err)
	_, _, kidCh, err := w.ChildrenW(ctx, "/z")
	must(err)

	_, err = c.Create(ctx, "/z/a", []byte("1"), zk.OpenACLUnsafe, zk.ModePersistent)
	must(err)
	czxid, pzxid := stat("/z/a").Czxid, stat("/z").Pzxid
	check("exists watch", recvEvent(t, exCh), zk.EventNodeCreated, "/z/a", czxid)
	check("child watch", recvEvent(t, kidCh), zk.EventNodeChildrenChanged, "/z", pzxid)
	check("persistent", recvEvent(t, pers.Events()), zk.EventNodeChildrenChanged, "/z", pzxid)
	check("recursive", recvEvent(t, rec.Events()), zk.EventNodeCreated, "/z/a", czxid)

	_, _, dataCh, err := w.GetW(ctx, "/z/a")
	must(err)
	st, err := c.Set(ctx, "/z/a", []byte("2"), -1)
	must(err)
	check("data watch", recvEvent(t, dataCh), zk.EventNodeDataChanged, "/z/a", st.Mzxid)
	check("recursive", recvEvent(t, rec.Events()), zk.EventNodeDataChanged, "/z/a", st.Mzxid)
	st, err = c.Set(ctx, "/z", []byte("2"), -1)
	must(err)
	check("persistent", recvEvent(t, pers.Events()), zk.EventNodeDataChanged, "/z", st.Mzxid)
	check("recursive", recvEvent(t, rec.Events()), zk.EventNodeDataChanged, "/z", st.Mzxid)

	_, _, dataCh, err = w.GetW(ctx, "/z/a")
	must(err)
	_, _, kidCh, err = w.ChildrenW(ctx, "/z")
	must(err)
	must(c.Delete(ctx, "/z/a", -1))
	del := stat("/z").Pzxid
	if del <= st.Mzxid {
		t.Fatalf("pzxid %#x after the delete", del)
	}
	check("data watch", recvEvent(t, dataCh), zk.EventNodeDeleted, "/z/a", del)
	check("child watch", recvEvent(t, kidCh), zk.EventNodeChildrenChanged, "/z", del)
	check("persistent", recvEvent(t, pers.Events()), zk.EventNodeChildrenChanged, "/z", del)
	check("recursive", recvEvent(t, rec.Events()), zk.EventNodeDeleted, "/z/a", del)
}

// A persistent and a one-shot watch of one session on one path are both
// kept (ZooKeeper 3.9, ZOOKEEPER-4466): the one-shot watch fires once, the
// persistent one keeps firing, and removeWatches with a type removes only
// the watches of that type.
func TestPersistentAndOneShotWatchOnOnePath(t *testing.T) {
	ctx, c, w, must := twoSessions(t)
	var err error
	_, err = c.Create(ctx, "/p", nil, zk.OpenACLUnsafe, zk.ModePersistent)
	must(err)
	pers, err := w.AddWatch(ctx, "/p", proto.AddWatchPersistent)
	must(err)
	_, _, dataCh, err := w.GetW(ctx, "/p")
	must(err)
	must(w.CheckWatches(ctx, "/p", proto.WatcherData))
	must(w.CheckWatches(ctx, "/p", proto.WatcherPersistent))
	for i := 0; i < 3; i++ {
		_, err = c.Set(ctx, "/p", []byte{byte(i)}, -1)
		must(err)
		if ev := recvEvent(t, pers.Events()); ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("persistent event %d: %+v", i, ev)
		}
	}
	if ev := recvEvent(t, dataCh); ev.Type != zk.EventNodeDataChanged {
		t.Fatalf("one-shot event: %+v", ev)
	}
	if err := w.CheckWatches(ctx, "/p", proto.WatcherData); !errors.Is(err, zk.ErrNoWatcher) {
		t.Fatalf("one-shot watch after it fired: %v", err)
	}
	must(w.CheckWatches(ctx, "/p", proto.WatcherPersistent))

	// removeWatches(Data) takes the one-shot watch and leaves the
	// persistent one; removeWatches(Persistent) the other way round.
	_, _, _, err = w.GetW(ctx, "/p")
	must(err)
	must(w.RemoveWatches(ctx, "/p", proto.WatcherData))
	must(w.CheckWatches(ctx, "/p", proto.WatcherPersistent))
	if err := w.RemoveWatches(ctx, "/p", proto.WatcherData); !errors.Is(err, zk.ErrNoWatcher) {
		t.Fatalf("second removeWatches(Data): %v", err)
	}
	_, _, dataCh, err = w.GetW(ctx, "/p")
	must(err)
	must(w.RemoveWatches(ctx, "/p", proto.WatcherPersistent))
	must(w.CheckWatches(ctx, "/p", proto.WatcherData))
	if err := w.CheckWatches(ctx, "/p", proto.WatcherPersistent); !errors.Is(err, zk.ErrNoWatcher) {
		t.Fatalf("persistent watch after removeWatches(Persistent): %v", err)
	}
	_, err = c.Set(ctx, "/p", []byte("x"), -1)
	must(err)
	if ev := recvEvent(t, dataCh); ev.Type != zk.EventNodeDataChanged {
		t.Fatalf("one-shot event after the persistent watch went: %+v", ev)
	}
}

// twoSessions starts a server and opens two sessions on it, a writer and
// a watcher, closed with the test; must fails the test on an error.
func twoSessions(t *testing.T) (ctx context.Context, c, w *zk.Conn, must func(error)) {
	t.Helper()
	zs := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	for _, p := range []**zk.Conn{&c, &w} {
		conn, err := zk.Connect(ctx, zs.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		*p = conn
	}
	must = func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	return ctx, c, w, must
}
