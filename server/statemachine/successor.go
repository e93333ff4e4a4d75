package statemachine

import (
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// successorLimit bounds the siblings expectSuccessor scans: lock and
// election queues are short; a wide parent is not one.
const successorLimit = 128

// expectSuccessor tells the watch manager which session a deletion
// probably wakes: the owner of the sibling after the deleted node by
// sequence counter, which a lock's, an election's or a queue's waiter
// watches (Curator's recipes, go-zookeeper's lock, zkgo's). That client
// is usually the next to write, and group commit may hold a lone write
// from another client a little for it (raftnode's late partner, through
// watch.Manager.Pending). The watch manager knows whom it notified
// itself; this also covers waiters connected to other members, which the
// leader, where writes are grouped, would otherwise never know of. Only
// the entry's first deletion is looked at, so the work per entry stays
// bounded (a closed session's many ephemeral nodes scan one parent).
// Called by applyItems with the tree lock held.
func (sm *Machine) expectSuccessor(txn *tree.Txn, res *tree.Result) {
	if txn.Session == 0 {
		return
	}
	for i := range res.Events {
		if ev := &res.Events[i]; ev.Type == proto.EventNodeDeleted {
			if s := sm.tree.SequenceSuccessor(ev.Path, successorLimit); s != 0 && s != txn.Session {
				sm.watches.Expect(s)
			}
			return
		}
	}
}
