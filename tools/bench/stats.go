package bench

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds into HDR histograms with three
// significant digits, from 1 µs to 2 minutes (longer values are recorded
// as 2 minutes).
const (
	histLow  = int64(time.Microsecond)
	histHigh = int64(2 * time.Minute)
	histSig  = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histLow, histHigh, histSig) }

// series is one kind of measured operation ("get", "set", "acquire", ...).
// Workers record into cur; the reporter moves cur into total once a second
// while the run is measuring (after the warm-up), so recording never waits
// for the reporter's merging.
type series struct {
	name    string
	auxOnly bool // not counted in the run's totals

	mu      sync.Mutex // guards cur and curErrs
	cur     *hdrhistogram.Histogram
	curErrs int64

	// Owned by stats, under stats.mu.
	total *hdrhistogram.Histogram
	errs  int64
	spare *hdrhistogram.Histogram
	// ext, if not nil, replaces total and errs in the result (see
	// stats.setExternal).
	ext     *hdrhistogram.Histogram
	extErrs int64
}

func (s *series) aux() bool { return s.auxOnly }

// record records one successful operation that took d.
func (s *series) record(d time.Duration) {
	v := int64(d)
	if v < histLow {
		v = histLow
	} else if v > histHigh {
		v = histHigh
	}
	s.mu.Lock()
	s.cur.RecordValue(v)
	s.mu.Unlock()
}

// fail counts one failed operation (its latency is not recorded).
func (s *series) fail() {
	s.mu.Lock()
	s.curErrs++
	s.mu.Unlock()
}

// stats holds a run's series and its measuring window.
type stats struct {
	mu        sync.Mutex
	series    []*series
	measuring bool
	started   bool // begin was called
	start     time.Time
	end       time.Time
	interval  *hdrhistogram.Histogram // scratch: the last flushed interval, all series
	// extWindow replaces end - start in the result when external is set
	// (see setExternal).
	extWindow time.Duration
	external  bool
}

func newStats() *stats { return &stats{interval: newHist()} }

// add registers a series; call it before the run starts.
func (st *stats) add(name string) *series { return st.addSeries(name, false) }

// addAux registers a series that is reported on its own but not counted in
// the run's operations and latency.
func (st *stats) addAux(name string) *series { return st.addSeries(name, true) }

func (st *stats) addSeries(name string, aux bool) *series {
	s := &series{name: name, auxOnly: aux, cur: newHist(), total: newHist(), spare: newHist()}
	st.mu.Lock()
	st.series = append(st.series, s)
	st.mu.Unlock()
	return s
}

// flushLocked moves what was recorded since the last flush into the totals
// (only while measuring) and leaves the interval's histogram, all series
// merged, in st.interval. It returns the interval's error count.
func (st *stats) flushLocked() (errs int64) {
	st.interval.Reset()
	for _, s := range st.series {
		s.mu.Lock()
		h, e := s.cur, s.curErrs
		s.cur, s.curErrs = s.spare, 0
		s.mu.Unlock()
		if !s.auxOnly {
			st.interval.Merge(h)
		}
		if st.measuring {
			s.total.Merge(h)
			s.errs += e
		}
		h.Reset()
		s.spare = h
		errs += e
	}
	return errs
}

// begin ends the warm-up: what was recorded so far is dropped.
func (st *stats) begin() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.started {
		return
	}
	st.flushLocked()
	st.measuring, st.started = true, true
	st.start = time.Now()
}

// stop ends the measuring window; what is recorded later is dropped.
func (st *stats) stop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.measuring {
		if !st.started {
			st.started = true
			st.start = time.Now()
			st.end = st.start
		}
		return
	}
	st.flushLocked()
	st.measuring = false
	st.end = time.Now()
}

// setExternal makes the result report a measurement taken outside this
// process for s: h (latencies) and errs over window, instead of what s
// recorded here within the runner's window, which then only fed the
// progress line. lock -client curator uses it: its JVM runs its own
// warm-up and window and times each acquire itself.
func (st *stats) setExternal(s *series, h *hdrhistogram.Histogram, errs int64, window time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s.ext, s.extErrs = h, errs
	st.extWindow, st.external = window, true
}

// tickInfo is one interval of the progress line.
type tickInfo struct {
	ops, errs          int64
	p50, p99           time.Duration
	measuring, started bool
	start              time.Time
}

// tick flushes the last interval for the progress line.
func (st *stats) tick() tickInfo {
	st.mu.Lock()
	defer st.mu.Unlock()
	t := tickInfo{measuring: st.measuring, started: st.started, start: st.start}
	t.errs = st.flushLocked()
	t.ops = st.interval.TotalCount()
	if t.ops > 0 {
		t.p50 = time.Duration(st.interval.ValueAtQuantile(50))
		t.p99 = time.Duration(st.interval.ValueAtQuantile(99))
	}
	return t
}

// Latency summarizes a latency distribution, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(v int64) float64 { return float64(v) / 1e6 }
	return Latency{
		P50:  ms(h.ValueAtQuantile(50)),
		P90:  ms(h.ValueAtQuantile(90)),
		P99:  ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)),
		Max:  ms(h.Max()),
		Mean: h.Mean() / 1e6,
	}
}
