// Package stats holds the server's counters: what the client front end,
// the replica and the apply loop count as they go (Counters, per-request
// Latency and Response sizes, the Stages of a request's time), read by the
// four-letter words, the AdminServer and /metrics. Every counter is an
// atomic or guarded by its own mutex: any goroutine may add to it.
package stats
