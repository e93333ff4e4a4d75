package zk

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zktest"
)

func benchConn(b *testing.B) (*Conn, context.Context) {
	srv := zktest.Start(b)
	ctx := context.Background()
	c, err := Connect(ctx, srv.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.Create(ctx, "/bench", make([]byte, 100), openACL, proto.ModePersistent); err != nil {
		b.Fatal(err)
	}
	return c, ctx
}

// BenchmarkGet is one synchronous getData round trip (100-byte value).
func BenchmarkGet(b *testing.B) {
	c, ctx := benchConn(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := c.Get(ctx, "/bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSet is one synchronous setData round trip (100-byte value).
func BenchmarkSet(b *testing.B) {
	c, ctx := benchConn(b)
	data := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Set(ctx, "/bench", data, AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipelinedGet issues getData from 64 goroutines over one Conn:
// requests are batched into shared writes and replies matched in order.
func BenchmarkPipelinedGet(b *testing.B) {
	c, ctx := benchConn(b)
	b.ReportAllocs()
	b.ResetTimer()
	var n atomic.Int64
	var wg sync.WaitGroup
	const workers = 64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n.Add(1) <= int64(b.N) {
				if _, _, err := c.Get(ctx, "/bench"); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkPipelinedSet is BenchmarkPipelinedGet with setData.
func BenchmarkPipelinedSet(b *testing.B) {
	c, ctx := benchConn(b)
	data := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	var n atomic.Int64
	var wg sync.WaitGroup
	const workers = 64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n.Add(1) <= int64(b.N) {
				if _, err := c.Set(ctx, "/bench", data, AnyVersion); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
