package watch

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// recorder is a fake Watcher that records what it is told.
type recorder struct {
	id int64

	mu    sync.Mutex
	got   []proto.WatcherEvent
	zxids []int64
	acls  [][]proto.ACL
}

func newRecorder(id int64) *recorder { return &recorder{id: id} }

func (r *recorder) Deliver(ev proto.WatcherEvent, zxid int64, acl []proto.ACL) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, ev)
	r.zxids = append(r.zxids, zxid)
	r.acls = append(r.acls, acl)
}

func (r *recorder) SessionID() int64 { return r.id }

// take returns the deliveries since the last call as "Type path" strings
// and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.got))
	for i, ev := range r.got {
		out[i] = fmt.Sprintf("%s %s", strings.TrimPrefix(ev.Type.String(), "Event"), ev.Path)
	}
	r.got, r.zxids, r.acls = nil, nil, nil
	return out
}

var openACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}

func ev(typ proto.EventType, path string) tree.Event {
	return tree.Event{Type: typ, Path: path, ACL: openACL}
}

// Event helpers for the transactions that produce them (DataTree order).
func created(p string) []tree.Event {
	return []tree.Event{ev(proto.EventNodeCreated, p), ev(proto.EventNodeChildrenChanged, parent(p))}
}

func deleted(p string) []tree.Event {
	return []tree.Event{ev(proto.EventNodeDeleted, p), ev(proto.EventNodeChildrenChanged, parent(p))}
}

func changed(p string) []tree.Event { return []tree.Event{ev(proto.EventNodeDataChanged, p)} }

func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func expect(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	got := r.take()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("watcher %d got %q, want %q", r.id, got, want)
	}
}

func TestDataWatchIsOneShot(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddData("/a", w)
	if !m.Contains("/a", w, proto.WatcherData) {
		t.Fatal("not registered")
	}
	m.Trigger(changed("/a"))
	r := w.got[0]
	if r.State != proto.StateSyncConnected || r.Type != proto.EventNodeDataChanged || r.Path != "/a" {
		t.Fatalf("event %+v", r)
	}
	expect(t, w, "NodeDataChanged /a")
	if m.Contains("/a", w, proto.WatcherData) || m.Contains("/a", w, proto.WatcherAny) {
		t.Fatal("one-shot watch still registered after firing")
	}
	m.Trigger(changed("/a"))
	expect(t, w)
	if st := m.Stats(); st != (Stats{}) {
		t.Fatalf("stats %+v", st)
	}
}

func TestDataWatchIgnoresOtherPathsAndChildEvents(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddData("/a", w)
	m.Trigger(changed("/ab"))
	m.Trigger(changed("/a/b"))
	m.Trigger(created("/a/b")) // NodeChildrenChanged /a is for child watches
	m.Trigger(changed("/"))
	expect(t, w)
	if !m.Contains("/a", w, proto.WatcherData) {
		t.Fatal("watch consumed by an unrelated event")
	}
}

func TestExistsWatchFiresOnCreate(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddData("/x", w) // exists on a missing node
	m.Trigger(created("/x"))
	expect(t, w, "NodeCreated /x")
	m.Trigger(deleted("/x"))
	expect(t, w)
}

func TestChildWatch(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddChild("/p", w)
	m.Trigger(changed("/p"))
	expect(t, w)
	m.Trigger(created("/p/c"))
	expect(t, w, "NodeChildrenChanged /p")
	m.Trigger(created("/p/d"))
	expect(t, w)
	m.AddChild("/p", w)
	m.Trigger(deleted("/p/c"))
	expect(t, w, "NodeChildrenChanged /p")
}

func TestNodeDeletedNotifiesEachWatcherOnce(t *testing.T) {
	m := NewManager()
	both, dataOnly, childOnly, parentW := newRecorder(1), newRecorder(2), newRecorder(3), newRecorder(4)
	m.AddData("/a", both)
	m.AddChild("/a", both)
	m.AddData("/a", dataOnly)
	m.AddChild("/a", childOnly)
	m.AddChild("/", parentW)
	m.Trigger(deleted("/a"))
	expect(t, both, "NodeDeleted /a")
	expect(t, dataOnly, "NodeDeleted /a")
	expect(t, childOnly, "NodeDeleted /a")
	expect(t, parentW, "NodeChildrenChanged /")
	if st := m.Stats(); st != (Stats{}) {
		t.Fatalf("registrations left: %+v %v", st, m.ByPath())
	}
}

func TestPersistentWatch(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddPersistent("/p", w, false)
	for i := 0; i < 3; i++ {
		m.Trigger(changed("/p"))
	}
	expect(t, w, "NodeDataChanged /p", "NodeDataChanged /p", "NodeDataChanged /p")
	m.Trigger(created("/p/c"))
	m.Trigger(deleted("/p/c"))
	expect(t, w, "NodeChildrenChanged /p", "NodeChildrenChanged /p")
	// Not recursive: nothing for the child itself.
	m.Trigger(changed("/p/c"))
	expect(t, w)
	// Deletion is reported once and the watch survives it.
	m.Trigger(deleted("/p"))
	expect(t, w, "NodeDeleted /p")
	m.Trigger(created("/p"))
	expect(t, w, "NodeCreated /p")
	if !m.Contains("/p", w, proto.WatcherPersistent) || !m.Contains("/p", w, proto.WatcherAny) {
		t.Fatal("persistent watch lost")
	}
	// Data and Children name one-shot watches only (ZooKeeper 3.9).
	if m.Contains("/p", w, proto.WatcherData) || m.Contains("/p", w, proto.WatcherChildren) || m.Contains("/p", w, proto.WatcherPersistentRecursive) {
		t.Fatal("a persistent watch reported as another type")
	}
}

func TestRecursiveWatch(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddPersistent("/r", w, true)
	m.Trigger(created("/r/a"))
	m.Trigger(created("/r/a/b"))
	m.Trigger(changed("/r/a/b"))
	m.Trigger(changed("/r"))
	m.Trigger(deleted("/r/a/b"))
	expect(t, w, "NodeCreated /r/a", "NodeCreated /r/a/b", "NodeDataChanged /r/a/b", "NodeDataChanged /r", "NodeDeleted /r/a/b")
	// Never NodeChildrenChanged, not even for the watched path itself.
	m.Trigger([]tree.Event{ev(proto.EventNodeChildrenChanged, "/r"), ev(proto.EventNodeChildrenChanged, "/r/a")})
	expect(t, w)
	// Siblings sharing a prefix, ancestors and the root are outside.
	m.Trigger(created("/rx"))
	m.Trigger(changed("/"))
	m.Trigger(created("/other/r"))
	expect(t, w)
	m.Trigger(deleted("/r"))
	m.Trigger(created("/r"))
	expect(t, w, "NodeDeleted /r", "NodeCreated /r")
	for i := 0; i < 2; i++ {
		m.Trigger(changed("/r/a"))
	}
	expect(t, w, "NodeDataChanged /r/a", "NodeDataChanged /r/a")
}

func TestRecursiveWatchOnRoot(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddPersistent("/", w, true)
	m.Trigger(created("/a"))
	m.Trigger(changed("/"))
	m.Trigger(deleted("/a"))
	expect(t, w, "NodeCreated /a", "NodeDataChanged /", "NodeDeleted /a")
}

func TestRecursiveAndOneShotDeliverOnce(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddPersistent("/r", w, true)
	m.AddPersistent("/r/a", w, true)
	m.AddData("/r/a/b", w)
	m.Trigger(changed("/r/a/b"))
	expect(t, w, "NodeDataChanged /r/a/b")
	if m.Contains("/r/a/b", w, proto.WatcherData) {
		t.Fatal("one-shot watch not consumed")
	}
	m.Trigger(changed("/r/a/b"))
	expect(t, w, "NodeDataChanged /r/a/b")
}

func TestSeveralWatchersOnePath(t *testing.T) {
	m := NewManager()
	ws := []*recorder{newRecorder(1), newRecorder(2), newRecorder(3)}
	m.AddData("/a", ws[0])
	m.AddPersistent("/a", ws[1], false)
	m.AddPersistent("/", ws[2], true)
	m.Trigger(changed("/a"))
	for _, w := range ws {
		expect(t, w, "NodeDataChanged /a")
	}
	m.Trigger(changed("/a"))
	expect(t, ws[0])
	expect(t, ws[1], "NodeDataChanged /a")
	expect(t, ws[2], "NodeDataChanged /a")
}

// A one-shot registration on a path where the same watcher has a persistent
// watch is kept beside it (ZooKeeper 3.9, ZOOKEEPER-4466; 3.8 kept one
// mode per watcher and path, the one set last): the next event is told
// once for both, the one-shot watch goes, the persistent one stays.
func TestOneShotBesidePersistent(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddPersistent("/p", w, false)
	m.AddData("/p", w) // getData with watch
	if !m.Contains("/p", w, proto.WatcherData) || !m.Contains("/p", w, proto.WatcherPersistent) {
		t.Fatal("one of the two watches is missing")
	}
	m.Trigger(changed("/p"))
	expect(t, w, "NodeDataChanged /p")
	if m.Contains("/p", w, proto.WatcherData) || !m.Contains("/p", w, proto.WatcherPersistent) {
		t.Fatal("after the event: the one-shot watch must be gone, the persistent one kept")
	}
	m.Trigger(changed("/p"))
	m.Trigger(created("/p/a"))
	expect(t, w, "NodeDataChanged /p", "NodeChildrenChanged /p")

	m.AddChild("/p", w) // getChildren with watch
	m.Trigger(created("/p/c"))
	m.Trigger(created("/p/d"))
	expect(t, w, "NodeChildrenChanged /p", "NodeChildrenChanged /p")
	if m.Contains("/p", w, proto.WatcherChildren) {
		t.Fatal("child one-shot watch left after it fired")
	}

	// Removing one by its type keeps the other, both ways round.
	m.AddData("/p", w)
	if !m.Remove("/p", w, proto.WatcherPersistent) {
		t.Fatal("Remove(Persistent) = false")
	}
	if !m.Contains("/p", w, proto.WatcherData) {
		t.Fatal("Remove(Persistent) removed the one-shot watch")
	}
	m.Trigger(changed("/p"))
	m.Trigger(changed("/p"))
	m.Trigger(created("/p/e"))
	expect(t, w, "NodeDataChanged /p")
	if st := m.Stats(); st != (Stats{}) || m.Count() != 0 {
		t.Fatalf("registrations left: %+v", st)
	}
	m.AddData("/q", w)
	m.AddPersistent("/q", w, false)
	if !m.Remove("/q", w, proto.WatcherData) {
		t.Fatal("Remove(Data) = false")
	}
	if m.Remove("/q", w, proto.WatcherData) || m.Remove("/q", w, proto.WatcherChildren) || m.Remove("/q", w, proto.WatcherPersistentRecursive) {
		t.Fatal("Remove of a type the watcher does not hold = true")
	}
	m.Trigger(changed("/q"))
	m.Trigger(changed("/q"))
	expect(t, w, "NodeDataChanged /q", "NodeDataChanged /q")
}

// A one-shot watch beside a recursive one: the recursive watch keeps
// watching the descendants.
func TestOneShotBesideRecursive(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddPersistent("/r", w, true)
	m.AddData("/r", w)
	if m.data.recursive != 1 {
		t.Fatalf("recursive count %d", m.data.recursive)
	}
	m.Trigger(created("/r/x"))
	m.Trigger(changed("/r"))
	m.Trigger(changed("/r"))
	expect(t, w, "NodeCreated /r/x", "NodeDataChanged /r", "NodeDataChanged /r")
	if m.Contains("/r", w, proto.WatcherData) || !m.Contains("/r", w, proto.WatcherPersistentRecursive) {
		t.Fatal("wrong watches left")
	}
	// Remove(Data) and Remove(Children) leave a recursive watch alone.
	if m.Remove("/r", w, proto.WatcherData) || m.Remove("/r", w, proto.WatcherChildren) || m.Remove("/r", w, proto.WatcherPersistent) {
		t.Fatal("removed a recursive watch by another type")
	}
	m.Trigger(deleted("/r/x"))
	expect(t, w, "NodeDeleted /r/x")
	if !m.Remove("/r", w, proto.WatcherPersistentRecursive) || m.data.recursive != 0 || m.child.recursive != 0 || m.Count() != 0 {
		t.Fatalf("Remove(PersistentRecursive): recursive %d/%d, count %d", m.data.recursive, m.child.recursive, m.Count())
	}
}

// Persistent and recursive modes on one path are kept together too.
func TestPersistentAndRecursiveOnOnePath(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddPersistent("/r", w, true)
	m.AddPersistent("/r", w, true)
	if m.data.recursive != 1 {
		t.Fatalf("recursive=%d after adding the same recursive watch twice", m.data.recursive)
	}
	m.AddPersistent("/r", w, false)
	if m.data.recursive != 1 {
		t.Fatalf("recursive=%d after adding a persistent watch", m.data.recursive)
	}
	m.Trigger(created("/r/x"))
	expect(t, w, "NodeCreated /r/x", "NodeChildrenChanged /r")
	m.Remove("/r", w, proto.WatcherPersistentRecursive)
	m.Trigger(created("/r/y"))
	expect(t, w, "NodeChildrenChanged /r")
	m.AddPersistent("/r", w, true)
	m.Remove("/r", w, proto.WatcherAny)
	if m.data.recursive != 0 || m.Count() != 0 {
		t.Fatalf("recursive=%d count=%d after Remove(Any)", m.data.recursive, m.Count())
	}
}

func TestRemoveAndContains(t *testing.T) {
	m := NewManager()
	w, other := newRecorder(1), newRecorder(2)
	m.AddData("/a", w)
	m.AddChild("/a", w)
	m.AddData("/a", other)

	for _, c := range []struct {
		typ  proto.WatcherType
		want bool
	}{{proto.WatcherData, true}, {proto.WatcherChildren, true}, {proto.WatcherAny, true}} {
		if got := m.Contains("/a", w, c.typ); got != c.want {
			t.Fatalf("Contains(%v)=%v", c.typ, got)
		}
	}
	if m.Contains("/b", w, proto.WatcherAny) || m.Contains("/a", other, proto.WatcherChildren) {
		t.Fatal("Contains reports a registration that does not exist")
	}

	if !m.Remove("/a", w, proto.WatcherData) {
		t.Fatal("Remove(Data) = false")
	}
	if m.Contains("/a", w, proto.WatcherData) || !m.Contains("/a", w, proto.WatcherChildren) || !m.Contains("/a", w, proto.WatcherAny) {
		t.Fatal("Remove(Data) removed the wrong registration")
	}
	if m.Remove("/a", w, proto.WatcherData) {
		t.Fatal("second Remove(Data) = true (want NoWatcher)")
	}
	if !m.Remove("/a", w, proto.WatcherAny) {
		t.Fatal("Remove(Any) with a child watch left = false")
	}
	if m.Remove("/a", w, proto.WatcherAny) || m.Remove("/a", w, proto.WatcherChildren) {
		t.Fatal("Remove after everything was removed = true")
	}
	if !m.Contains("/a", other, proto.WatcherData) {
		t.Fatal("other watcher's registration removed")
	}
	m.Trigger(changed("/a"))
	m.Trigger(created("/a/x"))
	expect(t, w)
	expect(t, other, "NodeDataChanged /a")

	// A persistent watch is not a Data or Children watch (ZooKeeper 3.9):
	// only Persistent or Any removes it.
	m.AddPersistent("/p", w, false)
	if m.Remove("/p", w, proto.WatcherChildren) || m.Remove("/p", w, proto.WatcherData) {
		t.Fatal("Remove(Children/Data) of a persistent watch = true")
	}
	m.Trigger(created("/p/x"))
	m.Trigger(changed("/p"))
	expect(t, w, "NodeChildrenChanged /p", "NodeDataChanged /p")
	if !m.Remove("/p", w, proto.WatcherPersistent) {
		t.Fatal("Remove(Persistent) = false")
	}
	m.Trigger(changed("/p"))
	expect(t, w)
	if st := m.Stats(); st != (Stats{}) {
		t.Fatalf("registrations left: %+v %v", st, m.ByPath())
	}
}

func TestRemoveWatcher(t *testing.T) {
	m := NewManager()
	w, other := newRecorder(1), newRecorder(2)
	m.AddData("/a", w)
	m.AddChild("/a", w)
	m.AddData("/b", w)
	m.AddPersistent("/p", w, false)
	m.AddPersistent("/r", w, true)
	m.AddPersistent("/", w, true)
	m.AddData("/a", other)
	m.AddPersistent("/r", other, true)

	m.RemoveWatcher(w)
	if m.data.recursive != 1 {
		t.Fatalf("recursive=%d, want 1 (other's)", m.data.recursive)
	}
	if got := m.BySession(); !reflect.DeepEqual(got, map[int64][]string{2: {"/a", "/r"}}) {
		t.Fatalf("BySession %v", got)
	}
	for _, p := range []string{"/a", "/b", "/p", "/r", "/"} {
		if m.Contains(p, w, proto.WatcherAny) {
			t.Fatalf("%s still watched", p)
		}
	}
	m.Trigger(changed("/a"))
	m.Trigger(created("/r/x"))
	m.Trigger(created("/p/x"))
	expect(t, w)
	expect(t, other, "NodeDataChanged /a", "NodeCreated /r/x")
	m.RemoveWatcher(w) // idempotent
	m.RemoveWatcher(other)
	if st := m.Stats(); st != (Stats{}) || len(m.ByPath()) != 0 || len(m.BySession()) != 0 || m.data.recursive != 0 {
		t.Fatalf("not empty: %+v %v %v recursive=%d", st, m.ByPath(), m.BySession(), m.data.recursive)
	}
}

func TestStatsByPathBySession(t *testing.T) {
	m := NewManager()
	w1, w2, w3 := newRecorder(0x11), newRecorder(0x22), newRecorder(0x11) // w3: a second connection of session 0x11
	m.AddData("/a", w1)
	m.AddData("/b", w1)
	m.AddData("/a", w2)
	m.AddData("/c", w3)
	if got, want := m.Stats(), (Stats{Connections: 3, Paths: 3, Watches: 4}); got != want {
		t.Fatalf("Stats %+v, want %+v", got, want)
	}
	wantPath := map[string][]int64{"/a": {0x11, 0x22}, "/b": {0x11}, "/c": {0x11}}
	if got := m.ByPath(); !reflect.DeepEqual(got, wantPath) {
		t.Fatalf("ByPath %v, want %v", got, wantPath)
	}
	wantSess := map[int64][]string{0x11: {"/a", "/b", "/c"}, 0x22: {"/a"}}
	if got := m.BySession(); !reflect.DeepEqual(got, wantSess) {
		t.Fatalf("BySession %v, want %v", got, wantSess)
	}
	// Firing consumes registrations.
	m.Trigger(changed("/a"))
	if got, want := m.Stats(), (Stats{Connections: 2, Paths: 2, Watches: 2}); got != want {
		t.Fatalf("Stats after firing %+v, want %+v", got, want)
	}
	if got := m.ByPath(); !reflect.DeepEqual(got, map[string][]int64{"/b": {0x11}, "/c": {0x11}}) {
		t.Fatalf("ByPath after firing %v", got)
	}
	// Re-registering the same watch does not count twice.
	m.AddData("/b", w1)
	if got := m.Stats().Watches; got != 2 {
		t.Fatalf("Watches=%d after a duplicate registration", got)
	}
}

// zkgo's Stats, ByPath and BySession cover both tables. ZooKeeper 3.8's wchs,
// wchp and wchc (DataTree.dumpWatchesSummary / dumpWatches /
// getWatchesSummary / getWatchesByPath, all delegating to dataWatches only)
// report the data table alone, so child-only watches are invisible there and
// a persistent watch counts once. (mntr's zk_watch_count,
// DataTree.getWatchCount, does add both tables.)
func TestStatsMatchZooKeeperWchs(t *testing.T) {
	m := NewManager()
	w1, w2 := newRecorder(1), newRecorder(2)
	m.AddChild("/kids", w1)
	m.AddPersistent("/p", w2, false)
	if got, want := m.Stats(), (Stats{Connections: 1, Paths: 1, Watches: 1}); got != want {
		t.Fatalf("Stats %+v, want %+v", got, want)
	}
	if got := m.ByPath(); !reflect.DeepEqual(got, map[string][]int64{"/p": {2}}) {
		t.Fatalf("ByPath %v", got)
	}
	if got := m.BySession(); !reflect.DeepEqual(got, map[int64][]string{2: {"/p"}}) {
		t.Fatalf("BySession %v", got)
	}
}

func TestDeliverGetsEventACL(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	nodeACL := []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "digest", ID: "u:h"}}}
	parentACL := []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "ip", ID: "10.0.0.0/8"}}}
	m.AddData("/p/a", w)
	m.AddChild("/p", w)
	m.Trigger([]tree.Event{
		{Type: proto.EventNodeCreated, Path: "/p/a", ACL: nodeACL},
		{Type: proto.EventNodeChildrenChanged, Path: "/p", ACL: parentACL},
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.acls) != 2 || !reflect.DeepEqual(w.acls[0], nodeACL) || !reflect.DeepEqual(w.acls[1], parentACL) {
		t.Fatalf("ACLs %v", w.acls)
	}
}

// reentrant re-registers from inside Deliver, which must not deadlock: the
// manager's lock is released before delivery.
type reentrant struct {
	m *Manager
	recorder
}

func (r *reentrant) Deliver(ev proto.WatcherEvent, zxid int64, acl []proto.ACL) {
	r.recorder.Deliver(ev, zxid, acl)
	r.m.AddData(ev.Path, r)
	r.m.Stats()
}

func TestDeliverMayCallBack(t *testing.T) {
	m := NewManager()
	w := &reentrant{m: m, recorder: recorder{id: 1}}
	m.AddData("/a", w)
	m.Trigger(changed("/a"))
	m.Trigger(changed("/a"))
	if got := w.take(); !reflect.DeepEqual(got, []string{"NodeDataChanged /a", "NodeDataChanged /a"}) {
		t.Fatalf("got %v", got)
	}
}

func TestEventsDeliveredInOrder(t *testing.T) {
	m := NewManager()
	w := newRecorder(1)
	m.AddPersistent("/", w, true)
	m.AddChild("/", w) // a one-shot child watch beside the recursive one
	var evs []tree.Event
	var want []string
	for i := 0; i < 20; i++ {
		p := fmt.Sprintf("/n%02d", i)
		evs = append(evs, ev(proto.EventNodeCreated, p), ev(proto.EventNodeDataChanged, p))
		want = append(want, "NodeCreated "+p, "NodeDataChanged "+p)
	}
	evs = append(evs, ev(proto.EventNodeChildrenChanged, "/"), ev(proto.EventNodeChildrenChanged, "/"))
	want = append(want, "NodeChildrenChanged /")
	m.Trigger(evs)
	expect(t, w, want...)
	m.Trigger(nil)
	expect(t, w)
}

// TestWithTree feeds the events of real transactions to the manager.
func TestWithTree(t *testing.T) {
	tr := tree.New()
	m := NewManager()
	var zxid int64
	apply := func(txn *tree.Txn) {
		t.Helper()
		zxid++
		r := tr.Apply(zxid, txn)
		if r.Err != proto.ErrOk {
			t.Fatalf("%v: %v", txn.Op, r.Err)
		}
		m.Trigger(r.Events)
	}
	create := func(p string, mode proto.CreateMode, session int64) *tree.Txn {
		return &tree.Txn{Op: proto.OpCreate, Session: session, Req: &proto.CreateRequest{Path: p, ACL: openACL, Flags: mode}}
	}
	apply(&tree.Txn{Op: proto.OpCreateSession, Session: 7, Req: &tree.CreateSessionReq{Timeout: 1000}})
	apply(create("/app", proto.ModePersistent, 0))

	exists, kids, rec := newRecorder(1), newRecorder(2), newRecorder(3)
	m.AddData("/app/lock", exists)
	m.AddChild("/app", kids)
	m.AddPersistent("/app", rec, true)

	apply(create("/app/lock", proto.ModeEphemeral, 7))
	expect(t, exists, "NodeCreated /app/lock")
	expect(t, kids, "NodeChildrenChanged /app")
	expect(t, rec, "NodeCreated /app/lock")

	m.AddData("/app/lock", exists)
	m.AddChild("/app", kids)
	apply(&tree.Txn{Op: proto.OpCloseSession, Session: 7})
	expect(t, exists, "NodeDeleted /app/lock")
	expect(t, kids, "NodeChildrenChanged /app")
	expect(t, rec, "NodeDeleted /app/lock")

	apply(&tree.Txn{Op: proto.OpMulti, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/app/a", ACL: openACL}},
		{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/app/a", Data: []byte("x"), Version: -1}},
	}}})
	expect(t, rec, "NodeCreated /app/a", "NodeDataChanged /app/a")
}

func TestConcurrentUse(t *testing.T) {
	m := NewManager()
	var wg sync.WaitGroup
	ws := make([]*recorder, 8)
	for i := range ws {
		ws[i] = newRecorder(int64(i))
	}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				w := ws[(g+i)%len(ws)]
				p := fmt.Sprintf("/n%d", i%7)
				switch i % 6 {
				case 0:
					m.AddData(p, w)
				case 1:
					m.AddChild(p, w)
				case 2:
					m.AddPersistent(p, w, i%4 == 0)
				case 3:
					m.Trigger(append(created(p+"/c"), changed(p)...))
				case 4:
					m.Remove(p, w, proto.WatcherType(1+i%3))
					m.Contains(p, w, proto.WatcherAny)
				case 5:
					if i%30 == 5 {
						m.RemoveWatcher(w)
					}
					m.Stats()
					m.ByPath()
					m.BySession()
				}
			}
		}(g)
	}
	wg.Wait()
	for _, w := range ws {
		m.RemoveWatcher(w)
	}
	if st := m.Stats(); st != (Stats{}) || m.data.recursive != 0 {
		t.Fatalf("not empty after removing every watcher: %+v recursive=%d", st, m.data.recursive)
	}
	// Keep the recorders' deliveries sorted-insensitive sane.
	for _, w := range ws {
		got := w.take()
		sort.Strings(got)
		for _, g := range got {
			if !strings.HasPrefix(g, "Node") {
				t.Fatalf("odd delivery %q", g)
			}
		}
	}
}

// takeZxids returns the zxids of the deliveries since the last take, by
// "Type path", and forgets them.
func (r *recorder) takeZxids() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.got))
	for i, ev := range r.got {
		out[fmt.Sprintf("%s %s", strings.TrimPrefix(ev.Type.String(), "Event"), ev.Path)] = r.zxids[i]
	}
	r.got, r.zxids, r.acls = nil, nil, nil
	return out
}

// Every notification carries the zxid of the transaction that caused it
// (ZOOKEEPER-4655): the node's czxid for NodeCreated, its mzxid for
// NodeDataChanged, the parent's pzxid for NodeChildrenChanged and the
// deleting transaction's zxid for NodeDeleted, for one-shot, persistent
// and persistent recursive watches alike, and for every event of a multi.
func TestNotificationsCarryZxid(t *testing.T) {
	tr := tree.New()
	m := NewManager()
	var zxid int64
	apply := func(txn *tree.Txn) int64 {
		t.Helper()
		zxid++
		r := tr.Apply(zxid, txn)
		if r.Err != proto.ErrOk {
			t.Fatalf("%v: %v", txn.Op, r.Err)
		}
		m.Trigger(r.Events)
		return zxid
	}
	create := func(p string) *tree.Txn {
		return &tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: p, ACL: openACL}}
	}
	stat := func(p string) proto.Stat {
		t.Helper()
		n := tr.Get(p)
		if n == nil {
			t.Fatalf("%s missing", p)
		}
		return n.Stat()
	}
	check := func(r *recorder, want map[string]int64) {
		t.Helper()
		if got := r.takeZxids(); !reflect.DeepEqual(got, want) {
			t.Fatalf("watcher %d: got %v, want %v", r.id, got, want)
		}
	}
	apply(create("/app"))
	std, kids, pers, rec := newRecorder(1), newRecorder(2), newRecorder(3), newRecorder(4)
	m.AddData("/app/x", std) // exists on a missing node
	m.AddChild("/app", kids)
	m.AddPersistent("/app", pers, false)
	m.AddPersistent("/", rec, true)

	apply(create("/app/x"))
	czxid, pzxid := stat("/app/x").Czxid, stat("/app").Pzxid
	check(std, map[string]int64{"NodeCreated /app/x": czxid})
	check(kids, map[string]int64{"NodeChildrenChanged /app": pzxid})
	check(pers, map[string]int64{"NodeChildrenChanged /app": pzxid})
	check(rec, map[string]int64{"NodeCreated /app/x": czxid})

	m.AddData("/app/x", std)
	apply(&tree.Txn{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/app/x", Data: []byte("v"), Version: -1}})
	check(std, map[string]int64{"NodeDataChanged /app/x": stat("/app/x").Mzxid})
	check(rec, map[string]int64{"NodeDataChanged /app/x": stat("/app/x").Mzxid})
	apply(&tree.Txn{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/app", Data: []byte("v"), Version: -1}})
	check(pers, map[string]int64{"NodeDataChanged /app": stat("/app").Mzxid})
	check(rec, map[string]int64{"NodeDataChanged /app": stat("/app").Mzxid})

	m.AddData("/app/x", std)
	m.AddChild("/app", kids)
	del := apply(&tree.Txn{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/app/x", Version: -1}})
	if stat("/app").Pzxid != del {
		t.Fatalf("pzxid %d after the delete at %d", stat("/app").Pzxid, del)
	}
	check(std, map[string]int64{"NodeDeleted /app/x": del})
	check(kids, map[string]int64{"NodeChildrenChanged /app": del})
	check(pers, map[string]int64{"NodeChildrenChanged /app": del})
	check(rec, map[string]int64{"NodeDeleted /app/x": del})

	// A multi: every event carries the multi's zxid.
	multi := apply(&tree.Txn{Op: proto.OpMulti, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/app/a", ACL: openACL}},
		{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/app/a", Data: []byte("x"), Version: -1}},
	}}})
	check(rec, map[string]int64{"NodeCreated /app/a": multi, "NodeDataChanged /app/a": multi})
	check(pers, map[string]int64{"NodeChildrenChanged /app": multi})
}

// Pending tells which sessions were just notified and have not written
// since: a change nobody watched notifies nobody; a notified session is
// "other" to anyone else and "self" to itself, until it proposes or the
// time asked about has passed.
func TestPendingNotified(t *testing.T) {
	m := NewManager()
	m.Trigger(changed("/a")) // nobody watches /a
	if other, self := m.Pending(2, time.Minute); other || self {
		t.Fatalf("Pending(2) = %v, %v before any notification", other, self)
	}
	w := newRecorder(1)
	m.AddData("/a", w)
	m.Trigger(changed("/a"))
	expect(t, w, "NodeDataChanged /a")
	if other, self := m.Pending(2, time.Minute); !other || self {
		t.Fatalf("Pending(2) = %v, %v after session 1 was notified; want true, false", other, self)
	}
	if other, self := m.Pending(1, time.Minute); other || !self {
		t.Fatalf("Pending(1) = %v, %v after session 1 was notified; want false, true", other, self)
	}
	time.Sleep(2 * time.Millisecond)
	if other, _ := m.Pending(2, time.Millisecond); other {
		t.Fatal("a notification older than the time asked about still pending")
	}
	m.Proposed(1)
	if other, self := m.Pending(2, time.Minute); other || self {
		t.Fatalf("Pending(2) = %v, %v after session 1 proposed; want false, false", other, self)
	}
}

// Expect makes a session pending as a notification would, without a
// watch here; it ends the same way, when the session proposes.
func TestExpectPending(t *testing.T) {
	m := NewManager()
	m.Expect(0) // no session: nothing
	if other, self := m.Pending(2, time.Minute); other || self {
		t.Fatalf("Pending(2) = %v, %v after Expect(0)", other, self)
	}
	m.Expect(7)
	if other, self := m.Pending(2, time.Minute); !other || self {
		t.Fatalf("Pending(2) = %v, %v after Expect(7); want true, false", other, self)
	}
	if other, self := m.Pending(7, time.Minute); other || !self {
		t.Fatalf("Pending(7) = %v, %v after Expect(7); want false, true", other, self)
	}
	m.Proposed(7)
	if other, self := m.Pending(2, time.Minute); other || self {
		t.Fatalf("Pending(2) = %v, %v after session 7 proposed; want false, false", other, self)
	}
}

// held is a recorder that can be delivered to without being woken.
type held struct {
	recorder
	heldN, woken int
}

func (h *held) DeliverHeld(ev proto.WatcherEvent, zxid int64, acl []proto.ACL) bool {
	h.recorder.Deliver(ev, zxid, acl)
	h.heldN++
	return true
}

func (h *held) Wake() { h.woken++ }

// TriggerDeferred holds the notifications of an event with at least
// minFanOut watchers (those that can be held) and returns them to be
// woken; smaller fan-outs, and watchers that cannot be held, are
// delivered as by Trigger. Every watcher gets the same events either way.
func TestTriggerDeferred(t *testing.T) {
	m := NewManager()
	var hs []*held
	for i := range 3 {
		h := &held{recorder: recorder{id: int64(i + 1)}}
		hs = append(hs, h)
		m.AddData("/big", h)
	}
	plain := newRecorder(9)
	m.AddData("/big", plain)
	small := &held{recorder: recorder{id: 10}}
	m.AddData("/small", small)

	late := m.TriggerDeferred(append(changed("/big"), changed("/small")...), 4)
	if len(late) != 3 {
		t.Fatalf("%d watchers to wake, want the 3 held ones of /big", len(late))
	}
	for _, h := range hs {
		if h.heldN != 1 || len(h.take()) != 1 {
			t.Errorf("watcher %d: %d held deliveries", h.id, h.heldN)
		}
	}
	if got := plain.take(); len(got) != 1 {
		t.Errorf("the watcher that cannot be held got %v", got)
	}
	if small.heldN != 0 || len(small.take()) != 1 {
		t.Errorf("a fan-out of 1 was held (%d)", small.heldN)
	}
	// Below the bound nothing is held.
	for _, h := range hs {
		m.AddData("/big", h)
	}
	m.AddData("/big", plain)
	if late := m.TriggerDeferred(changed("/big"), 5); len(late) != 0 {
		t.Errorf("%d held below the bound", len(late))
	}
	for _, h := range hs {
		if h.heldN != 1 || len(h.take()) != 1 {
			t.Errorf("watcher %d: %d held deliveries after the second event", h.id, h.heldN)
		}
	}
}
