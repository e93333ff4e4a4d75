package server

import (
	"slices"
	"time"

	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/metrics"
	"github.com/zkgo/zkgo/server/replica"
	"github.com/zkgo/zkgo/tree"
)

// gauges reads the reported state. It takes, one at a time and each
// briefly: the tree's read lock (counts kept by the tree: no walk),
// Server.connsMu (one pass over the connections), watch.Manager's lock (a
// pass over the watched paths), the latency stats' mutex, and raft's
// (raftnode.Node.Status). Nothing it does is proportional to the number
// of znodes.
func (s *Server) gauges() metrics.Gauges {
	var g metrics.Gauges
	g.MinLatency, g.AvgLatency, g.MaxLatency, _ = s.stats.Lat.Get()
	g.PacketsReceived = s.stats.PacketsReceived.Load()
	g.PacketsSent = s.stats.PacketsSent.Load()
	g.Response = s.stats.Response.Get()
	s.sm.View(func(t *tree.Tree) {
		g.Znodes = t.NodeCount()
		g.DataSize = t.ApproximateDataSize()
		g.Ephemerals = t.EphemeralCount()
		g.GlobalSessions = t.SessionCount()
	})
	s.port.Gauges(&g)
	g.TLSHandshakes = s.stats.TLSHandshakes.Load()
	g.AuthFailed = s.stats.AuthFailed.Load()
	g.Watches = s.watches.Count()
	g.OpenFDs, g.MaxFDs = int64(openFDs()), maxFDs()
	g.Uptime = time.Since(s.started)
	g.Clustered = s.clustered()
	st, _, _, _, ok := s.raft.Status()
	if !ok {
		return g
	}
	g.RaftOK, g.Raft = true, st
	if !g.Clustered {
		return g
	}
	g.QuorumSize = len(st.Voters)
	if st.Role != raftnode.RoleLeader {
		return g
	}
	// A participant that rejoined under a new raft id is a non-voting
	// follower until it has caught up (members.go).
	l := &metrics.LeaderGauges{Learners: len(st.Match) - 1}
	for id, match := range st.Match {
		if id == st.ID || match+replica.PromoteLag < st.Commit {
			continue
		}
		switch {
		case slices.Contains(st.Voters, id):
			l.SyncedFollowers++
		case s.raft.IsObserver(id):
			l.SyncedObservers++
		default:
			l.SyncedNonVotingFollowers++
		}
	}
	if since := s.stats.LeaderSince.Load(); since != 0 {
		l.Uptime = time.Since(time.Unix(0, since))
	}
	g.Leader = l
	return g
}
