package server

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
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
