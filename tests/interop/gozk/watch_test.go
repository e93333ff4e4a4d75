package gozk

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// In go-zookeeper the receive loop handles frames strictly in order and
// hands a notification to the watch channel (buffered) before it completes
// any later reply. So "the event is already in the channel when a later
// read returns" observes ZooKeeper's guarantee that a client sees a watch
// event before it sees the change through a read.

func TestDataWatchOneShot(t *testing.T) {
	srv, a := start(t)
	b := connect(t, srv.Addr())
	mustCreate(t, a, "/w", []byte("0"), 0)

	_, _, ch, err := a.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Set("/w", []byte("1"), -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, ch, zk.EventNodeDataChanged, "/w")

	// Not re-armed: a second change must not notify.
	if _, err := b.Set("/w", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	// Any notification for the second change would reach a before the
	// reply to this read.
	if d, _, err := a.Get("/w"); err != nil || string(d) != "2" {
		t.Fatalf("get = %q, %v", d, err)
	}
	if n := a.countEvents(zk.EventNodeDataChanged, "/w"); n != 1 {
		t.Fatalf("got %d NodeDataChanged events for /w, want 1: %v", n, a.Events())
	}
}

func TestWatchEventBeforeRead(t *testing.T) {
	srv, a := start(t)
	b := connect(t, srv.Addr())
	mustCreate(t, a, "/o", []byte("old"), 0)

	t.Run("other session's change", func(t *testing.T) {
		_, _, ch, err := a.GetW("/o")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Set("/o", []byte("new"), -1); err != nil {
			t.Fatal(err)
		}
		d, _, err := a.Get("/o")
		if err != nil || string(d) != "new" {
			t.Fatalf("get = %q, %v", d, err)
		}
		ev, ok := pending(ch)
		if !ok {
			t.Fatal("read observed the change before the watch event was delivered")
		}
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/o" {
			t.Fatalf("event = %+v", ev)
		}
	})

	t.Run("own change", func(t *testing.T) {
		// The notification precedes even the reply to the write itself.
		_, _, ch, err := a.GetW("/o")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Set("/o", []byte("mine"), -1); err != nil {
			t.Fatal(err)
		}
		if ev, ok := pending(ch); !ok || ev.Type != zk.EventNodeDataChanged {
			t.Fatalf("after own set: event %+v delivered=%v", ev, ok)
		}
	})

	t.Run("child watch", func(t *testing.T) {
		_, _, ch, err := a.ChildrenW("/o")
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, b, "/o/kid", nil, 0)
		if kids, _, err := a.Children("/o"); err != nil || len(kids) != 1 {
			t.Fatalf("children = %v, %v", kids, err)
		}
		if ev, ok := pending(ch); !ok || ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/o" {
			t.Fatalf("child event %+v delivered=%v", ev, ok)
		}
	})

	t.Run("exists watch", func(t *testing.T) {
		_, _, ch, err := a.ExistsW("/o2")
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, b, "/o2", nil, 0)
		mustExists(t, a, "/o2")
		if ev, ok := pending(ch); !ok || ev.Type != zk.EventNodeCreated || ev.Path != "/o2" {
			t.Fatalf("exists event %+v delivered=%v", ev, ok)
		}
	})
}

func TestExistsWatch(t *testing.T) {
	srv, a := start(t)
	b := connect(t, srv.Addr())

	ok, _, ch, err := a.ExistsW("/x")
	if err != nil || ok {
		t.Fatalf("ExistsW = %v, %v", ok, err)
	}
	mustCreate(t, b, "/x", nil, 0)
	expectWatch(t, ch, zk.EventNodeCreated, "/x")

	// On an existing node an exists watch is a data watch.
	ok, _, ch, err = a.ExistsW("/x")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := b.Set("/x", []byte("d"), -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, ch, zk.EventNodeDataChanged, "/x")

	ok, _, ch, err = a.ExistsW("/x")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := b.Delete("/x", -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, ch, zk.EventNodeDeleted, "/x")

	// An exists watch on a missing node ignores changes elsewhere, and a
	// failed create does not fire it.
	ok, _, ch, err = a.ExistsW("/y")
	if err != nil || ok {
		t.Fatal(ok, err)
	}
	mustCreate(t, b, "/yy", nil, 0)
	_, err = b.Create("/y/z", nil, 0, openACL)
	expectErr(t, "create under missing", err, zk.ErrNoNode)
	mustExists(t, a, "/yy")
	if ev, ok := pending(ch); ok {
		t.Fatalf("unexpected event %+v", ev)
	}
}

func TestChildWatch(t *testing.T) {
	srv, a := start(t)
	b := connect(t, srv.Addr())
	mustCreate(t, a, "/p", nil, 0)

	_, _, ch, err := a.ChildrenW("/p")
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, "/p/c", nil, 0)
	expectWatch(t, ch, zk.EventNodeChildrenChanged, "/p")

	_, _, ch, err = a.ChildrenW("/p")
	if err != nil {
		t.Fatal(err)
	}
	// Data changes of the parent or a child, and grandchildren, are not
	// child changes of /p.
	if _, err := b.Set("/p", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Set("/p/c", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, "/p/c/g", nil, 0)
	if _, _, err := a.Children("/p"); err != nil {
		t.Fatal(err)
	}
	if ev, ok := pending(ch); ok {
		t.Fatalf("unexpected child event %+v", ev)
	}
	if err := b.Delete("/p/c/g", -1); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("/p/c", -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, ch, zk.EventNodeChildrenChanged, "/p")
	if n := a.countEvents(zk.EventNodeChildrenChanged, "/p"); n != 2 {
		t.Fatalf("%d NodeChildrenChanged events for /p, want 2: %v", n, a.Events())
	}

	// Children of the root.
	_, _, ch, err = a.ChildrenW("/")
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, b, "/top", nil, 0)
	expectWatch(t, ch, zk.EventNodeChildrenChanged, "/")

	// A child watch fires NodeDeleted when the watched node goes away.
	_, _, ch, err = a.ChildrenW("/p")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("/p", -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, ch, zk.EventNodeDeleted, "/p")
}

func TestDataWatchOnDelete(t *testing.T) {
	srv, a := start(t)
	b := connect(t, srv.Addr())
	mustCreate(t, a, "/d", nil, 0)

	_, _, getCh, err := a.GetW("/d")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := a.ChildrenW("/d")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("/d", -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, getCh, zk.EventNodeDeleted, "/d")
	expectWatch(t, childCh, zk.EventNodeDeleted, "/d")
	// ZooKeeper sends one NodeDeleted per watcher (connection) and path,
	// even with both a data and a child watch set.
	mustNotExist(t, a, "/d")
	if n := a.countEvents(zk.EventNodeDeleted, "/d"); n != 1 {
		t.Fatalf("%d NodeDeleted notifications for /d, want 1: %v", n, a.Events())
	}

	// Watches on a missing node cannot be set by getData / getChildren.
	_, _, _, err = a.GetW("/d")
	expectErr(t, "GetW missing", err, zk.ErrNoNode)
	_, _, _, err = a.ChildrenW("/d")
	expectErr(t, "ChildrenW missing", err, zk.ErrNoNode)
	mustCreate(t, b, "/d", nil, 0)
	mustExists(t, a, "/d")
	if n := a.countEvents(zk.EventNodeCreated, "/d"); n != 0 {
		t.Fatalf("failed GetW/ChildrenW left a watch: %v", a.Events())
	}
}

func TestWatchesAcrossSessionsAndPaths(t *testing.T) {
	srv, a := start(t)
	b := connect(t, srv.Addr())
	c := connect(t, srv.Addr())
	mustCreate(t, a, "/n", nil, 0)
	mustCreate(t, a, "/n2", nil, 0)

	_, _, cha, err := a.GetW("/n")
	if err != nil {
		t.Fatal(err)
	}
	_, _, chb, err := b.GetW("/n")
	if err != nil {
		t.Fatal(err)
	}
	_, _, chOther, err := a.GetW("/n2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/n", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, cha, zk.EventNodeDataChanged, "/n")
	expectWatch(t, chb, zk.EventNodeDataChanged, "/n")
	mustExists(t, a, "/n2")
	if ev, ok := pending(chOther); ok {
		t.Fatalf("watch on /n2 fired: %+v", ev)
	}
	// The same watch set twice by one session is notified once.
	_, _, w1, err := a.GetW("/n2")
	if err != nil {
		t.Fatal(err)
	}
	_, _, w2, err := a.GetW("/n2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/n2", nil, -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, w1, zk.EventNodeDataChanged, "/n2")
	expectWatch(t, w2, zk.EventNodeDataChanged, "/n2")
	expectWatch(t, chOther, zk.EventNodeDataChanged, "/n2")
	mustExists(t, a, "/n2")
	if n := a.countEvents(zk.EventNodeDataChanged, "/n2"); n != 1 {
		t.Fatalf("%d notifications for /n2, want 1", n)
	}
}
