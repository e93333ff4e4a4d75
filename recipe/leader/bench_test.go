package leader

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// BenchmarkLatchHandover: two latches; each op closes the leading one and
// measures until the other leads (graceful handover), then rejoins.
// Reports p50/p99 handover latency.
func BenchmarkLatchHandover(b *testing.B) {
	srv := zktest.Start(b)
	ctx := context.Background()
	path := fmt.Sprintf("/bench-latch-%d", time.Now().UnixNano())
	conns := make([]*zk.Conn, 2)
	for i := range conns {
		c, err := zk.Connect(ctx, srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	ls := []*Latch{NewLatch(conns[0], path, "a"), NewLatch(conns[1], path, "b")}
	ls[0].Start()
	if _, err := ls[0].Await(ctx); err != nil {
		b.Fatal(err)
	}
	ls[1].Start()
	lead := 0
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		other := 1 - lead
		t0 := time.Now()
		ls[lead].Close(ctx)
		if _, err := ls[other].Await(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		ls[lead] = NewLatch(conns[lead], path, fmt.Sprint(i))
		ls[lead].Start()
		// Wait until it has queued behind the new leader.
		for {
			ps, _ := ls[other].Participants(ctx)
			if len(ps) == 2 {
				break
			}
		}
		lead = other
	}
	b.StopTimer()
	for _, l := range ls {
		l.Close(ctx)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkSelectorTurns: 4 participants with auto-requeue, each holding
// leadership for 5 ms per turn. Reports turns/s.
func BenchmarkSelectorTurns(b *testing.B) {
	srv := zktest.Start(b)
	path := fmt.Sprintf("/bench-sel-%d", time.Now().UnixNano())
	var turns atomic.Int64
	done := make(chan struct{})
	var sels []*Selector
	for i := 0; i < 4; i++ {
		c, err := zk.Connect(context.Background(), srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		s := NewSelector(c, path, fmt.Sprint(i), func(ctx context.Context, g *recipe.Grant) error {
			time.Sleep(5 * time.Millisecond)
			if turns.Add(1) == int64(b.N) {
				close(done)
			}
			return nil
		}, WithAutoRequeue())
		sels = append(sels, s)
	}
	b.ResetTimer()
	start := time.Now()
	for _, s := range sels {
		s.Start()
	}
	<-done
	el := time.Since(start)
	b.StopTimer()
	for _, s := range sels {
		s.Close()
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "turns/s")
}
