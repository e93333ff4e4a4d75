// Package gctune gives the Go garbage collector a fixed amount of headroom
// over the live heap, for a server whose live heap is small and whose
// allocation rate is high.
//
// With the default GOGC=100 the heap may only double before the next
// collection: a zkgo server holding a few megabytes of znodes while it
// serves 150,000 writes per second (about 2 KB allocated per request)
// collects dozens of times per second, and the collector's CPU is taken
// from request handling. Tune sets GOGC after every collection so that the
// heap may grow by about the headroom beyond the live heap, and never sets
// it below 100 (a large tree then costs no more than GOGC=100 would).
// GOMEMLIMIT still applies.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
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

// Tuner adjusts GOGC after every garbage collection until Stop.
type Tuner struct {
	headroom uint64
	stopped  atomic.Bool
	cur      int // finalizer goroutine only
	sample   []metrics.Sample
}

// sentinel is garbage once armed: its finalizer runs after the next
// collection and arms a new one. It holds a pointer so that it is not a
// tiny allocation (which may share a block, delaying its finalizer).
type sentinel struct{ t *Tuner }

// Start starts tuning with the given headroom in bytes (0: nothing is
// tuned) and returns the Tuner. The caller should not start one when the
// user set GOGC.
func Start(headroom uint64) *Tuner {
	t := &Tuner{headroom: headroom, cur: -1, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	if headroom == 0 {
		t.stopped.Store(true)
		return t
	}
	t.adjust()
	t.arm()
	return t
}

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.stopped.Load() {
			return
		}
		s.t.adjust()
		s.t.arm()
	})
}

// adjust sets GOGC from the live heap the last collection measured.
func (t *Tuner) adjust() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := Percent(t.sample[0].Value.Uint64(), t.headroom)
	// Change it only by more than 10 %: SetGCPercent recomputes the heap
	// goal.
	if t.cur < 0 || p*10 > t.cur*11 || p*11 < t.cur*10 {
		debug.SetGCPercent(p)
		t.cur = p
	}
}

// Stop stops adjusting after the next collection; GOGC keeps its last
// value.
func (t *Tuner) Stop() { t.stopped.Store(true) }
