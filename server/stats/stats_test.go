package stats

import (
	"testing"
	"time"
)

// Latencies are whole milliseconds, and the average is taken over the
// whole-millisecond samples, so it always lies between min and max.
func TestLatency(t *testing.T) {
	var l Latency
	if mn, avg, mx, last := l.Get(); mn != 0 || avg != 0 || mx != 0 || last != 0 {
		t.Fatalf("empty: %d %v %d %d", mn, avg, mx, last)
	}
	for _, d := range []time.Duration{1900 * time.Microsecond, 3 * time.Millisecond, 500 * time.Microsecond} {
		l.Add(d)
	}
	mn, avg, mx, last := l.Get()
	if mn != 0 || mx != 3 || last != 0 || avg != float64(1+3+0)/3 {
		t.Fatalf("got min %d avg %v max %d last %d", mn, avg, mx, last)
	}
	l.Reset()
	if _, _, mx, _ := l.Get(); mx != 0 {
		t.Fatal("not reset")
	}
}

// Reply sizes read -1 until the first reply after a reset, then the
// last, smallest and largest.
func TestResponse(t *testing.T) {
	var r Response
	r.Reset()
	if g := r.Get(); g.Last != -1 || g.Min != -1 || g.Max != -1 {
		t.Fatalf("after reset: %+v", g)
	}
	for _, n := range []int64{40, 10, 90, 20} {
		r.Add(n)
	}
	if g := r.Get(); g.Last != 20 || g.Min != 10 || g.Max != 90 {
		t.Fatalf("got %+v", g)
	}
}

// Counters.Reset is srst: packets, latencies and reply sizes start over;
// the counters that only grow do not.
func TestCountersReset(t *testing.T) {
	var c Counters
	c.PacketsReceived.Add(3)
	c.ConnectRequests.Add(2)
	c.Lat.Add(time.Millisecond)
	c.Response.Add(7)
	c.Stages.Note(StageRead, time.Second)
	c.Reset()
	if c.PacketsReceived.Load() != 0 || c.Response.Get().Last != -1 {
		t.Fatal("srst left packets or reply sizes")
	}
	if c.ConnectRequests.Load() != 2 || c.Stages.Count[StageRead].Load() != 1 || c.Stages.NS[StageRead].Load() != int64(time.Second) {
		t.Fatal("srst reset a counter that only grows")
	}
}
