package cache

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// The benchmarks run against zkgo (one in-process server for the whole
// run) and against the Apache ZooKeeper that TestMain started:
//
//	go test ./recipe/cache -run '^$' -bench . -benchtime 5x

var benchZkgo struct {
	once sync.Once
	srv  *zktest.Server
	err  error
}

// benchServers runs fn as a sub-benchmark per server.
func benchServers(b *testing.B, fn func(b *testing.B, addr string)) {
	b.Run("zkgo", func(b *testing.B) {
		benchZkgo.once.Do(func() { benchZkgo.srv, benchZkgo.err = zktest.New() })
		if benchZkgo.err != nil {
			b.Fatal(benchZkgo.err)
		}
		fn(b, benchZkgo.srv.Addr())
	})
	b.Run("apache", func(b *testing.B) {
		addr, err := recipetest.ApacheAddr()
		if err != nil {
			b.Skip(apachezk.SkipMessage(err))
		}
		fn(b, addr)
	})
}

func benchConnect(b *testing.B, addr string) *zk.Conn {
	b.Helper()
	c, err := zk.Connect(context.Background(), addr, zk.WithSessionTimeout(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// benchTrees remembers the trees made for BenchmarkTreeBuild, by server.
var benchTrees = struct {
	sync.Mutex
	roots map[string]string
}{roots: map[string]string{}}

const (
	treeParents  = 100
	treeChildren = 1000 // 100 x 1,000 = 100,000 leaves (100,101 nodes)
)

// populated returns the root of a tree of 100,101 nodes on addr (16 bytes
// of data each), made once per server with pipelined creates.
func populated(b *testing.B, addr string) string {
	benchTrees.Lock()
	defer benchTrees.Unlock()
	if r, ok := benchTrees.roots[addr]; ok {
		return r
	}
	ctx := context.Background()
	c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(30*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	root := fmt.Sprintf("/bench-tree-%d", time.Now().UnixNano())
	data := []byte("0123456789abcdef")
	if _, err := c.Create(ctx, root, data, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		b.Fatal(err)
	}
	paths := make(chan string, 1024)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 128 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range paths {
				if _, err := c.Create(ctx, p, data, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
	for i := range treeParents {
		parent := fmt.Sprintf("%s/p%03d", root, i)
		if _, err := c.Create(ctx, parent, data, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			b.Fatal(err)
		}
		for j := range treeChildren {
			paths <- fmt.Sprintf("%s/n%04d", parent, j)
		}
	}
	close(paths)
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.Logf("%s: created %d nodes in %v", addr, treeParents*(treeChildren+1)+1, time.Since(start).Round(time.Millisecond))
	benchTrees.roots[addr] = root
	return root
}

// BenchmarkTreeBuild: one op is the initial build of a TreeCache of
// 100,101 nodes (Start returns once Initialized is sent). Reports the
// build time, nodes/s, and the heap the cached tree takes per node.
func BenchmarkTreeBuild(b *testing.B) {
	benchServers(b, func(b *testing.B, addr string) {
		root := populated(b, addr)
		c := benchConnect(b, addr)
		ctx := context.Background()
		var perNode float64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			tc := NewTree(c, root)
			b.StartTimer()
			if err := tc.Start(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if n := tc.Len(); n != treeParents*(treeChildren+1)+1 {
				b.Fatalf("cached %d nodes", n)
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			perNode = float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(tc.Len())
			runtime.KeepAlive(tc)
			tc.Close()
			b.StartTimer()
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/build")
		b.ReportMetric(float64(treeParents*(treeChildren+1)+1)*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
		b.ReportMetric(perNode, "B/node")
	})
}

// BenchmarkEventLatency: one op is a setData by another session and the
// wait for the cache's Changed event (write sent → event received), with
// both kinds of watches. Reports p50 and p99.
func BenchmarkEventLatency(b *testing.B) {
	benchServers(b, func(b *testing.B, addr string) {
		for _, m := range modes {
			b.Run(m.name, func(b *testing.B) {
				ctx := context.Background()
				w, c := benchConnect(b, addr), benchConnect(b, addr)
				root := fmt.Sprintf("/bench-latency-%d", time.Now().UnixNano())
				for _, p := range []string{root, root + "/n"} {
					if _, err := w.Create(ctx, p, nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
						b.Fatal(err)
					}
				}
				tc := NewTree(c, root, m.opts...)
				evs := tc.Events()
				if err := tc.Start(ctx); err != nil {
					b.Fatal(err)
				}
				defer tc.Close()
				waitType(b, evs, Initialized)
				lat := make([]time.Duration, 0, b.N)
				data := make([]byte, 100)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if _, err := w.Set(ctx, root+"/n", data, -1); err != nil {
						b.Fatal(err)
					}
					for ev := nextEvent(b, evs); ev.Type != Changed; ev = nextEvent(b, evs) {
					}
					lat = append(lat, time.Since(t0))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	})
}
