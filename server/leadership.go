package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/report"
	"github.com/zkgo/zkgo/tree"
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
func (s *Server) handOverWait() time.Duration {
	return 2 * time.Duration(raftnode.DefaultElectionTick) * RaftTickInterval(s.opts.TickTime)
}

// TransferLeadership hands this member's leadership to server to, or,
// with to < 0, to the voter that holds the most of the log among those
// heard from recently, and waits until it leads (at most two election
// timeouts, or until ctx ends). It returns the new leader's server id.
func (s *Server) TransferLeadership(ctx context.Context, to int64) (int64, error) {
	node := s.raft.raft()
	if node == nil || !s.clustered() {
		return 0, errors.New("not a member of an ensemble")
	}
	st := node.Status()
	if st.Leader != st.ID {
		return 0, fmt.Errorf("%w (server.%d is)", errNotLeader, memberID(st.Leader))
	}
	target, err := s.transferTarget(st, to)
	if err != nil {
		return 0, err
	}
	s.log.Info("handing leadership over", "to", memberID(target))
	node.TransferLeadership(ctx, target)
	if err := s.waitLeader(ctx, node, target); err != nil {
		return 0, err
	}
	return memberID(target), nil
}

// transferTarget picks the voter to hand leadership to.
func (s *Server) transferTarget(st raftnode.Status, to int64) (uint64, error) {
	var best uint64
	for _, v := range st.Voters {
		if v == st.ID || s.raft.isObserver(v) {
			continue
		}
		if to >= 0 {
			if memberID(v) == to {
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
func (s *Server) waitLeader(ctx context.Context, node *raftnode.Node, target uint64) error {
	deadline := time.Now().Add(s.handOverWait())
	for node.Leader() != target {
		if time.Now().After(deadline) {
			return fmt.Errorf("server.%d did not take over within %v", memberID(target), s.handOverWait())
		}
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errors.New("server stopped")
		}
	}
	return nil
}

// RequestLeadership asks the leader to hand leadership to this member and
// waits until it leads.
func (s *Server) RequestLeadership(ctx context.Context) error {
	node := s.raft.raft()
	if node == nil || !s.clustered() {
		return errors.New("not a member of an ensemble")
	}
	st := node.Status()
	switch {
	case st.Leader == st.ID:
		return nil
	case st.Leader == 0:
		return errors.New("no leader to ask")
	case s.raft.isObserver(st.ID) || !slices.Contains(st.Voters, st.ID):
		return errors.New("this member is not a voter")
	}
	// A follower's request goes to the leader (raft forwards it).
	node.TransferLeadership(ctx, st.ID)
	return s.waitLeader(ctx, node, st.ID)
}

// handOverBeforeStop is Shutdown's first step: a leader of an ensemble
// hands leadership over, within ctx and two election timeouts, so that
// the others do not wait an election timeout once it is gone. It reports
// whether it did.
func (s *Server) handOverBeforeStop(ctx context.Context) bool {
	node := s.raft.raft()
	if node == nil || !s.clustered() {
		return false
	}
	if st := node.Status(); st.Leader != st.ID || len(st.Voters) < 2 {
		return false
	}
	start := time.Now()
	to, err := s.TransferLeadership(ctx, -1)
	if err != nil {
		s.log.Warn("stopping the leader without handing leadership over", "err", err)
		return false
	}
	s.log.Info("handed leadership over before stopping", "to", to, "took", time.Since(start).Round(time.Millisecond))
	return true
}

// logInfo is lgif's report, in Keeper's order and names.
func (s *Server) logInfo() ([]report.KV, error) {
	node := s.raft.raft()
	if node == nil {
		return nil, errors.New("raft is not running")
	}
	li, err := node.LogInfo()
	if err != nil {
		return nil, err
	}
	return []report.KV{
		{Key: "first_log_idx", Value: li.FirstIndex}, {Key: "first_log_term", Value: li.FirstTerm},
		{Key: "last_log_idx", Value: li.LastIndex}, {Key: "last_log_term", Value: li.LastTerm},
		{Key: "last_committed_log_idx", Value: li.Committed}, {Key: "leader_committed_log_idx", Value: li.LeaderCommitted},
		{Key: "target_committed_log_idx", Value: li.LeaderCommitted}, {Key: "last_snapshot_idx", Value: li.Snapshot},
	}, nil
}

// operatorAllowed answers an operator command's request that lacks the
// identity it needs — the super user, or one that every permission on /
// is granted to by an entry other than world:anyone, as for snapshot —
// and reports whether it may run.
func (s *Server) operatorAllowed(w http.ResponseWriter, r *http.Request, name string) bool {
	fail := func(code int, msg string) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, "{\n  \"command\" : %s,\n  \"error\" : %s\n}\n", strconv.Quote(name), strconv.Quote(msg))
		return false
	}
	ids, ok := s.requestIdentity(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", "digest")
		return fail(http.StatusUnauthorized, "this command needs an identity: Authorization: digest user:password, or a client certificate over HTTPS")
	}
	var rootACL []proto.ACL
	s.sm.View(func(t *tree.Tree) {
		if n := t.Get("/"); n != nil {
			rootACL = n.ACL()
		}
	})
	if !snapshotAllowed(rootACL, ids) {
		return fail(http.StatusForbidden, "this command needs the super user or an identity that every permission on / is granted to by an ACL entry other than world:anyone")
	}
	return true
}
