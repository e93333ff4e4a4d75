package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
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

func TestTuneSetsAndStops(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	runtime.GC() // a live-heap measurement exists
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Tune(1<<30, time.Millisecond, stop)
	}()
	// A test binary's live heap is far below 1 GB: GOGC goes up.
	deadline := time.Now().Add(30 * time.Second)
	for gogc() <= 100 {
		if time.Now().After(deadline) {
			t.Fatal("GOGC not raised")
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-done
}
