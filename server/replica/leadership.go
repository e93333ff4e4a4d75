package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zkgo/zkgo/raftnode"
)

// Operators' controls of leadership and of the log, as ClickHouse
// Keeper's four-letter words name them:
//
//	ydld  the leader hands leadership over to the most caught-up voter
//	rqld  this member asks the leader for leadership
//	csnp  take a snapshot now
//	lgif  what the log holds
//
// and, on SIGTERM, a leader hands leadership over before it stops
// (Shutdown), so that a rolling restart does not wait an election timeout
// for the leader's restart. A change of leader costs the connections that
// wait for a write theirs (their clients see a connection loss and
// resume at once), as any change of leader does.

// errNotLeader is TransferLeadership's answer on a follower.
var errNotLeader = errors.New("this member is not the leader")

// handOverWait bounds how long a transfer may take: two election
// timeouts.
func (r *Replica) HandOverWait() time.Duration {
	return 2 * time.Duration(raftnode.DefaultElectionTick) * RaftTickInterval(r.opts.TickTime)
}

// TransferLeadership hands this member's leadership to server to, or,
// with to < 0, to the voter that holds the most of the log among those
// heard from recently, and waits until it leads (at most two election
// timeouts, or until ctx ends). It returns the new leader's server id.
func (r *Replica) TransferLeadership(ctx context.Context, to int64) (int64, error) {
	node := r.Raft()
	if node == nil || !r.Clustered() {
		return 0, errors.New("not a member of an ensemble")
	}
	st := node.Status()
	if st.Leader != st.ID {
		return 0, fmt.Errorf("%w (server.%d is)", errNotLeader, MemberID(st.Leader))
	}
	target, err := r.transferTarget(st, to)
	if err != nil {
		return 0, err
	}
	r.log.Info("handing leadership over", "to", MemberID(target))
	node.TransferLeadership(ctx, target)
	if err := r.waitLeader(ctx, node, target); err != nil {
		return 0, err
	}
	return MemberID(target), nil
}

// transferTarget picks the voter to hand leadership to.
func (r *Replica) transferTarget(st raftnode.Status, to int64) (uint64, error) {
	var best uint64
	for _, v := range st.Voters {
		if v == st.ID || r.IsObserver(v) {
			continue
		}
		if to >= 0 {
			if MemberID(v) == to {
				return v, nil
			}
			continue
		}
		if !slices.Contains(st.Heard, v) {
			continue
		}
		if best == 0 || st.Match[v] > st.Match[best] {
			best = v
		}
	}
	switch {
	case to >= 0:
		return 0, fmt.Errorf("server.%d is not a voter of this ensemble", to)
	case best == 0:
		return 0, errors.New("no other voter is in touch with the leader")
	}
	return best, nil
}

// waitLeader waits until raft reports target as leader.
func (r *Replica) waitLeader(ctx context.Context, node *raftnode.Node, target uint64) error {
	deadline := time.Now().Add(r.HandOverWait())
	for node.Leader() != target {
		if time.Now().After(deadline) {
			return fmt.Errorf("server.%d did not take over within %v", MemberID(target), r.HandOverWait())
		}
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		case <-r.quit:
			return errors.New("server stopped")
		}
	}
	return nil
}

// RequestLeadership asks the leader to hand leadership to this member and
// waits until it leads.
func (r *Replica) RequestLeadership(ctx context.Context) error {
	node := r.Raft()
	if node == nil || !r.Clustered() {
		return errors.New("not a member of an ensemble")
	}
	st := node.Status()
	switch {
	case st.Leader == st.ID:
		return nil
	case st.Leader == 0:
		return errors.New("no leader to ask")
	case r.IsObserver(st.ID) || !slices.Contains(st.Voters, st.ID):
		return errors.New("this member is not a voter")
	}
	// A follower's request goes to the leader (raft forwards it).
	node.TransferLeadership(ctx, st.ID)
	return r.waitLeader(ctx, node, st.ID)
}

// handOverBeforeStop is Shutdown's first step: a leader of an ensemble
// hands leadership over, within ctx and two election timeouts, so that
// the others do not wait an election timeout once it is gone. It reports
// whether it did.
func (r *Replica) HandOverBeforeStop(ctx context.Context) bool {
	node := r.Raft()
	if node == nil || !r.Clustered() {
		return false
	}
	if st := node.Status(); st.Leader != st.ID || len(st.Voters) < 2 {
		return false
	}
	start := time.Now()
	to, err := r.TransferLeadership(ctx, -1)
	if err != nil {
		r.log.Warn("stopping the leader without handing leadership over", "err", err)
		return false
	}
	r.log.Info("handed leadership over before stopping", "to", to, "took", time.Since(start).Round(time.Millisecond))
	return true
}
