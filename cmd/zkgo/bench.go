package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/cmd/zkgo/internal/tlsflags"
	"github.com/zkgo/zkgo/tools/bench"
)

// runBench is "zkgo bench": the load generator of tools/bench.
func runBench(args []string) int {
	var cfg bench.Config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&cfg.Server, "server", "127.0.0.1:2181", "server to benchmark (`host:port`)")
	fs.StringVar(&cfg.Client, "client", "raw", "client for get, set, mixed and lock: raw (zkgo's load generator; for lock, zkgo's recipe), zk (zkgo's Go client), gozk (go-zookeeper/zk; for lock, its own Lock recipe) or, for lock only, curator (Apache Curator's InterProcessMutex, one session per contender in one JVM; needs javac, java and Debian's Curator 5 jars in /usr/share/java)")
	fs.IntVar(&cfg.Connections, "connections", 16, "sessions that carry the requests")
	fs.IntVar(&cfg.Workers, "workers", 64, "requests in flight (each worker waits for its reply)")
	fs.IntVar(&cfg.Size, "size", 100, "payload `bytes` of written and pre-created data")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "time run before measuring")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: `ops/s` in total on a fixed schedule, latency from the scheduled time (0: closed loop)")
	fs.IntVar(&cfg.Keys, "keys", 0, "get, set, mixed: keys chosen uniformly (default: get 1, a hot key; set and mixed 1000)")
	fs.IntVar(&cfg.Count, "count", 100000, "delete: znodes created beforehand and deleted")
	fs.IntVar(&cfg.Ratio, "ratio", 10, "mixed: reads per write (2, 10, 100 ...)")
	fs.StringVar(&cfg.Mode, "mode", "", "create: persistent (default) or ephemeral-sequential; sessions: churn (default) or idle")
	fs.IntVar(&cfg.Children, "children", 1000, "children: children of the listed znode")
	fs.IntVar(&cfg.MultiOps, "multi-ops", 5, "multi: setData ops per multi")
	fs.IntVar(&cfg.Watchers, "watchers", 1, "watch: sessions watching the znode")
	fs.IntVar(&cfg.Sessions, "sessions", 1000, "sessions -mode idle: idle sessions held open")
	fs.IntVar(&cfg.Contenders, "contenders", 16, "lock: sessions contending for the lock")
	fs.IntVar(&cfg.Participants, "participants", 4, "selector: participants")
	fs.DurationVar(&cfg.Hold, "hold", 0, "lock, selector: time the lock or leadership is held per turn")
	timeout := fs.String("timeout", "30000", "session timeout: milliseconds (as zkCli) or a Go duration such as 30s")
	fs.StringVar(&cfg.Root, "root", "/zkgo-bench", "znode under which the run creates (and then deletes) its znodes")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	scrape := fs.String("scrape", "", "while the run lasts, GET these `URLs` (comma-separated, e.g. a server's /metrics) every -scrape-interval, as Prometheus does")
	scrapeEvery := fs.Duration("scrape-interval", time.Second, "time between two scrapes of each -scrape URL")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of this client process over the whole run to `file`")
	consoleURL := fs.String("console", "", "while the run lasts, keep this web console `URL` open on its overview, as a browser does (its event stream, and the page fetched again on each change)")
	tlsFlags := tlsflags.AddClientFlags(fs)
	fs.Usage = func() {
		o := fs.Output()
		fmt.Fprintf(o, `Usage: zkgo bench [flags] WORKLOAD [flags]

Benchmarks a ZooKeeper-compatible server (zkgo, Apache ZooKeeper, ...):
sets up what the workload needs under -root, runs it for -warmup, then
measures for -duration, and deletes what it created. It prints the rate,
the latency percentiles (HDR histogram: p50, p90, p99, p99.9, max) and the
errors; a progress line goes to stderr every second.

Workloads:
`)
		for _, w := range bench.Workloads() {
			fmt.Fprintf(o, "  %-9s %s\n", w.Name, w.Summary)
		}
		fmt.Fprintf(o, `
Examples:
  zkgo bench get                              # one hot key, closed loop
  zkgo bench -server 127.0.0.1:2181 get -keys 10000 -rate 20000
  zkgo bench mixed -ratio 100 -duration 30s -json
  zkgo bench create -mode ephemeral-sequential
  zkgo bench watch -watchers 1000
  zkgo bench lock -contenders 64
  zkgo bench get -client gozk                 # the same load through go-zookeeper/zk
  zkgo bench lock -client curator             # Apache Curator's InterProcessMutex (Java)

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		return flagExit(err)
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "zkgo bench: missing WORKLOAD (run zkgo bench -help)")
		return 2
	}
	cfg.Workload = fs.Arg(0)
	if fs.NArg() > 1 {
		fmt.Fprintf(os.Stderr, "zkgo bench: unexpected arguments %q\n", fs.Args()[1:])
		return 2
	}
	tlsCfg, ok := clientTLS("bench", tlsFlags)
	if !ok {
		return 2
	}
	cfg.TLS = tlsCfg
	known := false
	for _, w := range bench.Workloads() {
		known = known || w.Name == cfg.Workload
	}
	if !known {
		var names []string
		for _, w := range bench.Workloads() {
			names = append(names, w.Name)
		}
		fmt.Fprintf(os.Stderr, "zkgo bench: unknown workload %q (want one of %s)\n", cfg.Workload, strings.Join(names, ", "))
		return 2
	}
	to, err := parseSessionTimeout(*timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo bench: -timeout: %v\n", err)
		return 2
	}
	cfg.SessionTimeout = to
	if cfg.Duration <= 0 {
		fmt.Fprintln(os.Stderr, "zkgo bench: -duration must be positive")
		return 2
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"connections", cfg.Connections}, {"workers", cfg.Workers}, {"count", cfg.Count}, {"ratio", cfg.Ratio},
		{"children", cfg.Children}, {"multi-ops", cfg.MultiOps}, {"watchers", cfg.Watchers}, {"sessions", cfg.Sessions},
		{"contenders", cfg.Contenders}, {"participants", cfg.Participants}} {
		if v.n <= 0 {
			fmt.Fprintf(os.Stderr, "zkgo bench: -%s must be positive\n", v.name)
			return 2
		}
	}
	if cfg.Keys < 0 || cfg.Size < 0 || cfg.Warmup < 0 || cfg.Hold < 0 {
		fmt.Fprintln(os.Stderr, "zkgo bench: -keys, -size, -warmup and -hold must not be negative")
		return 2
	}
	if cfg.Size == 0 {
		cfg.Size = -1 // Config: negative means an empty payload
	}
	if err := cfg.Check(); err != nil {
		fmt.Fprintf(os.Stderr, "zkgo bench: %v\n", err)
		return 2
	}
	if !*quiet {
		cfg.Progress = os.Stderr
	}
	if *scrapeEvery <= 0 {
		fmt.Fprintln(os.Stderr, "zkgo bench: -scrape-interval must be positive")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	octx, ostop := context.WithCancel(ctx)
	obs, err := startObservers(octx, *scrape, *scrapeEvery, *consoleURL)
	if err != nil {
		ostop()
		fmt.Fprintf(os.Stderr, "zkgo bench: %v\n", err)
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			ostop()
			fmt.Fprintf(os.Stderr, "zkgo bench: -cpuprofile: %v\n", err)
			return 2
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	res, err := bench.Run(ctx, cfg)
	bench.Cleanup() // lock -client curator's compiled classes
	ostop()
	if err != nil {
		obs.report(io.Discard)
		fmt.Fprintf(os.Stderr, "zkgo bench: %v\n", err)
		return 1
	}
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
		obs.report(os.Stderr)
	} else {
		res.Print(os.Stdout)
		obs.report(os.Stdout)
	}
	return 0
}
