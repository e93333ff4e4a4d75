package replica

import (
	"fmt"
	"testing"

	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/tree"
)

// TestTakePendingFailsSkippedProposals checks the bookkeeping that notices
// proposals raft dropped without telling: this member's proposals enter
// the log in the order they were made, so when one applies, every older
// one still waiting was lost and its waiter hears so (lost), and
// an entry that applies after it was given up on finds no waiter.
func TestTakePendingFailsSkippedProposals(t *testing.T) {
	l := &Proposer{idBase: 0xabcd << 32}
	var calls []call
	for seq := uint32(1); seq <= 5; seq++ {
		l.pending = append(l.pending, &pendingProp{seq: seq, w: &testWaiter{seq: seq, calls: &calls}})
	}
	id := func(seq uint32) uint64 { return l.idBase | uint64(seq) }

	if l.Take(0x1234<<32|1) != nil {
		t.Fatal("an entry proposed by another member (or before a restart) found a waiter")
	}
	w := l.Take(id(1))
	if w == nil {
		t.Fatal("no waiter for the oldest proposal")
	}
	w.Applied(1, &tree.Result{}, nil)
	// 2 and 3 never apply: 4 applies next.
	w = l.Take(id(4))
	if w == nil {
		t.Fatal("no waiter for proposal 4")
	}
	w.Applied(2, &tree.Result{}, nil)
	want := []call{{1, false}, {2, true}, {3, true}, {4, false}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("waiters called %v, want %v", calls, want)
	}
	// 3 applies late (reordered across a leader change): its waiter was
	// already told, and is not called twice.
	if l.Take(id(3)) != nil {
		t.Fatal("a proposal given up on found its waiter again")
	}
	if len(l.pending) != 1 || l.pending[0].seq != 5 {
		t.Fatalf("pending = %v, want only 5", l.pending)
	}
	// The 32-bit sequence wraps: 0xffffffff is older than 2.
	l.pending = []*pendingProp{{seq: 0xffffffff, w: &testWaiter{seq: 0xffffffff, calls: &calls}}, {seq: 2}}
	calls = nil
	l.Take(id(2))
	if len(calls) != 1 || len(l.pending) != 0 {
		t.Fatalf("after a wrap: calls %v, pending %d", calls, len(l.pending))
	}
}

type call struct {
	seq  uint32
	lost bool
}

// testWaiter records how it was told.
type testWaiter struct {
	seq   uint32
	calls *[]call
}

func (w *testWaiter) Applied(int64, *tree.Result, *statemachine.Batch) {
	*w.calls = append(*w.calls, call{seq: w.seq})
}
func (w *testWaiter) Lost() { *w.calls = append(*w.calls, call{seq: w.seq, lost: true}) }
