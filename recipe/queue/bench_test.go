package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// BenchmarkPutTake: one producer and one consumer session; each op is one
// item put and then taken (and acked), with and without a lock path.
func BenchmarkPutTake(b *testing.B) {
	for _, lockSafe := range []bool{false, true} {
		b.Run(fmt.Sprintf("lockSafe=%v", lockSafe), func(b *testing.B) {
			srv := zktest.Start(b)
			ctx := context.Background()
			path := fmt.Sprintf("/bench-queue-%d", time.Now().UnixNano())
			var opts []Option
			if lockSafe {
				opts = append(opts, WithLockPath(path+"-locks"))
			}
			var qs []*Queue
			for range 2 {
				c, err := zk.Connect(ctx, srv.Addr())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				qs = append(qs, New(c, path, opts...))
			}
			value := make([]byte, 100)
			b.ResetTimer()
			for range b.N {
				if err := qs[0].Put(ctx, value); err != nil {
					b.Fatal(err)
				}
				m, err := qs[1].Take(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := m.Ack(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
