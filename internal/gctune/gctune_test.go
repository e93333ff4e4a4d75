package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{10 * mb, 128 * mb, 1280},
		{128 * mb, 128 * mb, 100},
		{1024 * mb, 128 * mb, 100},
		{0, 128 * mb, 3200},
		{512 << 10, 128 * mb, 3200},
		{64 * mb, 128 * mb, 200},
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d MB, %d MB) = %d, want %d", c.live/mb, c.headroom/mb, got, c.want)
		}
	}
}

func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

var sink [][]byte

// TestTunerFollowsLiveHeap: GOGC goes up while the live heap is small and
// back to about 100 after collections once it exceeds the headroom.
func TestTunerFollowsLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	runtime.GC()
	tu := Start(32 << 20)
	defer tu.Stop()
	if g := gogc(); g <= 100 {
		t.Fatalf("GOGC %d with a small live heap and 32 MB of headroom", g)
	}
	// 64 MB live: over the headroom.
	for i := 0; i < 64; i++ {
		sink = append(sink, make([]byte, 1<<20))
	}
	// (Within 10 % of 100: changes smaller than that are not made.)
	for i := 0; i < 100 && gogc() > 110; i++ {
		runtime.GC() // the finalizer adjusts after each collection
		runtime.Gosched()
	}
	if g := gogc(); g > 110 {
		t.Fatalf("GOGC %d with 64 MB live and 32 MB of headroom, want about 100", g)
	}
	sink = nil
}
