package session

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// A closeSession proposal can be lost (the leader changed before it
// committed, raft dropped it). The tracker proposes it again once the
// retry interval has passed while the session is still live — and not
// before — so a dead client's ephemerals (a lock holder's node) never
// stay for good; a new leader decides afresh.
func TestExpiryRetriesLostCloseSession(t *testing.T) {
	tr := New(slog.New(slog.NewTextHandler(io.Discard, nil)), 100*time.Millisecond, 1, func(int64) {}, func() bool { return true })
	var mu sync.Mutex
	var proposed []int64
	tr.proposeClose = func(id int64) { // every proposal is lost
		mu.Lock()
		proposed = append(proposed, id)
		mu.Unlock()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(proposed) }
	const id = 0x42
	tr.Track(id, 3*time.Second, nil)
	ls := tr.live[id]
	start := time.Now().UnixNano()

	tr.expireDue(start) // not due yet
	if count() != 0 {
		t.Fatalf("proposed %d closes before the deadline", count())
	}
	due := ls.deadline.Load() + 1
	tr.expireDue(due)
	tr.expireDue(due + int64(time.Second)) // the first one may still commit
	if count() != 1 {
		t.Fatalf("%d closes proposed, want 1 within the retry interval", count())
	}
	retry := int64(tr.closeRetry(ls))
	tr.expireDue(due + retry)
	if count() != 2 {
		t.Fatalf("%d closes proposed after the retry interval, want 2", count())
	}
	tr.expireDue(due + retry + 1)
	if count() != 2 {
		t.Fatalf("%d closes proposed right after a retry, want 2", count())
	}
	// A new leader starts over: a full timeout, then one proposal.
	tr.RefreshAll()
	if ls.closingAt.Load() != 0 {
		t.Fatal("refreshAll kept the old leader's closing mark")
	}
	tr.expireDue(ls.deadline.Load() + 1)
	if count() != 3 {
		t.Fatalf("%d closes proposed after the new leader's timeout, want 3", count())
	}
	// ExpireSession (tests) proposes at once, but not twice in a row.
	tr.Track(0x43, 3*time.Second, nil)
	tr.Expire(0x43)
	tr.Expire(0x43)
	if count() != 4 {
		t.Fatalf("%d closes proposed after two expire calls, want 4", count())
	}
}

// A session expires one timeout after its client was last heard from, as
// in ZooKeeper, whether or not its connection closed meanwhile: closing
// the connection does not restart the timeout (it did, and a client that
// fell silent and then lost its socket kept its ephemerals up to one
// timeout longer than on ZooKeeper).
func TestDetachKeepsTheDeadline(t *testing.T) {
	tr := New(slog.New(slog.NewTextHandler(io.Discard, nil)), 100*time.Millisecond, 1, func(int64) {}, func() bool { return true })
	const id = 0x44
	c := &fakeSessionConn{}
	ls := tr.Track(id, 10*time.Second, c)
	ls.deadline.Store(time.Now().Add(4 * time.Second).UnixNano()) // heard from 6 s ago
	ls.dirty.Store(false)
	before := ls.deadline.Load()
	tr.Detach(id, c)
	if got := ls.deadline.Load(); got != before {
		t.Fatalf("closing the connection moved the deadline by %v", time.Duration(got-before))
	}
	if ls.dirty.Load() {
		t.Fatal("closing the connection counts as hearing from the client (it would be reported to the leader as a touch)")
	}
}

type fakeSessionConn struct{}

func (*fakeSessionConn) Close(string)   {}
func (*fakeSessionConn) SessionClosed() {}
func (*fakeSessionConn) SessionMoved()  {}

// A session expired by Expire (server.ExpireSession, which tests use to
// force an expiry) is closed even if that one proposal is lost while its
// client keeps pinging: the tracker proposes again every forcedRetry, on
// a follower too, until the session is closed.
func TestForcedExpiryRetriesLostCloseSession(t *testing.T) {
	old := forcedRetry
	forcedRetry = 20 * time.Millisecond
	t.Cleanup(func() { forcedRetry = old })
	var leader atomic.Bool // a follower: expireDue does not run
	tr := New(slog.New(slog.NewTextHandler(io.Discard, nil)), 20*time.Millisecond, 1, func(int64) {}, leader.Load)
	proposed := make(chan int64, 100)
	tr.proposeClose = func(id int64) { proposed <- id } // lost until applied below
	const id = 0x45
	tr.Track(id, time.Hour, nil) // a client that keeps pinging: never due
	done := make(chan struct{})
	defer close(done)
	go tr.Run(done)

	tr.Expire(id)
	for i := 0; i < 3; i++ { // the first, and two retries
		if got := recv(t, proposed); got != id {
			t.Fatalf("proposed closing 0x%x, want 0x%x", got, id)
		}
	}
	// Once the close is applied, the retries stop.
	tr.Applied(&tree.Txn{Op: proto.OpCloseSession, Session: id}, &tree.Result{})
	for {
		select {
		case <-proposed: // one may have been under way
			continue
		case <-time.After(10 * forcedRetry):
		}
		break
	}
	if tr.live[id] != nil {
		t.Fatal("the session is still tracked after its close was applied")
	}
	select {
	case <-proposed:
		t.Fatal("proposed closing a closed session")
	case <-time.After(5 * forcedRetry):
	}
}

func recv(t *testing.T, ch <-chan int64) int64 {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a closeSession proposal")
		return 0
	}
}
