package metrics

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

// Metrics holds the event-driven collectors, the registry and the HTTP
// endpoint. Its fields are set by New and never change (but ln and http,
// set by Listen before it serves).
type Metrics struct {
	reg *prometheus.Registry
	log *slog.Logger

	// ZooKeeper's summaries (milliseconds or counts).
	fsyncTime, snapshotTime, batchSize prometheus.Summary
	readLatency, updateLatency         prometheus.Summary
	propagationLatency, electionTime   prometheus.Summary
	dbInit, snapLoad, txnsLoad         prometheus.Summary
	txnsLoaded                         prometheus.Summary
	// Watchers fired per event, by event type (WatchFanOut).
	fanOut                             map[proto.EventType]prometheus.Summary
	walFsync, walEntries, snapDuration prometheus.Histogram
	requestDuration                    map[proto.OpCode]*opObserver // read-only after New
	stages                             []prometheus.Observer        // by stage index; nil: not recorded
	http                               *http.Server
	ln                                 net.Listener
}

// Sources are what the server offers the collectors: every function is
// called at scrape time, on the scraping goroutine.
type Sources struct {
	// Log receives the endpoint's errors.
	Log *slog.Logger
	// Gauges reads one snapshot of the gauges per scrape.
	Gauges func() Gauges
	// Counters reads each counter of the table by its name (every name
	// must be a counter of the table; New panics otherwise, a bug the
	// tests find at once).
	Counters map[string]func() int64
	// Rejected reads zkgo_connections_rejected_total by reason.
	Rejected map[string]func() int64
	// SnapshotBytes reads zkgo_snapshot_size_bytes.
	SnapshotBytes func() int64
	// Stages names the request stages (Stage's index), "" for a stage
	// not recorded in zkgo_request_stage_seconds.
	Stages []string
}

// Histogram buckets, in seconds or entries.
var (
	requestBuckets  = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	fsyncBuckets    = prometheus.ExponentialBuckets(0.0001, 2, 17) // 100 µs … 6.5 s
	entriesBuckets  = prometheus.ExponentialBuckets(1, 2, 12)      // 1 … 2048
	snapshotBuckets = prometheus.ExponentialBuckets(0.01, 2, 14)   // 10 ms … 82 s
)

// New builds the registry from the table: src's counters and gauges as
// functions read at scrape time, and the summaries and histograms.
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), log: src.Log}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(newGaugeCollector(src.Gauges))

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
	m.stages = make([]prometheus.Observer, len(src.Stages))
	for i, name := range src.Stages {
		if name != "" {
			m.stages[i] = stageVec.WithLabelValues(name)
		}
	}

	for name, read := range src.Counters {
		d := metricByName(name)
		if d.kind != kindCounter {
			panic("metrics: " + name + " is not a counter")
		}
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: d.name, Help: d.help},
			func() float64 { return float64(read()) }))
	}
	d = metricByName("zkgo_connections_rejected_total")
	for reason, n := range src.Rejected {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: d.name, Help: d.help,
			ConstLabels: prometheus.Labels{d.labels[0]: reason}}, func() float64 { return float64(n()) }))
	}
	d = metricByName("zkgo_snapshot_size_bytes")
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: d.name, Help: d.help},
		func() float64 { return float64(src.SnapshotBytes()) }))
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

// The event hooks. Each is safe on a nil *Metrics (metrics not served)
// and on any goroutine.

// Request records a reply to a client request after d.
func (m *Metrics) Request(op proto.OpCode, write bool, d time.Duration) {
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

// Stage records that a request spent d in stage st (an index of
// Sources.Stages).
func (m *Metrics) Stage(st int, d time.Duration) {
	if m == nil || st < 0 || st >= len(m.stages) || m.stages[st] == nil {
		return
	}
	m.stages[st].Observe(d.Seconds())
}

// WALSynced records a WAL fsync that made entries durable; it is
// storage.Options.OnWALSync (called on raft's run goroutine with the
// storage's lock held).
func (m *Metrics) WALSynced(entries int, d time.Duration) {
	if m == nil {
		return
	}
	m.fsyncTime.Observe(float64(d.Milliseconds()))
	m.batchSize.Observe(float64(entries))
	m.walFsync.Observe(d.Seconds())
	m.walEntries.Observe(float64(entries))
}

// SnapshotTaken records a snapshot this member wrote and installed.
func (m *Metrics) SnapshotTaken(d time.Duration) {
	if m == nil {
		return
	}
	m.snapshotTime.Observe(float64(d.Milliseconds()))
	m.snapDuration.Observe(d.Seconds())
}

// Applied records the propagation latency of a transaction created at
// txnTime (unix ms, the proposing member's clock) and applied at now.
func (m *Metrics) Applied(now, txnTime int64) {
	if m == nil || txnTime <= 0 || now < txnTime {
		return
	}
	m.propagationLatency.Observe(float64(now - txnTime))
}

// StartupLoad records how the member loaded its state when raft started
// (replica.onStartupLoad): the storage's open (reading the WAL), the
// snapshot's restore, and the replay of the committed entries after it.
func (m *Metrics) StartupLoad(open time.Duration, l raftnode.StartupLoad) {
	if m == nil {
		return
	}
	m.dbInit.Observe(float64((open + l.Snapshot + l.Replay).Milliseconds()))
	m.snapLoad.Observe(float64(l.Snapshot.Milliseconds()))
	m.txnsLoad.Observe(float64((open + l.Replay).Milliseconds()))
	m.txnsLoaded.Observe(float64(l.Entries))
}

// WatchFanOut records that an event of type typ fired n watchers
// (watch.Manager.SetFanOutHook).
func (m *Metrics) WatchFanOut(typ proto.EventType, n int) {
	if m == nil {
		return
	}
	if sm := m.fanOut[typ]; sm != nil {
		sm.Observe(float64(n))
	}
}

// Election records the time a member spent without a leader.
func (m *Metrics) Election(d time.Duration) {
	if m == nil {
		return
	}
	m.electionTime.Observe(float64(d.Milliseconds()))
}

// gaugeCollector reports the table's gauges read at scrape time, from
// one Gauges snapshot per scrape.
type gaugeCollector struct {
	read  func() Gauges
	defs  []*metricDef
	descs []*prometheus.Desc
}

func newGaugeCollector(read func() Gauges) *gaugeCollector {
	c := &gaugeCollector{read: read}
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
	g := c.read()
	for i, d := range c.defs {
		switch {
		case d.scope == ensemble && !g.Clustered, d.scope == leading && g.Leader == nil:
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

// Listen starts serving GET /metrics on addr, in a goroutine that
// returns when close is called.
func (m *Metrics) Listen(addr string, wg *sync.WaitGroup) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics endpoint (metricsProvider.httpHost/httpPort): %w", err)
	}
	mux := http.NewServeMux()
	// GET (and HEAD) only: ZooKeeper's provider refuses TRACE; the mux
	// answers other methods 405.
	mux.Handle("GET /metrics", m.Handler())
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

// Handler serves the registry in Prometheus's text format, at most
// metricsMaxScrapes scrapes at a time (more are answered 503). The
// metrics endpoint and the AdminServer's /metrics each have one.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: metricsMaxScrapes,
		Timeout:             metricsWriteTimeout - time.Second,
	})
}

// Close stops the endpoint and closes its connections.
func (m *Metrics) Close() {
	if m != nil && m.http != nil {
		m.http.Close()
	}
}

// Addr is the metrics endpoint's address, nil before Listen (or on a nil
// *Metrics).
func (m *Metrics) Addr() net.Addr {
	if m == nil || m.ln == nil {
		return nil
	}
	return m.ln.Addr()
}
