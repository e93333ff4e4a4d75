package statemachine

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

type nopSessions struct{ n int }

func (n *nopSessions) Applied(*tree.Txn, *tree.Result) { n.n++ }
func (n *nopSessions) RemoteTouch([]int64)             {}
func (n *nopSessions) Moved(int64, int64, uint64)      {}

type noWaiters struct{}

func (noWaiters) Take(uint64) Waiter { return nil }

// An entry the state machine cannot decode (corruption, a newer format)
// stops applying for good and reports the failure once; it never panics,
// and entries before it in the batch are applied.
func TestStateMachineStopsOnUndecodableEntry(t *testing.T) {
	sm := New(slog.New(slog.NewTextHandler(io.Discard, nil)), watch.NewManager(), func(*tree.Tree) {}, jute.DefaultMaxBuffer)
	sess := &nopSessions{}
	sm.Waiters, sm.Sessions = noWaiters{}, sess
	failed := make(chan error, 2)
	sm.OnFail = func(err error) { failed <- err }
	var enc jute.Encoder
	AppendEntry(&enc, TxnEntry(&tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/a", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}}}))
	good := enc.Bytes()
	good[7] = 1 // a proposal id
	sm.Apply([]raftpb.Entry{
		{Index: 1, Data: good},
		{Index: 2, Data: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfd}}, // a reserved control kind
		{Index: 3, Data: good},
	})
	err := <-failed
	if !errors.Is(err, ErrEntryFormat) {
		t.Fatalf("failure %v, want ErrEntryFormat", err)
	}
	if sm.LastZxid() != 1 || sess.n != 1 {
		t.Fatalf("applied up to %d (%d txns), want only entry 1", sm.LastZxid(), sess.n)
	}
	sm.Apply([]raftpb.Entry{{Index: 4, Data: good}})
	if sm.LastZxid() != 1 {
		t.Fatal("applied after the failure")
	}
	select {
	case err := <-failed:
		t.Fatalf("failure reported twice: %v", err)
	default:
	}
}

// A snapshot carries the member's formation ahead of the tree; restoring
// it reports the formation, and a snapshot without one (a standalone
// server's, an ensemble still forming, an older data directory) restores
// as before and reports none. A prefix naming no formation is refused.
func TestStateMachineSnapshotCarriesFormation(t *testing.T) {
	newSM := func() *Machine {
		sm := New(slog.New(slog.NewTextHandler(io.Discard, nil)), watch.NewManager(), func(*tree.Tree) {}, jute.DefaultMaxBuffer)
		sm.Waiters, sm.Sessions = noWaiters{}, &nopSessions{}
		return sm
	}
	var enc jute.Encoder
	AppendEntry(&enc, TxnEntry(&tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/a", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}}}))
	data := enc.Bytes()
	data[7] = 1 // a proposal id
	snap := func(f uint64) []byte {
		sm := newSM()
		sm.Formation = func() uint64 { return f }
		sm.Apply([]raftpb.Entry{{Index: 1, Data: data}})
		write, err := sm.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	restore := func(b []byte) (uint64, error) {
		sm := newSM()
		got := uint64(1 << 63)
		sm.OnRestore = func(f uint64) { got = f }
		if err := sm.Restore(bytes.NewReader(b), 5); err != nil {
			return 0, err
		}
		ok := false
		sm.View(func(tr *tree.Tree) { ok = tr.Get("/a") != nil })
		if !ok {
			t.Fatal("restored tree lacks /a")
		}
		return got, nil
	}
	for _, f := range []uint64{0, raftnode.FormationPending, 0x1234_5678_9abc_def0} {
		b := snap(f)
		if has := bytes.HasPrefix(b, []byte(SnapshotFormationMagic)); has != (f >= 2) {
			t.Fatalf("formation %d: prefix %v", f, has)
		}
		got, err := restore(b)
		if err != nil {
			t.Fatalf("formation %d: %v", f, err)
		}
		if want := map[bool]uint64{true: f, false: 0}[f >= 2]; got != want {
			t.Fatalf("formation %d: restore reported %d, want %d", f, got, want)
		}
	}
	b := snap(0x1234)
	b[len(SnapshotFormationMagic)+7] = 1 // formation "pending" in the prefix
	for i := len(SnapshotFormationMagic); i < len(SnapshotFormationMagic)+7; i++ {
		b[i] = 0
	}
	if _, err := restore(b); !errors.Is(err, tree.ErrBadSnapshot) {
		t.Fatalf("prefix naming no formation: %v, want ErrBadSnapshot", err)
	}
}

// oneWaiter hands w to the entry whose proposal id is id.
type oneWaiter struct {
	id uint64
	w  Waiter
}

func (o oneWaiter) Take(id uint64) Waiter {
	if id == o.id {
		return o.w
	}
	return nil
}

// batchUser joins the batch of the entry it waits for, and asks for work
// Later: the work runs after every waker's EndBatch, with the whole batch
// applied and the tree still locked (a connection's reads queued behind
// its write see the writes after it in the batch).
type batchUser struct {
	events []string
	later  func(t *tree.Tree)
}

func (u *batchUser) Applied(_ int64, _ *tree.Result, b *Batch) {
	u.events = append(u.events, "applied")
	b.Join(u)
	t := b.Tree()
	b.Later(func() { u.later(t) })
}
func (u *batchUser) Lost()     {}
func (u *batchUser) EndBatch() { u.events = append(u.events, "end") }

func TestBatchLaterRunsAfterTheBatch(t *testing.T) {
	sm := New(slog.New(slog.NewTextHandler(io.Discard, nil)), watch.NewManager(), func(*tree.Tree) {}, jute.DefaultMaxBuffer)
	u := &batchUser{}
	sm.Waiters, sm.Sessions = oneWaiter{id: 1, w: u}, &nopSessions{}
	create := func(path string, id byte) []byte {
		var enc jute.Encoder
		AppendEntry(&enc, TxnEntry(&tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: path, ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}}}))
		b := enc.Bytes()
		b[7] = id // the proposal id
		return b
	}
	var children []string
	u.later = func(t *tree.Tree) {
		u.events = append(u.events, "later")
		// The tree is still locked by the batch: read it as a queued
		// read does.
		if n := t.Get("/"); n != nil {
			children = n.Children()
		}
	}
	sm.Apply([]raftpb.Entry{{Index: 1, Data: create("/a", 1)}, {Index: 2, Data: create("/b", 2)}})
	if got := strings.Join(u.events, ","); got != "applied,end,later" {
		t.Fatalf("events %s, want applied,end,later", got)
	}
	slices.Sort(children)
	if !slices.Equal(children, []string{"a", "b", "zookeeper"}) {
		t.Fatalf("later saw children %q, want the whole batch's", children)
	}
}
