// Package metrics is the server's Prometheus metrics, as ZooKeeper's
// PrometheusMetricsProvider exposes them (metricsProvider.className): the
// table of every metric Apache ZooKeeper 3.8 registers, each exported
// under the same name and type or marked not exported with the reason,
// then zkgo's own (table.go); the collectors built from it; and the
// /metrics endpoint.
//
// The package reads nothing of the server itself: the server hands New
// its Sources (counters and gauges, read at scrape time) and calls the
// event hooks (Request, Stage, WALSynced, …) where events happen. Gauges
// is the snapshot mntr prints too, so the two always agree.
//
// Nothing here blocks the request path. Counters are the server's
// atomics, read at scrape time by CounterFuncs. Gauges are read at scrape
// time through Sources.Gauges, which takes each lock it needs briefly and
// nothing in proportion to the tree. Histograms are client_golang's
// lock-free ones. Summaries (ZooKeeper's quantiles) are client_golang's:
// an observation appends to a buffer under the summary's own mutex; once
// per 500 observations, or when a scrape runs, the buffer is merged into
// the quantile streams, and an observation arriving then waits for that
// merge (bounded by the 500-sample buffer, microseconds). The hooks do
// nothing on a nil *Metrics (metrics not served).
package metrics
