package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
)

// Prometheus metrics (metricsProvider.className=PrometheusMetricsProvider):
// the collectors named by metricTable (metrics_table.go) and the HTTP
// endpoint that serves them.
//
// Nothing here blocks the request path. Counters are the atomics of
// serverStats (and the proposer), read at scrape time by CounterFuncs, and
// kept whether or not metrics are served, like mntr's. Gauges are read at
// scrape time from gaugeSnapshot (gauges.go), which takes each lock it
// needs briefly and nothing in proportion to the tree. Histograms are
// client_golang's lock-free ones. Summaries (ZooKeeper's quantiles) are
// client_golang's: an observation appends to a buffer under the summary's
// own mutex; once per 500 observations, or when a scrape runs, the buffer
// is merged into the quantile streams, and an observation arriving then
// waits for that merge (bounded by the 500-sample buffer, microseconds).
// The summaries and histograms exist only when metrics are served
// (Server.met is nil otherwise and its methods do nothing).

// metricsServer holds the event-driven collectors and the HTTP endpoint.
// Its fields are set by newMetrics and never change.
type metricsServer struct {
	reg *prometheus.Registry
	log *slog.Logger

	// ZooKeeper's summaries (milliseconds or counts).
	fsyncTime, snapshotTime, batchSize prometheus.Summary
	readLatency, updateLatency         prometheus.Summary
	propagationLatency, electionTime   prometheus.Summary
	dbInit, snapLoad, txnsLoad         prometheus.Summary
	txnsLoaded                         prometheus.Summary
	// Watchers fired per event, by event type (watchFanOut).
	fanOut                             map[proto.EventType]prometheus.Summary
	walFsync, walEntries, snapDuration prometheus.Histogram
	requestDuration                    map[proto.OpCode]*opObserver // read-only after newMetrics
	stages                             [numStages]prometheus.Observer
	http                               *http.Server
	ln                                 net.Listener
}

// Histogram buckets, in seconds or entries.
var (
	requestBuckets  = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	fsyncBuckets    = prometheus.ExponentialBuckets(0.0001, 2, 17) // 100 µs … 6.5 s
	entriesBuckets  = prometheus.ExponentialBuckets(1, 2, 12)      // 1 … 2048
	snapshotBuckets = prometheus.ExponentialBuckets(0.01, 2, 14)   // 10 ms … 82 s
)

// newMetrics builds the registry from metricTable: s's counters and gauges
// as functions read at scrape time, and the summaries and histograms.
func newMetrics(s *Server) *metricsServer {
	m := &metricsServer{reg: prometheus.NewRegistry(), log: s.log}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(newGaugeCollector(s))

	summary := func(name string) prometheus.Summary {
		d := metricByName(name)
		obj := map[float64]float64{0.5: 0.05}
		if d.advanced {
			obj[0.9], obj[0.99] = 0.01, 0.001
		}
		// MaxAge and AgeBuckets default to the Java client's: ten
		// minutes in five buckets.
		sm := prometheus.NewSummary(prometheus.SummaryOpts{Name: d.name, Help: d.help, Objectives: obj})
		m.reg.MustRegister(sm)
		return sm
	}
	histogram := func(name string, buckets []float64) prometheus.Histogram {
		d := metricByName(name)
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: d.name, Help: d.help, Buckets: buckets})
		m.reg.MustRegister(h)
		return h
	}
	counter := func(name string, read func() int64) {
		d := metricByName(name)
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: d.name, Help: d.help},
			func() float64 { return float64(read()) }))
	}

	m.fsyncTime = summary("fsynctime")
	m.snapshotTime = summary("snapshottime")
	m.batchSize = summary("sync_processor_batch_size")
	m.readLatency = summary("readlatency")
	m.updateLatency = summary("updatelatency")
	m.propagationLatency = summary("propagation_latency")
	m.electionTime = summary("election_time")
	m.dbInit = summary("dbinittime")
	m.snapLoad = summary("startup_snap_load_time")
	m.txnsLoad = summary("startup_txns_load_time")
	m.txnsLoaded = summary("startup_txns_loaded")
	m.fanOut = map[proto.EventType]prometheus.Summary{
		proto.EventNodeCreated:         summary("node_created_watch_count"),
		proto.EventNodeDeleted:         summary("node_deleted_watch_count"),
		proto.EventNodeDataChanged:     summary("node_changed_watch_count"),
		proto.EventNodeChildrenChanged: summary("node_children_watch_count"),
	}
	m.walFsync = histogram("zkgo_wal_fsync_duration_seconds", fsyncBuckets)
	m.walEntries = histogram("zkgo_wal_fsync_entries", entriesBuckets)
	m.snapDuration = histogram("zkgo_snapshot_duration_seconds", snapshotBuckets)

	d := metricByName("zkgo_request_duration_seconds")
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.name, Help: d.help, Buckets: requestBuckets}, d.labels)
	m.reg.MustRegister(vec)
	m.requestDuration = make(map[proto.OpCode]*opObserver)
	for _, op := range proto.Ops() {
		if op.Kind != proto.KindNone {
			m.requestDuration[op.Code] = &opObserver{vec: vec, op: op.Name}
		}
	}

	d = metricByName("zkgo_request_stage_seconds")
	stageVec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.name, Help: d.help, Buckets: requestBuckets}, d.labels)
	m.reg.MustRegister(stageVec)
	for st, name := range stageNames {
		if stage(st) != stageFsync {
			m.stages[st] = stageVec.WithLabelValues(name)
		}
	}

	st := &s.stats
	counter("looking_count", st.lookingCount.Load)
	counter("connection_request_count", st.connectRequests.Load)
	counter("connection_rejected", func() int64 {
		return st.throttledConns.Load() + st.rejectedMaxCnxns.Load() + st.rejectedPerIP.Load()
	})
	counter("bytes_received_count", st.bytesReceived.Load)
	counter("sessionless_connections_expired", st.sessionlessExpired.Load)
	counter("throttled_ops", st.watchRefusals.Load)
	counter("response_bytes", st.responseBytes.Load)
	counter("watch_bytes", st.watchBytes.Load)
	counter("zkgo_raft_leader_changes_total", st.leaderChanges.Load)
	counter("zkgo_raft_proposals_dropped_total", s.prop.dropped.Load)
	counter("zkgo_session_expirations_total", s.sessions.expirations.Load)
	counter("zkgo_watch_notifications_total", st.watchNotifications.Load)
	counter("revalidate_count", st.revalidations.Load)
	counter("zkgo_connect_requests_abandoned_total", st.abandonedConnects.Load)
	counter("zkgo_audit_events_dropped_total", func() int64 {
		if s.audit == nil { // off, or not opened yet (Start)
			return 0
		}
		return s.audit.Dropped()
	})

	d = metricByName("zkgo_connections_rejected_total")
	for _, r := range []struct {
		reason string
		n      func() int64
	}{{"max_cnxns", st.rejectedMaxCnxns.Load}, {"max_client_cnxns", st.rejectedPerIP.Load}, {"throttle", st.throttledConns.Load}} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: d.name, Help: d.help,
			ConstLabels: prometheus.Labels{d.labels[0]: r.reason}}, func() float64 { return float64(r.n()) }))
	}
	d = metricByName("zkgo_snapshot_size_bytes")
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: d.name, Help: d.help},
		func() float64 { return float64(st.snapshotBytes.Load()) }))
	return m
}

// opObserver is the request-duration histogram of one operation, created
// in the vector when the operation is first answered (so that only
// operations in use have series) and kept, so that later observations take
// no lock of the vector.
type opObserver struct {
	vec *prometheus.HistogramVec
	op  string
	h   atomic.Pointer[prometheus.Observer]
}

func (o *opObserver) observe(seconds float64) {
	h := o.h.Load()
	if h == nil {
		obs := o.vec.WithLabelValues(o.op) // the same child for every caller
		o.h.CompareAndSwap(nil, &obs)
		h = &obs
	}
	(*h).Observe(seconds)
}

// The event hooks. Each is safe on a nil *metricsServer (metrics not
// served) and on any goroutine.

// request records a reply to a client request after d.
func (m *metricsServer) request(op proto.OpCode, write bool, d time.Duration) {
	if m == nil {
		return
	}
	if o := m.requestDuration[op]; o != nil {
		o.observe(d.Seconds())
	}
	if write {
		m.updateLatency.Observe(float64(d.Milliseconds()))
	} else {
		m.readLatency.Observe(float64(d.Milliseconds()))
	}
}

// stage records that a request spent d in st (stages.go).
func (m *metricsServer) stage(st stage, d time.Duration) {
	if m == nil {
		return
	}
	m.stages[st].Observe(d.Seconds())
}

// walSynced records a WAL fsync that made entries durable; it is
// storage.Options.OnWALSync (called on raft's run goroutine with the
// storage's lock held).
func (m *metricsServer) walSynced(entries int, d time.Duration) {
	if m == nil {
		return
	}
	m.fsyncTime.Observe(float64(d.Milliseconds()))
	m.batchSize.Observe(float64(entries))
	m.walFsync.Observe(d.Seconds())
	m.walEntries.Observe(float64(entries))
}

// snapshotTaken records a snapshot this member wrote and installed.
func (m *metricsServer) snapshotTaken(d time.Duration) {
	if m == nil {
		return
	}
	m.snapshotTime.Observe(float64(d.Milliseconds()))
	m.snapDuration.Observe(d.Seconds())
}

// applied records the propagation latency of a transaction created at
// txnTime (unix ms, the proposing member's clock) and applied at now.
func (m *metricsServer) Applied(now, txnTime int64) {
	if m == nil || txnTime <= 0 || now < txnTime {
		return
	}
	m.propagationLatency.Observe(float64(now - txnTime))
}

// startupLoad records how the member loaded its state when raft started
// (replica.onStartupLoad): the storage's open (reading the WAL), the
// snapshot's restore, and the replay of the committed entries after it.
func (m *metricsServer) startupLoad(open time.Duration, l raftnode.StartupLoad) {
	if m == nil {
		return
	}
	m.dbInit.Observe(float64((open + l.Snapshot + l.Replay).Milliseconds()))
	m.snapLoad.Observe(float64(l.Snapshot.Milliseconds()))
	m.txnsLoad.Observe(float64((open + l.Replay).Milliseconds()))
	m.txnsLoaded.Observe(float64(l.Entries))
}

// watchFanOut records that an event of type typ fired n watchers
// (watch.Manager.SetFanOutHook).
func (m *metricsServer) watchFanOut(typ proto.EventType, n int) {
	if m == nil {
		return
	}
	if sm := m.fanOut[typ]; sm != nil {
		sm.Observe(float64(n))
	}
}

// election records the time a member spent without a leader.
func (m *metricsServer) election(d time.Duration) {
	if m == nil {
		return
	}
	m.electionTime.Observe(float64(d.Milliseconds()))
}

// gaugeCollector reports the table's gauges read at scrape time, from one
// gaugeSnapshot per scrape (Server.gauges says which locks it takes).
type gaugeCollector struct {
	s     *Server
	defs  []*metricDef
	descs []*prometheus.Desc
}

func newGaugeCollector(s *Server) *gaugeCollector {
	c := &gaugeCollector{s: s}
	for i := range metricTable {
		d := &metricTable[i]
		if d.scope == notExported || d.read == nil {
			continue
		}
		c.defs = append(c.defs, d)
		c.descs = append(c.descs, prometheus.NewDesc(d.name, d.help, nil, nil))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the ensemble's gauges only on
// members of one, the leader's only on the leader, as ZooKeeper registers
// them.
func (c *gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.s.gauges()
	for i, d := range c.defs {
		switch {
		case d.scope == ensemble && !g.clustered, d.scope == leading && g.leader == nil:
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.GaugeValue, d.read(&g))
	}
}

// HTTP endpoint bounds.
const (
	metricsReadHeaderTimeout = 5 * time.Second
	metricsReadTimeout       = 10 * time.Second
	metricsWriteTimeout      = 30 * time.Second
	metricsIdleTimeout       = 60 * time.Second
	metricsMaxHeaderBytes    = 16 << 10
	metricsMaxScrapes        = 4 // concurrent scrapes; more are answered 503
)

// listen starts serving GET /metrics on addr, in a goroutine that
// returns when close is called.
func (m *metricsServer) listen(addr string, wg *sync.WaitGroup) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics endpoint (metricsProvider.httpHost/httpPort): %w", err)
	}
	mux := http.NewServeMux()
	// GET (and HEAD) only: ZooKeeper's provider refuses TRACE; the mux
	// answers other methods 405.
	mux.Handle("GET /metrics", m.handler())
	m.ln = ln
	m.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: metricsReadHeaderTimeout,
		ReadTimeout:       metricsReadTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       metricsIdleTimeout,
		MaxHeaderBytes:    metricsMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelDebug),
	}
	wg.Go(func() {
		if err := m.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics endpoint stopped", "err", err)
		}
	})
	m.log.Info("serving Prometheus metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// handler serves the registry in Prometheus's text format, at most
// metricsMaxScrapes scrapes at a time (more are answered 503). The
// metrics endpoint and the AdminServer's /metrics each have one.
func (m *metricsServer) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: metricsMaxScrapes,
		Timeout:             metricsWriteTimeout - time.Second,
	})
}

// close stops the endpoint and closes its connections.
func (m *metricsServer) close() {
	if m != nil && m.http != nil {
		m.http.Close()
	}
}

// noteLeaderChange counts a change of raft leader and, on a member of an
// ensemble, the time it spent without one (election_time, looking_count)
// and when it became leader (leader_uptime). leaderChanged calls it on the
// replica's followLeader goroutine, the only user of s.electionStart.
func (s *Server) noteLeaderChange(ch raftnode.LeaderChange) {
	s.stats.leaderChanges.Add(1)
	clustered := s.clustered()
	if ch.IsSelf && clustered {
		s.stats.leaderSince.Store(time.Now().UnixNano())
	} else {
		s.stats.leaderSince.Store(0)
	}
	if !clustered {
		return // standalone: leads its group of one from the start
	}
	if ch.Leader == 0 {
		s.stats.lookingCount.Add(1)
		s.electionStart = time.Now()
		return
	}
	if !s.electionStart.IsZero() {
		s.met.election(time.Since(s.electionStart))
		s.electionStart = time.Time{}
	}
}
