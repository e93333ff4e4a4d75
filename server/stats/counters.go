package stats

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/server/metrics"
)

// Counters are the server's counters, which the four-letter words and
// /metrics report. Every field is safe for concurrent use.
type Counters struct {
	Stages          Stages // where requests' time goes (stages.go here)
	PacketsReceived atomic.Int64
	PacketsSent     atomic.Int64
	Lat             Latency
	// Throttled is the number of connections whose reader waits on
	// backpressure now; ThrottleEvents counts the waits.
	Throttled, ThrottleEvents atomic.Int64
	// WatchRefusals counts requests refused for the watch bound;
	// ThrottledConns, connections closed by the connection throttle.
	WatchRefusals, ThrottledConns atomic.Int64
	// RejectedMaxCnxns and RejectedPerIP count connections refused for
	// maxCnxns and maxClientCnxns.
	RejectedMaxCnxns, RejectedPerIP atomic.Int64
	// Response: sizes of replies to requests (reset by srst).
	Response Response

	// Counters that only grow (srst leaves them), reported by /metrics
	// (server/metrics/table.go says what each counts).
	ConnectRequests    atomic.Int64 // ConnectRequests read
	BytesReceived      atomic.Int64 // request frame bytes, length prefixes not included
	SessionlessExpired atomic.Int64 // connections closed at the handshake deadline
	ResponseBytes      atomic.Int64 // reply bytes queued, length prefixes included
	WatchBytes         atomic.Int64 // notification bytes queued, likewise
	WatchNotifications atomic.Int64 // notifications queued
	Revalidations      atomic.Int64 // resumed sessions moved here through the log (handshake)
	TLSHandshakes      atomic.Int64 // client TLS handshakes in progress (startTLS)
	AuthFailed         atomic.Int64 // failed client TLS handshakes and SASL authentications
	AbandonedConnects  atomic.Int64 // resumes whose client had closed the connection (handshake)
	ConnectionParks    atomic.Int64 // idle connections handed to the idle poller (connpark.go)
	LeaderChanges      atomic.Int64 // raft leader changes seen
	LookingCount       atomic.Int64 // changes to no leader (ensemble members)
	SnapshotBytes      atomic.Int64 // size of the last snapshot written here
	MemoryReturns      atomic.Int64 // memory returns: after a large log was compacted, or at the end of a burst of writes (the server's memrelease.go)
	SnapshotNanos      atomic.Int64 // time it took to write and install
	// LeaderSince is when this member last became leader of an ensemble
	// (unix ns), 0 when it is not leader.
	LeaderSince atomic.Int64
}

// Reset is srst: the packet counts, latencies and response sizes start
// over.
func (st *Counters) Reset() {
	st.PacketsReceived.Store(0)
	st.PacketsSent.Store(0)
	st.Lat.Reset()
	st.Response.Reset()
}

// Latency tracks request latencies as ZooKeeper reports them: whole
// milliseconds, the average taken over whole-millisecond samples (so it
// always lies between min and max). The server keeps one, and each
// connection one for cons.
type Latency struct {
	mu             sync.Mutex // guards the fields below
	count, totalMs int64
	min, max, last time.Duration
}

// Add records one request's latency.
func (l *Latency) Add(d time.Duration) {
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

// Get returns min, average, max and last in milliseconds.
func (l *Latency) Get() (min int64, avg float64, max, last int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return 0, 0, 0, 0
	}
	return l.min.Milliseconds(), float64(l.totalMs) / float64(l.count), l.max.Milliseconds(), l.last.Milliseconds()
}

// Reset starts over.
func (l *Latency) Reset() {
	l.mu.Lock()
	l.count, l.totalMs, l.min, l.max, l.last = 0, 0, 0, 0, 0
	l.mu.Unlock()
}

// Response keeps metrics.ResponseSizes with atomics: recorded by connection
// goroutines and the apply goroutine, read by mntr and scrapes.
type Response struct {
	last, min, max atomic.Int64 // -1 (after reset) until the first reply
}

// Reset: no reply seen.
func (r *Response) Reset() {
	r.last.Store(-1)
	r.min.Store(-1)
	r.max.Store(-1)
}

// Add records a reply of n bytes.
func (r *Response) Add(n int64) {
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

// Get reads the sizes.
func (r *Response) Get() metrics.ResponseSizes {
	return metrics.ResponseSizes{Last: r.last.Load(), Min: r.min.Load(), Max: r.max.Load()}
}
