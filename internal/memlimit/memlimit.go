// Package memlimit keeps the Go runtime's soft memory limit
// (debug.SetMemoryLimit) at a multiple of the live heap, re-derived after
// every garbage collection, so that a process whose live heap is large
// holds about that multiple of it while it allocates, and reports how
// much memory the runtime holds beyond the live heap (what a collection
// and a scavenge could give back).
//
// GOGC alone lets the heap grow to twice the live heap (GOGC=100) before
// the next collection, and the runtime keeps those pages afterwards: a
// server holding 230 MB of znodes under a steady write load had an RSS of
// about 2.4 times that. A memory limit of ratio × live heap (plus the
// runtime's memory outside the heap) makes the collector run when the
// heap reaches it and the scavenger give back what is above it. The limit
// follows the live heap: it is set again after every collection, from the
// live heap that collection found, so it never stays below a heap that
// grew (the collector would then run continuously, up to the runtime's
// cap of half the CPU).
package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Limit returns the memory limit for a live heap of live bytes and other
// bytes of runtime memory outside the heap (stacks, the runtime's
// metadata): other + live × ratio, but at least other + live + floor
// (a small live heap then still gets floor bytes of headroom, so that it
// is not collected after every few allocations).
func Limit(live, other uint64, ratio float64, floor uint64) uint64 {
	grow := 0.0
	if ratio > 1 {
		grow = float64(live) * (ratio - 1)
	}
	l := float64(other) + float64(live) + max(grow, float64(floor))
	if l >= math.MaxInt64 {
		return math.MaxInt64
	}
	return uint64(l)
}

// sample indices
const (
	sLive = iota
	sTotal
	sReleased
	sObjects
	sFree
	sUnused
	nSamples
)

func newSamples() []metrics.Sample {
	s := make([]metrics.Sample, nSamples)
	s[sLive].Name = "/gc/heap/live:bytes"
	s[sTotal].Name = "/memory/classes/total:bytes"
	s[sReleased].Name = "/memory/classes/heap/released:bytes"
	s[sObjects].Name = "/memory/classes/heap/objects:bytes"
	s[sFree].Name = "/memory/classes/heap/free:bytes"
	s[sUnused].Name = "/memory/classes/heap/unused:bytes"
	return s
}

// Stats is the runtime's memory, as the limit is derived from it.
type Stats struct {
	// Live is the live heap the last collection found.
	Live uint64
	// Held is the memory the runtime has from the operating system and
	// has not given back (what the memory limit bounds).
	Held uint64
	// Objects is the memory of heap objects, live or not yet collected.
	Objects uint64
	// Free is heap memory free and not yet given back to the operating
	// system; Unused is the unused part of spans that hold objects.
	Free, Unused uint64
	// Other is Held outside the heap's objects, free and unused memory:
	// goroutine stacks and the runtime's own structures.
	Other uint64
}

// Returnable is what a collection and a scavenge could give back: the
// free heap and the objects allocated since the last collection
// (garbage, if the live heap did not grow). It does not count objects
// that were live at the last collection and are garbage now.
func (s Stats) Returnable() uint64 {
	return s.Free + s.Objects - min(s.Live, s.Objects)
}

func read(s []metrics.Sample) (Stats, bool) {
	metrics.Read(s)
	for _, x := range s {
		if x.Value.Kind() != metrics.KindUint64 {
			return Stats{}, false
		}
	}
	v := func(i int) uint64 { return s[i].Value.Uint64() }
	st := Stats{
		Live:    v(sLive),
		Held:    v(sTotal) - v(sReleased),
		Objects: v(sObjects),
		Free:    v(sFree),
		Unused:  v(sUnused),
	}
	heap := st.Objects + st.Free + st.Unused
	if st.Held > heap {
		st.Other = st.Held - heap
	}
	return st, true
}

// Read returns the runtime's memory now (ok false if the runtime does
// not report it).
func Read() (Stats, bool) { return read(newSamples()) }

// Tuner sets the memory limit after every garbage collection until Stop.
type Tuner struct {
	ratio float64
	floor uint64
	prev  int64
	limit atomic.Int64 // the last limit set

	mu      sync.Mutex // orders adjust and Stop
	stopped bool
	sample  []metrics.Sample
}

// sentinel is garbage once armed: its finalizer runs after the next
// collection and arms a new one. It holds a pointer so that it is not a
// tiny allocation (which may share a block, delaying its finalizer).
type sentinel struct{ t *Tuner }

// Start sets the memory limit to Limit(live, other, ratio, floor) now and
// after every collection, and returns the Tuner. The caller should not
// start one when the user set GOMEMLIMIT.
func Start(ratio float64, floor uint64) *Tuner {
	t := &Tuner{ratio: ratio, floor: floor, sample: newSamples()}
	t.prev = debug.SetMemoryLimit(-1)
	t.adjust()
	t.arm()
	return t
}

func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t: t}, func(s *sentinel) {
		if s.t.adjust() {
			s.t.arm()
		}
	})
}

// adjust sets the limit from the live heap the last collection found; it
// returns false once stopped.
func (t *Tuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	if st, ok := read(t.sample); ok {
		l := int64(min(Limit(st.Live, st.Other, t.ratio, t.floor), math.MaxInt64))
		debug.SetMemoryLimit(l)
		t.limit.Store(l)
	}
	return true
}

// Current returns the limit the Tuner set last.
func (t *Tuner) Current() int64 { return t.limit.Load() }

// Stop stops adjusting and restores the limit there was before Start.
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetMemoryLimit(t.prev)
	}
}
