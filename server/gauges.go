package server

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/tree"
)

// gaugeSnapshot is the state mntr and /metrics report, read in one go by
// Server.gauges so that the two always agree: both print from it.
type gaugeSnapshot struct {
	minLatency, maxLatency int64 // ms
	avgLatency             float64
	packetsReceived        int64
	packetsSent            int64
	aliveConnections       int // handshaken client connections
	parkedConnections      int // of those, parked (connpark.go)
	// handshaken connections without mutual TLS, from loopback
	// addresses and from others
	nonMTLSLocal, nonMTLSRemote int
	tlsHandshakes               int64 // in progress
	authFailed                  int64
	localSessions               int // read-only connections' local sessions
	outstanding                 int // requests in flight on those connections
	znodes                      int
	dataSize                    int64 // approximate_data_size
	ephemerals                  int
	globalSessions              int
	watches                     int
	openFDs, maxFDs             int64
	uptime                      time.Duration
	response                    responseSizes

	raftOK     bool            // raft runs: raft is valid
	raft       raftnode.Status // Match only on a leader
	clustered  bool
	quorumSize int           // voting members (ensemble members only)
	leader     *leaderGauges // nil unless this member leads an ensemble
}

// leaderGauges are ZooKeeper's leader-only gauges.
type leaderGauges struct {
	learners                 int // members that follow (voters, observers, non-voting)
	syncedFollowers          int // voters within promoteLag of the commit index
	syncedNonVotingFollowers int // participants not voting yet, likewise
	syncedObservers          int // observers, likewise
	uptime                   time.Duration
}

// gauges reads the reported state. It takes, one at a time and each
// briefly: the tree's read lock (counts kept by the tree: no walk),
// Server.connsMu (one pass over the connections), watch.Manager's lock (a
// pass over the watched paths), the latency stats' mutex, and raft's
// (raftnode.Node.Status). Nothing it does is proportional to the number
// of znodes.
func (s *Server) gauges() gaugeSnapshot {
	var g gaugeSnapshot
	g.minLatency, g.avgLatency, g.maxLatency, _ = s.stats.lat.get()
	g.packetsReceived = s.stats.packetsReceived.Load()
	g.packetsSent = s.stats.packetsSent.Load()
	g.response = s.stats.response.get()
	s.sm.View(func(t *tree.Tree) {
		g.znodes = t.NodeCount()
		g.dataSize = t.ApproximateDataSize()
		g.ephemerals = t.EphemeralCount()
		g.globalSessions = t.SessionCount()
	})
	if s.idle != nil {
		g.parkedConnections = s.idle.count()
	}
	s.connsMu.Lock()
	for c := range s.conns {
		if !c.handshaken.Load() {
			continue
		}
		g.aliveConnections++
		g.outstanding += len(c.slots)
		if !c.mtls {
			if isLoopback(c.remoteIP) {
				g.nonMTLSLocal++
			} else {
				g.nonMTLSRemote++
			}
		}
		if c.localSession {
			g.localSessions++
		}
	}
	s.connsMu.Unlock()
	g.tlsHandshakes = s.stats.tlsHandshakes.Load()
	g.authFailed = s.stats.authFailed.Load()
	g.watches = s.watches.Count()
	g.openFDs, g.maxFDs = int64(openFDs()), maxFDs()
	g.uptime = time.Since(s.started)
	g.clustered = s.clustered()
	st, _, _, _, ok := s.raft.status()
	if !ok {
		return g
	}
	g.raftOK, g.raft = true, st
	if !g.clustered {
		return g
	}
	g.quorumSize = len(st.Voters)
	if st.Role != raftnode.RoleLeader {
		return g
	}
	// A participant that rejoined under a new raft id is a non-voting
	// follower until it has caught up (members.go).
	l := &leaderGauges{learners: len(st.Match) - 1}
	for id, match := range st.Match {
		if id == st.ID || match+promoteLag < st.Commit {
			continue
		}
		switch {
		case slices.Contains(st.Voters, id):
			l.syncedFollowers++
		case s.raft.isObserver(id):
			l.syncedObservers++
		default:
			l.syncedNonVotingFollowers++
		}
	}
	if since := s.stats.leaderSince.Load(); since != 0 {
		l.uptime = time.Since(time.Unix(0, since))
	}
	g.leader = l
	return g
}

// responseSizes are ZooKeeper's client response size stats (BufferStats):
// the size of the last, smallest and largest reply to a request, header
// and body without the length prefix; -1 before the first.
type responseSizes struct{ last, min, max int64 }

// responseStats keeps responseSizes with atomics: recorded by connection
// goroutines and the apply goroutine, read by mntr and scrapes.
type responseStats struct {
	last, min, max atomic.Int64 // -1 (after reset) until the first reply
}

func (r *responseStats) reset() {
	r.last.Store(-1)
	r.min.Store(-1)
	r.max.Store(-1)
}

func (r *responseStats) add(n int64) {
	r.last.Store(n)
	for {
		m := r.min.Load()
		if (m != -1 && m <= n) || r.min.CompareAndSwap(m, n) {
			break
		}
	}
	for {
		m := r.max.Load()
		if m >= n || r.max.CompareAndSwap(m, n) {
			break
		}
	}
}

func (r *responseStats) get() responseSizes {
	return responseSizes{last: r.last.Load(), min: r.min.Load(), max: r.max.Load()}
}

// isLoopback reports whether ip (a connection's remote address, without
// the port) is a loopback address: ZooKeeper's "local" connections.
func isLoopback(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Unmap().IsLoopback()
}
