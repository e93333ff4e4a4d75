package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestLimit(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, other uint64
		ratio       float64
		floor       uint64
		want        uint64
	}{
		// ratio × live once that exceeds the floor
		{1000 * mb, 20 * mb, 1.25, 32 * mb, 20*mb + 1250*mb},
		// a small live heap gets the floor
		{10 * mb, 20 * mb, 1.25, 32 * mb, 20*mb + 10*mb + 32*mb},
		{0, 5 * mb, 1.25, 32 * mb, 37 * mb},
		// a ratio under 1 leaves the floor alone
		{100 * mb, 0, 0.5, 8 * mb, 108 * mb},
		// no overflow
		{math.MaxInt64, math.MaxInt64, 2, 0, math.MaxInt64},
	} {
		if got := Limit(c.live, c.other, c.ratio, c.floor); got != c.want {
			t.Errorf("Limit(%d, %d, %v, %d) = %d, want %d", c.live, c.other, c.ratio, c.floor, got, c.want)
		}
	}
}

func TestReturnable(t *testing.T) {
	for _, c := range []struct {
		st   Stats
		want uint64
	}{
		{Stats{Live: 100, Objects: 150, Free: 30}, 80},
		// the live heap shrank below what the last collection found
		{Stats{Live: 100, Objects: 90, Free: 30}, 30},
	} {
		if got := c.st.Returnable(); got != c.want {
			t.Errorf("%+v: Returnable %d, want %d", c.st, got, c.want)
		}
	}
}

func TestRead(t *testing.T) {
	runtime.GC()
	st, ok := Read()
	if !ok {
		t.Fatal("the runtime reports no memory classes")
	}
	if st.Live == 0 || st.Held < st.Objects+st.Free+st.Unused || st.Other == 0 {
		t.Fatalf("implausible %+v", st)
	}
}

var sink [][]byte

// TestTunerFollowsLiveHeap: the limit is set at Start, rises after a
// collection once the live heap grew, and Stop restores the limit there
// was before.
func TestTunerFollowsLiveHeap(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	runtime.GC()
	tu := Start(1.5, 16<<20)
	start := tu.Current()
	if got := debug.SetMemoryLimit(-1); got != start || start <= 0 || start == math.MaxInt64 {
		t.Fatalf("limit %d after Start (the Tuner says %d)", got, start)
	}
	// 64 MB more live heap: the limit must reach 1.5 × 64 MB.
	for range 64 {
		sink = append(sink, make([]byte, 1<<20))
	}
	for i := 0; i < 100 && tu.Current() < 96<<20; i++ {
		runtime.GC() // the finalizer adjusts after each collection
		runtime.Gosched()
	}
	if got := tu.Current(); got < 96<<20 {
		t.Fatalf("limit %d MB after 64 MB more live heap, from %d MB", got>>20, start>>20)
	}
	if got := debug.SetMemoryLimit(-1); got != tu.Current() {
		t.Fatalf("runtime limit %d, the Tuner set %d", got, tu.Current())
	}
	tu.Stop()
	if got := debug.SetMemoryLimit(-1); got != old {
		t.Fatalf("limit %d after Stop, want %d", got, old)
	}
	sink = nil
}
