package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/report"
	"github.com/zkgo/zkgo/tree"
)

// logInfo is lgif's report, in Keeper's order and names.
func (s *Server) logInfo() ([]report.KV, error) {
	node := s.raft.Raft()
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
		commandError(w, name, code, msg)
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

// TransferLeadership hands this member's leadership to server to, or,
// with to < 0, to the voter that holds the most of the log among those
// heard from recently, and waits until it leads (at most two election
// timeouts, or until ctx ends). It returns the new leader's server id.
func (s *Server) TransferLeadership(ctx context.Context, to int64) (int64, error) {
	return s.raft.TransferLeadership(ctx, to)
}

// RequestLeadership asks the leader to hand leadership to this member and
// waits until it leads.
func (s *Server) RequestLeadership(ctx context.Context) error {
	return s.raft.RequestLeadership(ctx)
}

// commandError answers AdminServer command name with an error, in the
// shape of ZooKeeper's CommandResponse.
func commandError(w http.ResponseWriter, name string, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, "{\n  \"command\" : %s,\n  \"error\" : %s\n}\n", strconv.Quote(name), strconv.Quote(msg))
}
