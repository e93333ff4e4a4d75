package raftnode

import (
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// TestApplyBeforePersist checks which Readies' committed entries go to the
// apply goroutine before the Ready is persisted: only entries already in
// the log on disk, and never together with a snapshot from the leader.
func TestApplyBeforePersist(t *testing.T) {
	ents := func(from, to uint64) []raftpb.Entry {
		var es []raftpb.Entry
		for i := from; i <= to; i++ {
			es = append(es, raftpb.Entry{Term: 1, Index: i})
		}
		return es
	}
	snap := raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 5, Term: 1}}
	for _, c := range []struct {
		name      string
		rd        raft.Ready
		persisted uint64
		want      bool
	}{
		{"nothing committed", raft.Ready{Entries: ents(5, 6)}, 4, false},
		{"committed and on disk (leader, group of one)", raft.Ready{CommittedEntries: ents(3, 4), Entries: ents(5, 6)}, 4, true},
		{"committed, partly on disk", raft.Ready{CommittedEntries: ents(3, 5), Entries: ents(5, 6)}, 4, false},
		{"committed in the Ready that brings them (follower)", raft.Ready{CommittedEntries: ents(5, 6), Entries: ents(5, 6)}, 4, false},
		{"a snapshot from the leader", raft.Ready{Snapshot: snap, CommittedEntries: ents(6, 6)}, 9, false},
	} {
		if got := applyBeforePersist(c.rd, c.persisted); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
