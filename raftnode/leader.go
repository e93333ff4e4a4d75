package raftnode

import (
	"context"
	"slices"

	"go.etcd.io/raft/v3"
)

// LeaderChange is a change of leadership seen by this member.
type LeaderChange struct {
	// Leader is the new leader's id, 0 while none is known.
	Leader uint64
	// Term is the term in which it leads.
	Term uint64
	// IsSelf is true when this member became the leader: it now has the
	// authority ZooKeeper gives a leader (e.g. to expire sessions) and
	// should first refresh whatever deadlines it tracks.
	IsSelf bool
	// ProposalsLost is set when leadership did not change but a proposal
	// forwarded to the leader was lost on the way.
	ProposalsLost bool
	// Silent is set, with Leader 0, when the member reports its leader
	// lost because it heard nothing from it for an election timeout (it
	// may be cut off); without it, Leader 0 means an election is under
	// way (a candidate's higher term, a leadership transfer), which
	// usually ends with a leader within an election timeout.
	Silent bool
}

// roleFor maps raft's state to a Role; a follower that is a learner in the
// current configuration is a learner.
func (n *Node) roleFor(state raft.StateType) Role {
	switch state {
	case raft.StateLeader:
		return RoleLeader
	case raft.StateCandidate:
		return RoleCandidate
	case raft.StatePreCandidate:
		return RolePreCandidate
	}
	n.confMu.Lock()
	learner := slices.Contains(n.confState.Learners, n.id) || slices.Contains(n.confState.LearnersNext, n.id)
	n.confMu.Unlock()
	if learner {
		return RoleLearner
	}
	return RoleFollower
}

// refreshRole re-evaluates learnership after the configuration changed.
func (n *Node) refreshRole() {
	if r := Role(n.role.Load()); r == RoleFollower || r == RoleLearner {
		n.role.Store(int32(n.roleFor(raft.StateFollower)))
	}
}

func (n *Node) notifyLeader(lc LeaderChange) {
	for {
		select {
		case n.leaderCh <- lc:
			return
		default:
			select {
			case <-n.leaderCh: // replace the value nobody read yet
			default:
			}
		}
	}
}

// Leader returns the leader's id as of the last Ready (0 if none known).
// It is cheap; Status asks raft itself.
func (n *Node) Leader() uint64 { return n.leader.Load() }

// Role returns the member's role as of the last Ready. It is cheap;
// Status asks raft itself.
func (n *Node) Role() Role { return Role(n.role.Load()) }

// LeaderChanges returns a channel that receives the latest leadership
// change. It holds one value: a change not yet received is replaced by a
// newer one, so a slow reader sees the latest state, not every step.
// There is one channel per Node: with several readers, each change goes
// to one of them.
func (n *Node) LeaderChanges() <-chan LeaderChange { return n.leaderCh }

// TransferLeadership asks the leader to hand leadership to transferee (a
// voter) and returns without waiting for the outcome, which LeaderChanges
// reports.
func (n *Node) TransferLeadership(ctx context.Context, transferee uint64) {
	n.withRaft(func(rn *raft.RawNode) error { rn.TransferLeader(transferee); return nil })
}

// RequestSnapshot asks for a snapshot now (ClickHouse Keeper's csnp): the
// apply goroutine takes one at its next turn, whatever SnapCount says,
// unless nothing was applied since the last one or one is being written
// (then it follows that one). It returns the index the snapshot will
// cover at least: the last applied entry.
func (n *Node) RequestSnapshot() uint64 {
	n.confSnapRetry.Store(true)
	n.snapDeferred.Store(true)
	select {
	case n.applyc <- applyJob{}:
	default:
	}
	return n.applied.Load()
}

// LogInfo is what the log holds (ClickHouse Keeper's lgif): its first and
// last entries (index and term), what is committed here and, on the
// leader, what the leader has committed, and the newest snapshot.
type LogInfo struct {
	FirstIndex, FirstTerm uint64
	LastIndex, LastTerm   uint64
	Committed             uint64
	LeaderCommitted       uint64 // the leader's own commit index as this member knows it
	Snapshot              uint64
}

// LogInfo returns what the log holds now.
func (n *Node) LogInfo() (LogInfo, error) {
	rs := n.st.RaftStorage()
	var li LogInfo
	var err error
	if li.FirstIndex, err = rs.FirstIndex(); err != nil {
		return li, err
	}
	if li.LastIndex, err = rs.LastIndex(); err != nil {
		return li, err
	}
	li.FirstTerm, _ = rs.Term(li.FirstIndex - 1) // the snapshot's term when compacted
	if t, err := rs.Term(li.FirstIndex); err == nil {
		li.FirstTerm = t
	}
	li.LastTerm, _ = rs.Term(li.LastIndex)
	st := n.Status()
	li.Committed, li.LeaderCommitted, li.Snapshot = st.Commit, st.Commit, st.Snapshot
	return li, nil
}
