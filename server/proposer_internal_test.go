package server

import (
	"fmt"
	"testing"

	"github.com/zkgo/zkgo/tree"
)

// TestTakePendingFailsSkippedProposals checks the bookkeeping that notices
// proposals raft dropped without telling: this member's proposals enter
// the log in the order they were made, so when one applies, every older
// one still waiting was lost and its waiter hears so (a nil result), and
// an entry that applies after it was given up on finds no waiter.
func TestTakePendingFailsSkippedProposals(t *testing.T) {
	l := &raftLog{idBase: 0xabcd << 32}
	type call struct {
		seq  uint32
		lost bool
	}
	var calls []call
	for seq := uint32(1); seq <= 5; seq++ {
		seq := seq
		l.pending = append(l.pending, &pendingProp{seq: seq, done: func(zxid int64, res *tree.Result) {
			calls = append(calls, call{seq: seq, lost: res == nil})
		}})
	}
	id := func(seq uint32) uint64 { return l.idBase | uint64(seq) }

	if l.takePending(0x1234<<32|1) != nil {
		t.Fatal("an entry proposed by another member (or before a restart) found a waiter")
	}
	done := l.takePending(id(1))
	if done == nil {
		t.Fatal("no waiter for the oldest proposal")
	}
	done(1, &tree.Result{})
	// 2 and 3 never apply: 4 applies next.
	done = l.takePending(id(4))
	if done == nil {
		t.Fatal("no waiter for proposal 4")
	}
	done(2, &tree.Result{})
	want := []call{{1, false}, {2, true}, {3, true}, {4, false}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("waiters called %v, want %v", calls, want)
	}
	// 3 applies late (reordered across a leader change): its waiter was
	// already told, and is not called twice.
	if l.takePending(id(3)) != nil {
		t.Fatal("a proposal given up on found its waiter again")
	}
	if len(l.pending) != 1 || l.pending[0].seq != 5 {
		t.Fatalf("pending = %v, want only 5", l.pending)
	}
	// The 32-bit sequence wraps: 0xffffffff is older than 2.
	l.pending = []*pendingProp{{seq: 0xffffffff, done: func(int64, *tree.Result) { calls = append(calls, call{seq: 0xffffffff, lost: true}) }}, {seq: 2}}
	calls = nil
	l.takePending(id(2))
	if len(calls) != 1 || len(l.pending) != 0 {
		t.Fatalf("after a wrap: calls %v, pending %d", calls, len(l.pending))
	}
}
