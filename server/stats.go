package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// serverStats are the counters the four-letter words and /metrics report.
type serverStats struct {
	stages          stageStats // stages.go
	packetsReceived atomic.Int64
	packetsSent     atomic.Int64
	lat             latencyStats
	// throttled is the number of connections whose reader waits on
	// backpressure now; throttleEvents counts the waits.
	throttled, throttleEvents atomic.Int64
	// watchRefusals counts requests refused for the watch bound;
	// throttledConns, connections closed by the connection throttle.
	watchRefusals, throttledConns atomic.Int64
	// rejectedMaxCnxns and rejectedPerIP count connections refused for
	// maxCnxns and maxClientCnxns.
	rejectedMaxCnxns, rejectedPerIP atomic.Int64
	// response: sizes of replies to requests (reset by srst).
	response responseStats

	// Counters that only grow (srst leaves them), reported by /metrics
	// (server/metrics/table.go says what each counts).
	connectRequests    atomic.Int64 // ConnectRequests read
	bytesReceived      atomic.Int64 // request frame bytes, length prefixes not included
	sessionlessExpired atomic.Int64 // connections closed at the handshake deadline
	responseBytes      atomic.Int64 // reply bytes queued, length prefixes included
	watchBytes         atomic.Int64 // notification bytes queued, likewise
	watchNotifications atomic.Int64 // notifications queued
	revalidations      atomic.Int64 // resumed sessions moved here through the log (handshake)
	tlsHandshakes      atomic.Int64 // client TLS handshakes in progress (startTLS)
	authFailed         atomic.Int64 // failed client TLS handshakes and SASL authentications
	abandonedConnects  atomic.Int64 // resumes whose client had closed the connection (handshake)
	leaderChanges      atomic.Int64 // raft leader changes seen
	lookingCount       atomic.Int64 // changes to no leader (ensemble members)
	snapshotBytes      atomic.Int64 // size of the last snapshot written here
	memoryReturns      atomic.Int64 // collections after a large log was compacted (memrelease.go)
	snapshotNanos      atomic.Int64 // time it took to write and install
	// leaderSince is when this member last became leader of an ensemble
	// (unix ns), 0 when it is not leader.
	leaderSince atomic.Int64
}

func (st *serverStats) reset() {
	st.packetsReceived.Store(0)
	st.packetsSent.Store(0)
	st.lat.reset()
	st.response.reset()
}

// latencyStats tracks request latencies as ZooKeeper reports them: whole
// milliseconds, the average taken over whole-millisecond samples (so it
// always lies between min and max). The server keeps one, and each
// connection one for cons.
type latencyStats struct {
	mu             sync.Mutex // guards the fields below
	count, totalMs int64
	min, max, last time.Duration
}

func (l *latencyStats) add(d time.Duration) {
	l.mu.Lock()
	if l.count == 0 || d < l.min {
		l.min = d
	}
	if d > l.max {
		l.max = d
	}
	l.count++
	l.totalMs += d.Milliseconds()
	l.last = d
	l.mu.Unlock()
}

// get returns min, average, max and last in milliseconds.
func (l *latencyStats) get() (min int64, avg float64, max, last int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return 0, 0, 0, 0
	}
	return l.min.Milliseconds(), float64(l.totalMs) / float64(l.count), l.max.Milliseconds(), l.last.Milliseconds()
}

func (l *latencyStats) reset() {
	l.mu.Lock()
	l.count, l.totalMs, l.min, l.max, l.last = 0, 0, 0, 0, 0
	l.mu.Unlock()
}

// opName is the abbreviation cons shows for op.
func opName(op proto.OpCode) string {
	if o := proto.Op(op); o != nil {
		return o.Abbrev
	}
	return "NA"
}
