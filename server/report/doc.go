// Package report prints what the server reports: ZooKeeper's four-letter
// words as text and its AdminServer commands as JSON, in ZooKeeper 3.8's
// names, aliases and shapes, plus ClickHouse Keeper's operator words
// (ydld, rqld, csnp, lgif).
//
// It reads nothing of the server itself. The server implements Source,
// which hands out views — values read once (ServerStats, ConnInfo,
// SessionDump, the monitor values, …) — and the few actions the words
// take (resetting statistics, the trace mask, leadership and snapshot
// requests). Each number has one source: srvr and server_stats, cons and
// connections, mntr and monitor print the same view, and mntr's values
// are the gauges /metrics exports (package metrics).
//
// Heavy outputs (stat, cons, dump, wchc, wchp and their commands) walk
// every connection, session or watch; Source.Heavy computes them one at
// a time and reuses each for a second (CVE-2017-5637).
package report
