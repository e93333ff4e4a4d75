// Package gctune gives the Go garbage collector a fixed amount of headroom
// over the live heap, for a server whose live heap is small and whose
// allocation rate is high.
//
// With the default GOGC=100 the heap may only double before the next
// collection: a zkgo server holding a few megabytes of znodes while it
// serves 150,000 writes per second (about 2 KB allocated per request)
// collects dozens of times per second, and the collector's CPU is taken
// from request handling. Tune raises GOGC so that the heap may grow by at
// least the headroom beyond the live heap, and lowers it back to 100 as
// the live heap grows (a large tree then costs no more than GOGC=100
// would). GOMEMLIMIT still applies.
package gctune

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// minHeap is the runtime's smallest heap goal at GOGC=100: the goal is
// never below minHeap×GOGC/100, so a live heap smaller than this counts as
// this large (else a tiny live heap would get a goal far above the
// headroom).
const minHeap = 4 << 20

// Percent returns the GOGC value that lets a heap of live bytes grow by
// about headroom bytes before the next collection, and never less than
// 100 (Go's default).
func Percent(live, headroom uint64) int {
	p := headroom * 100 / max(live, minHeap)
	if p < 100 {
		return 100
	}
	return int(min(p, 1<<30))
}

// Tune adjusts GOGC every interval from the live heap measured by the
// last collection, until stop is closed. It does nothing with a headroom
// of 0. The caller should not call it when the user set GOGC.
func Tune(headroom uint64, interval time.Duration, stop <-chan struct{}) {
	if headroom == 0 {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	cur := -1
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			p := Percent(sample[0].Value.Uint64(), headroom)
			// Change it only by more than 10 %: SetGCPercent triggers
			// a recomputation of the heap goal.
			if cur < 0 || p*10 > cur*11 || p*11 < cur*10 {
				debug.SetGCPercent(p)
				cur = p
			}
		}
		select {
		case <-t.C:
		case <-stop:
			return
		}
	}
}
