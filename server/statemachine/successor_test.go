package statemachine

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

// Applying a lock holder's delete makes the next node's session pending
// for group commit on a member that holds no watch of it (an ensemble's
// leader, the waiter connected elsewhere); the deleter's own session,
// a deletion without a counter and one by the server (no session) do
// not.
func TestDeleteExpectsTheSuccessor(t *testing.T) {
	watches := watch.NewManager()
	sm := New(slog.New(slog.NewTextHandler(io.Discard, nil)), watches, func(*tree.Tree) {}, jute.DefaultMaxBuffer)
	sm.Waiters, sm.Sessions = noWaiters{}, &nopSessions{}
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	index := uint64(0)
	apply := func(txn *tree.Txn) {
		t.Helper()
		var enc jute.Encoder
		AppendEntry(&enc, TxnEntry(txn))
		index++
		data := enc.Bytes()
		data[7] = 1 // a proposal id
		sm.Apply([]raftpb.Entry{{Index: index, Data: data}})
	}
	create := func(p string, mode proto.CreateMode, session int64) {
		apply(&tree.Txn{Op: proto.OpCreate, Session: session, Req: &proto.CreateRequest{Path: p, ACL: open, Flags: mode}})
	}
	del := func(p string, session int64) {
		apply(&tree.Txn{Op: proto.OpDelete, Session: session, Req: &proto.DeleteRequest{Path: p, Version: -1}})
	}
	pending := func(s int64) bool {
		_, self := watches.Pending(uint64(s), time.Minute)
		return self
	}
	for s := int64(1); s <= 3; s++ {
		apply(&tree.Txn{Op: proto.OpCreateSession, Session: s, Req: &tree.CreateSessionReq{Timeout: 30000}})
	}
	create("/lock", proto.ModePersistent, 0)
	create("/lock/_c_b-lock-", proto.ModeEphemeralSequential, 1) // ...0000000000
	create("/lock/_c_a-lock-", proto.ModeEphemeralSequential, 2) // ...0000000001
	create("/lock/_c_c-lock-", proto.ModeEphemeralSequential, 1) // ...0000000002
	create("/lock/_c_d-lock-", proto.ModeEphemeralSequential, 3) // ...0000000003
	create("/plain", proto.ModePersistent, 0)
	if sm.LastZxid() != int64(index) {
		t.Fatalf("applied up to %d of %d", sm.LastZxid(), index)
	}

	del("/plain", 1)
	for s := int64(1); s <= 3; s++ {
		if pending(s) {
			t.Fatalf("session %d pending after deleting a node without a counter", s)
		}
	}
	del("/lock/_c_b-lock-0000000000", 1)
	if !pending(2) || pending(1) || pending(3) {
		t.Fatalf("after session 1's release: pending 1 %v, 2 %v, 3 %v; want only 2", pending(1), pending(2), pending(3))
	}
	watches.Proposed(2)
	// Session 1 gives up its second node: its successor is session 3's.
	del("/lock/_c_c-lock-0000000002", 1)
	if !pending(3) || pending(2) {
		t.Fatalf("after the second deletion: pending 2 %v, 3 %v; want only 3", pending(2), pending(3))
	}
	watches.Proposed(3)
	// The deleter's own next node is no partner.
	create("/lock/_c_e-lock-", proto.ModeEphemeralSequential, 2) // ...0000000004
	del("/lock/_c_d-lock-0000000003", 2)
	if pending(2) {
		t.Fatal("the deleting session counts as its own successor's partner")
	}
	// A deletion by the server itself (no session) is not looked at.
	del("/lock/_c_a-lock-0000000001", 0)
	if pending(1) || pending(2) || pending(3) {
		t.Fatal("a server-made deletion named a successor")
	}
}
