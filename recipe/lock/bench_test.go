package lock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// BenchmarkMutexContended: 8 sessions contend for one Mutex; each op is one
// acquire plus release (a handoff). Reports handoffs/s.
func BenchmarkMutexContended(b *testing.B) {
	srv := zktest.Start(b)
	ctx := context.Background()
	const sessions = 8
	path := fmt.Sprintf("/bench-mutex-%d", time.Now().UnixNano())
	var ms []*Mutex
	for i := 0; i < sessions; i++ {
		c, err := zk.Connect(ctx, srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ms = append(ms, NewMutex(c, path))
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n.Add(1) <= int64(b.N) {
				if _, err := m.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				if err := m.Unlock(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "handoffs/s")
}
