package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
)

// These benchmarks run a workload against an in-process, durable zkgo
// server (a data directory, fsync before every reply, as "zkgo server"
// runs) so that a CPU or heap profile shows the server's code; "zkgo
// server" itself has no profiling flag. They are skipped by go test ./...
// (benchmarks only run with -bench):
//
//	go test ./tools/bench -run '^$' -bench 'Server/set$' -benchtime 1x -cpuprofile /tmp/cpu.out
//	go tool pprof -top -nodecount 40 /tmp/cpu.out
//	go test ./tools/bench -run '^$' -bench ZnodeMemory -benchtime 1x -bench.heapprofile /tmp/heap.out
//	go tool pprof -sample_index inuse_space -top /tmp/heap.out
//
// The load generator runs in the same process, so its own functions (package
// bench, and the syscalls of its connections) appear in the profile too.
var (
	profDuration = flag.Duration("bench.duration", 5*time.Second, "measured time of each BenchmarkServer workload")
	profZnodes   = flag.Int("bench.znodes", 200000, "znodes loaded by BenchmarkZnodeMemory")
	heapProfile  = flag.String("bench.heapprofile", "", "BenchmarkZnodeMemory: write the heap profile with the znodes loaded here")
)

func durableServer(b *testing.B) *server.Server {
	srv, err := server.New(server.Options{
		Addr:              "127.0.0.1:0",
		TickTime:          2 * time.Second,
		MaxSessionTimeout: time.Minute,
		EnforceQuota:      true,
		DataDir:           b.TempDir(),
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	return srv
}

// BenchmarkServer runs each workload once for -bench.duration (use
// -benchtime 1x) and reports its rate and p99.
func BenchmarkServer(b *testing.B) {
	for _, c := range []Config{
		{Workload: "get"},
		{Workload: "set"},
		{Workload: "set", Keys: 1, Connections: 1, Workers: 1}, // set-seq: one request at a time
		{Workload: "create"},
		{Workload: "mixed", Ratio: 10},
		{Workload: "multi"},
		{Workload: "lock", Contenders: 16},
		{Workload: "watch", Watchers: 1000},
		{Workload: "latch"},
		{Workload: "children"},
		{Workload: "sessions"},
	} {
		name := c.Workload
		switch {
		case c.Workload == "lock":
			name = "lock16"
		case c.Workers == 1:
			name += "-seq"
		}
		b.Run(name, func(b *testing.B) {
			srv := durableServer(b)
			for i := 0; i < b.N; i++ {
				cfg := c
				cfg.Server = srv.Addr().String()
				cfg.Duration = *profDuration
				cfg.Warmup = time.Second
				res, err := Run(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(res.OpsPerSec, res.Unit+"s/s")
				b.ReportMetric(res.Latency.P99, "p99-ms")
			}
		})
	}
}

// BenchmarkZnodeMemory loads -bench.znodes znodes of 100 bytes into a
// durable in-process server and reports the live heap per znode (after a
// GC), beside the process's RSS growth.
func BenchmarkZnodeMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		srv := durableServer(b)
		var m0, m1 runtime.MemStats
		runtime.GC()
		debug.FreeOSMemory()
		runtime.ReadMemStats(&m0)
		rss0 := selfRSS()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		_, err := Populate(ctx, srv.Addr().String(), "/mem", *profZnodes, 100, 16)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		rss1 := selfRSS()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		n := float64(*profZnodes)
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/n, "live-heap-B/znode")
		b.ReportMetric(float64(rss1-rss0)/n, "rss-B/znode")
		if *heapProfile != "" {
			f, err := os.Create(*heapProfile)
			if err != nil {
				b.Fatal(err)
			}
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
		srv.Close()
	}
}

func selfRSS() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, rss int64
	if _, err := fmt.Sscan(string(data), &size, &rss); err != nil {
		return 0
	}
	return rss * int64(os.Getpagesize())
}
