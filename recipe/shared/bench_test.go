package shared

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// BenchmarkAtomicLongContended: 4 sessions increment one AtomicLong; each
// op is one successful increment (conflicts are retried). Reports the
// optimistic tries per increment.
func BenchmarkAtomicLongContended(b *testing.B) {
	srv := zktest.Start(b)
	ctx := context.Background()
	const sessions = 4
	path := fmt.Sprintf("/bench-along-%d", time.Now().UnixNano())
	var ls []*AtomicLong
	for range sessions {
		c, err := zk.Connect(ctx, srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ls = append(ls, NewAtomicLong(c, path, WithRetry(zk.ExponentialBackoff{Base: time.Millisecond, Max: 10 * time.Millisecond})))
	}
	var mu sync.Mutex // guards tries
	tries := 0
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, l := range ls {
		n := b.N / sessions
		if i < b.N%sessions {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				for {
					r, err := l.Increment(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					tries += r.Stats.OptimisticTries
					mu.Unlock()
					if r.Succeeded {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(tries)/float64(b.N), "tries/op")
}
