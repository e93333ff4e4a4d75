package metrics

import (
	"time"

	"github.com/zkgo/zkgo/raftnode"
)

// Gauges is the state mntr and /metrics report, read in one go (the
// server's gauges method) so that the two always agree: both print from
// it.
type Gauges struct {
	MinLatency, MaxLatency int64 // ms
	AvgLatency             float64
	PacketsReceived        int64
	PacketsSent            int64
	AliveConnections       int // handshaken client connections
	ParkedConnections      int // of those, parked while idle
	// handshaken connections without mutual TLS, from loopback
	// addresses and from others
	NonMTLSLocal, NonMTLSRemote int
	TLSHandshakes               int64 // in progress
	AuthFailed                  int64
	LocalSessions               int // read-only connections' local sessions
	Outstanding                 int // requests in flight on those connections
	Znodes                      int
	DataSize                    int64 // approximate_data_size
	Ephemerals                  int
	GlobalSessions              int
	Watches                     int
	OpenFDs, MaxFDs             int64
	Uptime                      time.Duration
	Response                    ResponseSizes

	RaftOK     bool            // raft runs: Raft is valid
	Raft       raftnode.Status // Match only on a leader
	Clustered  bool
	QuorumSize int           // voting members (ensemble members only)
	Leader     *LeaderGauges // nil unless this member leads an ensemble
}

// LeaderGauges are ZooKeeper's leader-only gauges.
type LeaderGauges struct {
	Learners                 int // members that follow (voters, observers, non-voting)
	SyncedFollowers          int // voters within the promotion lag of the commit index
	SyncedNonVotingFollowers int // participants not voting yet, likewise
	SyncedObservers          int // observers, likewise
	Uptime                   time.Duration
}

// ResponseSizes are ZooKeeper's client response size stats (BufferStats):
// the size of the last, smallest and largest reply to a request, header
// and body without the length prefix; -1 before the first.
type ResponseSizes struct{ Last, Min, Max int64 }
