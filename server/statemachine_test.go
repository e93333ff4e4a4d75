package server

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

type nopSessions struct{ n int }

func (n *nopSessions) applied(*tree.Txn, *tree.Result) { n.n++ }
func (n *nopSessions) remoteTouch([]int64)             {}
func (n *nopSessions) moved(int64, int64, uint64)      {}

type noWaiters struct{}

func (noWaiters) take(uint64) waiter { return nil }

// An entry the state machine cannot decode (corruption, a newer format)
// stops applying for good and reports the failure once; it never panics,
// and entries before it in the batch are applied.
func TestStateMachineStopsOnUndecodableEntry(t *testing.T) {
	sm := newStateMachine(slog.New(slog.NewTextHandler(io.Discard, nil)), watch.NewManager(), func(*tree.Tree) {}, jute.DefaultMaxBuffer)
	sess := &nopSessions{}
	sm.waiters, sm.sessions = noWaiters{}, sess
	failed := make(chan error, 2)
	sm.onFail = func(err error) { failed <- err }
	var enc jute.Encoder
	appendEntry(&enc, txnEntry(&tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/a", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}}}))
	good := enc.Bytes()
	good[7] = 1 // a proposal id
	sm.Apply([]raftpb.Entry{
		{Index: 1, Data: good},
		{Index: 2, Data: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfd}}, // a reserved control kind
		{Index: 3, Data: good},
	})
	err := <-failed
	if !errors.Is(err, errEntryFormat) {
		t.Fatalf("failure %v, want errEntryFormat", err)
	}
	if sm.lastZxid() != 1 || sess.n != 1 {
		t.Fatalf("applied up to %d (%d txns), want only entry 1", sm.lastZxid(), sess.n)
	}
	sm.Apply([]raftpb.Entry{{Index: 4, Data: good}})
	if sm.lastZxid() != 1 {
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
	newSM := func() *stateMachine {
		sm := newStateMachine(slog.New(slog.NewTextHandler(io.Discard, nil)), watch.NewManager(), func(*tree.Tree) {}, jute.DefaultMaxBuffer)
		sm.waiters, sm.sessions = noWaiters{}, &nopSessions{}
		return sm
	}
	var enc jute.Encoder
	appendEntry(&enc, txnEntry(&tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/a", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}}}))
	data := enc.Bytes()
	data[7] = 1 // a proposal id
	snap := func(f uint64) []byte {
		sm := newSM()
		sm.formation = func() uint64 { return f }
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
		sm.onRestore = func(f uint64) { got = f }
		if err := sm.Restore(bytes.NewReader(b), 5); err != nil {
			return 0, err
		}
		ok := false
		sm.view(func(tr *tree.Tree) { ok = tr.Get("/a") != nil })
		if !ok {
			t.Fatal("restored tree lacks /a")
		}
		return got, nil
	}
	for _, f := range []uint64{0, raftnode.FormationPending, 0x1234_5678_9abc_def0} {
		b := snap(f)
		if has := bytes.HasPrefix(b, []byte(snapshotFormationMagic)); has != (f >= 2) {
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
	b[len(snapshotFormationMagic)+7] = 1 // formation "pending" in the prefix
	for i := len(snapshotFormationMagic); i < len(snapshotFormationMagic)+7; i++ {
		b[i] = 0
	}
	if _, err := restore(b); !errors.Is(err, tree.ErrBadSnapshot) {
		t.Fatalf("prefix naming no formation: %v, want ErrBadSnapshot", err)
	}
}
