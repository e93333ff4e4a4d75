// Command compare benchmarks zkgo against Apache ZooKeeper 3.8 on one
// machine in one run, and writes the measured section of
// docs/BENCHMARKS.md.
//
//	go run ./tools/compare                      # the documented run (about 30 minutes)
//	go run ./tools/compare -duration 2s -repeats 1 -znodes 100000 -out /tmp/b.md   # a quick look
//	go run ./tools/compare -standalone=false -only 'get|set' -duration 2s -repeats 1 -out /tmp/b.md   # clusters only
//	go run ./tools/compare -storm 10000 -repeats 3   # the reconnect storm only (storm.go)
//	go run ./tools/compare -wide 1000000 -repeats 2  # one parent with a million children only (wide.go)
//	go run ./tools/compare -fanout 1000,10000 -repeats 3   # the watch fan-out only (fanout.go)
//
// It builds "zkgo server" from this module, starts it and Apache
// ZooKeeper 3.8 (Debian's package, Java 17) standalone side by side on
// loopback, both durable (forceSync=yes: fsync before the reply) with
// maxClientCnxns=0, ZooKeeper with a fixed heap (-Xms = -Xmx). Then for each
// workload it runs the same load generator (tools/bench, the code
// behind "zkgo bench") against both, alternating which goes first, -repeats
// times, and reports medians, the spread and the ratio zkgo/ZooKeeper.
// Afterwards it loads -znodes znodes of 100 bytes into a fresh instance of
// each server for the memory per znode (RSS growth) and the restart time.
// The disk's fsync latency is measured first, in the same directory.
//
// Then (-clusters) it starts a 3-member ensemble of each on the same
// machine, from the same kind of zoo.cfg (server.N lines, myid in each
// member's dataDir, forceSync=yes; ZooKeeper's JVMs with a -cluster-heap
// each), spreads the load's sessions round-robin over the three members,
// runs a subset of the workloads (clusterIDs) the same way, and reads the
// members' fsync and zxid counters around each run (fsyncs per write). See
// cluster.go.
//
// With etcd on PATH (-etcd, on by default), the lock and latch rows also
// run against etcd 3.4, standalone and as a 3-member cluster, with its own
// concurrency package (Mutex, Election): a third column for the jobs users
// might pick etcd for instead. See etcd.go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tools/bench"
)

// spec is one row of the comparison.
type spec struct {
	id    string
	label string
	cfg   bench.Config
}

func specs() []spec {
	c := func(w string, f func(*bench.Config)) bench.Config {
		cfg := bench.Config{Workload: w, Connections: 16, Workers: 64, Size: 100}
		if f != nil {
			f(&cfg)
		}
		return cfg
	}
	return []spec{
		{"get-hot", "get, 1 hot key", c("get", func(c *bench.Config) { c.Keys = 1 })},
		{"get-seq", "get, 1 key, one request at a time", c("get", func(c *bench.Config) { c.Keys = 1; c.Connections = 1; c.Workers = 1 })},
		{"set-seq", "set, 1 key, one request at a time", c("set", func(c *bench.Config) { c.Keys = 1; c.Connections = 1; c.Workers = 1 })},
		{"get-10k", "get, uniform over 10,000 keys", c("get", func(c *bench.Config) { c.Keys = 10000 })},
		{"get-rate", "get, 10,000 keys, open loop 20,000/s", c("get", func(c *bench.Config) { c.Keys = 10000; c.Rate = 20000 })},
		{"set", "set, 1,000 keys", c("set", nil)},
		{"set-rate", "set, 1,000 keys, open loop 5,000/s", c("set", func(c *bench.Config) { c.Rate = 5000 })},
		{"create", "create persistent", c("create", nil)},
		{"create-rate", "create persistent, open loop 10,000/s", c("create", func(c *bench.Config) { c.Rate = 10000 })},
		{"create-eseq", "create ephemeral-sequential", c("create", func(c *bench.Config) { c.Mode = "ephemeral-sequential" })},
		{"delete", "delete (600,000 znodes)", c("delete", func(c *bench.Config) { c.Count = 600000 })},
		{"children", "getChildren, 1,000 children", c("children", nil)},
		{"children-rate", "getChildren, 1,000 children, open loop 5,000/s", c("children", func(c *bench.Config) { c.Rate = 5000 })},
		{"multi", "multi of 5 setData", c("multi", nil)},
		{"multi-rate", "multi of 5 setData, open loop 15,000/s", c("multi", func(c *bench.Config) { c.Rate = 15000 })},
		{"mixed-2", "mixed 2:1 get:set", c("mixed", func(c *bench.Config) { c.Ratio = 2 })},
		{"mixed-10", "mixed 10:1", c("mixed", func(c *bench.Config) { c.Ratio = 10 })},
		{"mixed-10-rate", "mixed 10:1, open loop 30,000/s", c("mixed", func(c *bench.Config) { c.Ratio = 10; c.Rate = 30000 })},
		{"mixed-100", "mixed 100:1", c("mixed", func(c *bench.Config) { c.Ratio = 100 })},
		{"watch-1", "watch, 1 watcher", c("watch", func(c *bench.Config) { c.Watchers = 1 })},
		{"watch-1k", "watch, 1,000 watchers", c("watch", func(c *bench.Config) { c.Watchers = 1000 })},
		{"watch-10k", "watch, 10,000 watchers", c("watch", func(c *bench.Config) { c.Watchers = 10000 })},
		{"sessions-churn", "sessions: connect+close churn", c("sessions", func(c *bench.Config) { c.Mode = "churn" })},
		{"sessions-idle", "sessions: get with 10,000 idle sessions", c("sessions", func(c *bench.Config) { c.Mode = "idle"; c.Sessions = 10000 })},
		{"sessions-idle-rate", "sessions: get with 10,000 idle sessions, open loop 50,000/s", c("sessions", func(c *bench.Config) { c.Mode = "idle"; c.Sessions = 10000; c.Rate = 50000 })},
		{"lock-2", "lock, 2 contenders", c("lock", func(c *bench.Config) { c.Contenders = 2 })},
		{"lock-16", "lock, 16 contenders", c("lock", func(c *bench.Config) { c.Contenders = 16 })},
		{"lock-64", "lock, 64 contenders", c("lock", func(c *bench.Config) { c.Contenders = 64 })},
		{"latch", "latch graceful handover", c("latch", nil)},
		{"selector", "selector, 4 participants", c("selector", nil)},
		{"get-gozk", "get, 1 hot key, client go-zookeeper", c("get", func(c *bench.Config) { c.Keys = 1; c.Client = "gozk" })},
		{"get-gozk-rate", "get, 1 hot key, client go-zookeeper, open loop 40,000/s", c("get", func(c *bench.Config) { c.Keys = 1; c.Client = "gozk"; c.Rate = 40000 })},
		{"set-gozk", "set, 1,000 keys, client go-zookeeper", c("set", func(c *bench.Config) { c.Client = "gozk" })},
		{"lock-16-gozk", "lock, 16 contenders, go-zookeeper's own Lock recipe", c("lock", func(c *bench.Config) { c.Contenders = 16; c.Client = "gozk" })},
		{"lock-16-curator", "lock, 16 contenders, Curator's InterProcessMutex", c("lock", func(c *bench.Config) { c.Contenders = 16; c.Client = "curator" })},
	}
}

// run is one measurement.
type run struct {
	Spec   string        `json:"spec"`
	Server string        `json:"server"`
	Repeat int           `json:"repeat"`
	Result *bench.Result `json:"result"`
	// IdleSessionBytes: sessions-idle only, RSS growth per idle session.
	IdleSessionBytes float64 `json:"idle_session_bytes,omitempty"`
	// Members: ensembles only, each member's counters over the load.
	Members []memberDelta `json:"members,omitempty"`
	// Stages: zkgo only, the sequential workloads: mean µs per stage
	// over the run (warm-up included), from mntr's zkgo_stage_* sums.
	Stages map[string]float64 `json:"stages_us,omitempty"`
	// ServerCPU: the server's CPU time (utime+stime, every thread, 10 ms
	// ticks; an ensemble's members together) over the measured window.
	ServerCPU time.Duration `json:"server_cpu_ns,omitempty"`
}

// cpuPerOp is the server's CPU time per operation of the run, in µs (NaN
// without a figure).
func (ru run) cpuPerOp() float64 {
	if ru.ServerCPU <= 0 || ru.Result == nil || ru.Result.Ops == 0 {
		return math.NaN()
	}
	return float64(ru.ServerCPU) / 1e3 / float64(ru.Result.Ops)
}

// memResult is the memory and restart measurement of one server.
type memResult struct {
	Server         string  `json:"server"`
	Requested      int     `json:"requested"`
	Znodes         int64   `json:"znodes"` // znodes added (mntr zk_znode_count growth)
	LoadSec        float64 `json:"load_s"`
	RSSBefore      int64   `json:"rss_before"`
	RSSAfter       int64   `json:"rss_after"`
	HeapBefore     int64   `json:"java_heap_before,omitempty"` // after a full GC
	HeapAfter      int64   `json:"java_heap_after,omitempty"`
	DataBytes      int64   `json:"data_bytes"`
	RestartSec     float64 `json:"restart_s"`                // SIGTERM, start, first read served
	RSSRestarted   int64   `json:"rss_restarted"`            // after that restart
	KillRestartSec float64 `json:"kill_restart_s"`           // kill -9, start, first read served
	SnapBytes      int64   `json:"snapshot_bytes,omitempty"` // zkgo: the last snapshot taken during the load
	SnapMs         int64   `json:"snapshot_ms,omitempty"`
	Note           string  `json:"note,omitempty"`
	ZKVersionHint  string  `json:"-"`
}

type report struct {
	Started    time.Time      `json:"started"`
	Finished   time.Time      `json:"finished"`
	Command    string         `json:"command"`
	Machine    machine        `json:"machine"`
	Fsync      fsyncStats     `json:"fsync"`
	ZKVersion  string         `json:"zookeeper_version"`
	ZkgoVer    string         `json:"zkgo_version"`
	EtcdVer    string         `json:"etcd_version,omitempty"` // etcd --version; empty: no etcd column
	Heap       string         `json:"heap"`
	Duration   time.Duration  `json:"duration"`
	Warmup     time.Duration  `json:"warmup"`
	Repeats    int            `json:"repeats"`
	Runs       []run          `json:"runs"`
	Memory     []memResult    `json:"memory"`
	Cluster    *clusterResult `json:"cluster,omitempty"`
	Notes      []string       `json:"notes"`
	specLabels map[string]string
	specOrder  []string
}

func main() {
	zkgoBin := flag.String("zkgo", "", "zkgo binary to test (default: go build ./cmd/zkgo)")
	duration := flag.Duration("duration", 5*time.Second, "measured time per run")
	warmup := flag.Duration("warmup", time.Second, "warm-up per run (after a global warm-up of each server)")
	repeats := flag.Int("repeats", 3, "runs per workload and server (alternating which server goes first)")
	znodes := flag.Int("znodes", 1000000, "znodes of 100 bytes for the memory and restart measurement (0: skip)")
	loadTimeout := flag.Duration("load-timeout", 4*time.Minute, "bound on loading -znodes into one server")
	memServers := flag.String("memory-servers", "zookeeper,zkgo", "servers of the memory and restart measurement (comma-separated; zkgo alone for trees larger than ZooKeeper's heap)")
	heap := flag.String("heap", "2g", "ZooKeeper's fixed heap (-Xms and -Xmx)")
	only := flag.String("only", "", "run only the workloads whose id matches this regexp")
	out := flag.String("out", "docs/BENCHMARKS.md", "Markdown file whose measured section is (re)written")
	raw := flag.String("raw", "", "also write every result as JSON to this file")
	tmp := flag.String("dir", "", "directory for the servers' data, kept afterwards (default: a new temporary directory, removed at the end)")
	standalone := flag.Bool("standalone", true, "compare standalone servers (the workloads, then the memory and restart measurement)")
	clusters := flag.Bool("clusters", true, "compare 3-member ensembles on this machine (workloads "+strings.Join(clusterIDs, ", ")+"; -only applies)")
	clusterHeap := flag.String("cluster-heap", "512m", "each ZooKeeper ensemble member's fixed heap (-Xms and -Xmx)")
	plot := flag.String("plot", "", "SVG file for the latency plot of the standalone workloads (default: -out with -latency.svg for .md; \"none\": no plot)")
	plotFrom := flag.String("plot-from", "", "only render -plot from this JSON file written earlier with -raw; run nothing")
	hostile := flag.Int("hostile", 0, "instead of the workloads: open this many hostile connections against each server (40% silent, 40% announcing a 1 MiB frame, 20% slow readers) and print the servers' memory and a writer's latency")
	etcd := flag.Bool("etcd", true, "add the etcd column (lock handoffs and leader handover with etcd's concurrency package) when etcd is on PATH")
	etcdSettle := flag.Duration("etcd-settle", 0, "diagnostic: in etcd's handover, pause this long after the rejoin before the next Resign (0: none, as the ZooKeeper latch)")
	storm := flag.Int("storm", 0, "instead of the workloads: the reconnect storm with this many sessions on a 3-member ensemble of each server, its leader killed (-repeats runs each)")
	wide := flag.Int("wide", 0, "instead of the workloads: this many children under one znode on a fresh standalone server of each kind: create rate, memory, getChildren at and past jute.maxbuffer (-repeats runs each)")
	fanoutN := flag.String("fanout", "", "instead of the workloads: the watch fan-out with these many watchers (comma-separated counts) on a fresh standalone server of each kind (-repeats runs each, -heap, -raw)")
	srvCPUs := flag.String("server-cpus", "", "start every server on these CPUs only (taskset -c list, e.g. 0), to measure the servers without the clients on their cores; with -client-cpus")
	cliCPUs := flag.String("client-cpus", "", "run this process's clients (and Curator's JVM) on these CPUs only (e.g. 1); with -server-cpus")
	flag.Parse()

	if (*srvCPUs == "") != (*cliCPUs == "") {
		fmt.Fprintln(os.Stderr, "compare: -server-cpus and -client-cpus go together")
		os.Exit(2)
	}
	if *srvCPUs != "" {
		if _, err := parseCPUList(*srvCPUs); err != nil {
			fmt.Fprintln(os.Stderr, "compare: -server-cpus:", err)
			os.Exit(2)
		}
		if err := pinSelf(*cliCPUs); err != nil {
			fmt.Fprintln(os.Stderr, "compare: -client-cpus:", err)
			os.Exit(2)
		}
		serverCPUs = *srvCPUs
	}

	switch *plot {
	case "":
		*plot = strings.TrimSuffix(*out, ".md") + "-latency.svg"
	case "none":
		*plot = ""
	}
	if *plotFrom != "" {
		if err := plotFromRaw(*plotFrom, *plot); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A mode in place of the workloads: its own temporary directory, the
	// zkgo binary built there unless -zkgo names one, then run.
	mode := func(name string, run func(bin, root string) error) {
		root, err := os.MkdirTemp("", "zkgo-"+name+"-")
		if err == nil {
			bin := *zkgoBin
			if bin == "" {
				bin, err = buildZkgo(root)
			}
			if err == nil {
				err = run(bin, root)
			}
			os.RemoveAll(root)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
	}
	switch {
	case *storm > 0:
		mode("storm", func(bin, root string) error {
			return runStorm(ctx, options{repeats: *repeats, clusterHeap: *clusterHeap}, bin, root, *storm)
		})
		return
	case *wide > 0:
		mode("wide", func(bin, root string) error {
			return runWide(ctx, options{repeats: *repeats, heap: *heap}, bin, root, *wide)
		})
		return
	case *fanoutN != "":
		counts, err := parseCounts(*fanoutN)
		if err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		mode("fanout", func(bin, root string) error {
			return runFanout(ctx, options{repeats: *repeats, heap: *heap, raw: *raw}, bin, root, counts)
		})
		return
	case *hostile > 0:
		n := *hostile
		mode("hostile", func(bin, root string) error {
			return runHostile(ctx, options{heap: *heap}, bin, root, hostileMix{silent: n * 2 / 5, announcers: n * 2 / 5, slowReaders: n - 2*(n*2/5), reads: 16})
		})
		return
	}
	o := options{*zkgoBin, *duration, *warmup, *repeats, *znodes, *loadTimeout, *heap, *only, *out, *raw, *tmp,
		*standalone, *clusters, *clusterHeap, *plot, strings.Split(*memServers, ","), "", *etcdSettle}
	if *etcd {
		o.etcd, _ = findEtcd()
		if o.etcd == "" {
			logf("etcd is not on PATH (Debian: apt-get install etcd-server): no etcd column")
		}
	}
	if err := compare(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

type options struct {
	zkgo             string
	duration, warmup time.Duration
	repeats, znodes  int
	loadTimeout      time.Duration
	heap, only, out  string
	raw, dir         string
	standalone       bool
	clusters         bool
	clusterHeap      string
	plot             string   // SVG latency plot ("" for none)
	memServers       []string // servers of the memory measurement
	etcd             string   // etcd binary for the etcd column ("" for none)
	etcdSettle       time.Duration
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func compare(ctx context.Context, o options) error {
	defer bench.Cleanup() // lock-16-curator's compiled Java classes
	rep := &report{Started: time.Now(), Command: "go run ./tools/compare " + strings.Join(os.Args[1:], " "),
		Heap: o.heap, Duration: o.duration, Warmup: o.warmup, Repeats: o.repeats, specLabels: map[string]string{}}
	root := o.dir
	if root == "" {
		d, err := os.MkdirTemp("", "zkgo-compare-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		root = d
	}
	rep.Machine = describeMachine(root)
	if o.etcd != "" {
		_, rep.EtcdVer = findEtcd()
	}
	bin := o.zkgo
	if bin == "" {
		logf("building zkgo")
		b, err := buildZkgo(root)
		if err != nil {
			return err
		}
		bin = b
	}
	fs, err := measureFsync(root, 2000)
	if err != nil {
		return fmt.Errorf("fsync latency: %w", err)
	}
	rep.Fsync = fs
	logf("fsync (4 KiB + fdatasync): overwrite p50 %v p99 %v, append p50 %v p99 %v", fs.OverwriteP50, fs.Overwrite99, fs.AppendP50, fs.AppendP99)

	var sel *regexp.Regexp
	if o.only != "" {
		if sel, err = regexp.Compile(o.only); err != nil {
			return err
		}
	}
	var todo, clusterTodo []spec
	for _, s := range specs() {
		rep.specLabels[s.id] = s.label
		if sel != nil && !sel.MatchString(s.id) {
			continue
		}
		if o.standalone {
			todo = append(todo, s)
			rep.specOrder = append(rep.specOrder, s.id)
		}
		if o.clusters && slices.Contains(clusterIDs, s.id) {
			clusterTodo = append(clusterTodo, s)
		}
	}
	if !o.standalone && (!o.clusters || len(clusterTodo) == 0) {
		return errors.New("nothing to run: -standalone=false and no cluster workload selected")
	}

	if len(todo) > 0 {
		if err := runWorkloads(ctx, o, bin, root, todo, rep); err != nil {
			return err
		}
	}
	if o.standalone && o.znodes > 0 && ctx.Err() == nil {
		for _, name := range o.memServers {
			if name != "zookeeper" && name != "zkgo" {
				return fmt.Errorf("-memory-servers: %q is neither zookeeper nor zkgo", name)
			}
			m, err := measureMemory(ctx, o, bin, root, name)
			if err != nil {
				return fmt.Errorf("memory, %s: %w", name, err)
			}
			rep.Memory = append(rep.Memory, m)
			if m.ZKVersionHint != "" && rep.ZKVersion == "" {
				rep.ZKVersion = m.ZKVersionHint
			}
		}
	}
	if len(clusterTodo) > 0 && ctx.Err() == nil {
		// The standalone results so far are saved first: an ensemble
		// that fails must not cost the run's first half.
		if err := saveRaw(o.raw, rep); err != nil {
			return err
		}
		if err := runClusters(ctx, o, bin, root, clusterTodo, rep); err != nil {
			if o.raw != "" {
				return fmt.Errorf("clusters (the results before them are in %s): %w", o.raw, err)
			}
			return fmt.Errorf("clusters: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rep.Finished = time.Now()
	if err := saveRaw(o.raw, rep); err != nil {
		return err
	}
	if o.plot != "" && len(rep.Runs) > 0 {
		if err := os.WriteFile(o.plot, renderPlot(rep.Runs, rep.specOrder, rep.specLabels, plotTitle(rep)), 0o644); err != nil {
			return err
		}
	}
	return writeReport(o.out, rep)
}

func startBoth(o options, bin, root string) (*server, *server, error) {
	zk, err := newZooKeeper(root, o.heap)
	if err != nil {
		return nil, nil, err
	}
	if _, err := zk.start(2 * time.Minute); err != nil {
		return nil, nil, err
	}
	zg, err := newZkgo(bin, root)
	if err != nil {
		zk.kill()
		return nil, nil, err
	}
	if _, err := zg.start(time.Minute); err != nil {
		zk.kill()
		return nil, nil, err
	}
	return zk, zg, nil
}

func runWorkloads(ctx context.Context, o options, bin, root string, todo []spec, rep *report) error {
	if _, err := apachezk.Classpath(); err != nil {
		return err
	}
	zk, zg, err := startBoth(o, bin, root)
	if err != nil {
		return err
	}
	defer zk.kill()
	defer zg.kill()
	rep.ZKVersion = zk.version
	rep.ZkgoVer = zg.version
	logf("ZooKeeper %s on %s (pid %d), zkgo %s on %s (pid %d)", zk.version, zk.addr(), zk.pid(), zg.version, zg.addr(), zg.pid())
	var ec *etcdCluster
	if o.etcd != "" && slices.ContainsFunc(todo, etcdSpec) {
		if ec, err = newEtcdCluster(o.etcd, root, 1); err != nil {
			return err
		}
		ec.settle = o.etcdSettle
		defer ec.kill()
		if _, _, err := ec.start(ctx, time.Minute); err != nil {
			return err
		}
		rep.EtcdVer = ec.version
		logf("etcd %s on %s (pid %d)", ec.version, ec.members[0].addr(), ec.members[0].pid())
	}

	// Global warm-up: the JVM compiles its hot paths, both servers
	// allocate their buffers.
	for _, s := range []*server{zk, zg} {
		for _, w := range []bench.Config{
			{Workload: "mixed", Ratio: 2, Duration: 8 * time.Second},
			{Workload: "create", Duration: 2 * time.Second},
			{Workload: "multi", Duration: 2 * time.Second},
			{Workload: "children", Duration: 2 * time.Second},
			{Workload: "watch", Watchers: 100, Duration: 2 * time.Second},
			{Workload: "lock", Contenders: 16, Duration: 2 * time.Second},
			{Workload: "sessions", Duration: 2 * time.Second},
		} {
			w.Server = s.addr()
			if _, err := bench.Run(ctx, w); err != nil {
				return fmt.Errorf("warm-up of %s, %s: %w", s.name, w.Workload, err)
			}
		}
		logf("warmed up %s", s.name)
	}
	if ec != nil {
		if err := ec.warmUp(ctx); err != nil {
			return err
		}
		logf("warmed up etcd")
	}

	total := 0
	for _, sp := range todo {
		total += o.repeats * 2
		if ec != nil && etcdSpec(sp) {
			total += o.repeats
		}
	}
	n := 0
	t0 := time.Now()
	for _, sp := range todo {
		for r := 0; r < o.repeats; r++ {
			// zookeeper, zkgo (, etcd), the other way round every other
			// repeat.
			order := []*server{zk, zg}
			if ec != nil && etcdSpec(sp) {
				order = append(order, ec.members[0])
			}
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, s := range order {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				n++
				if s.name == "etcd" {
					cfg := sp.cfg
					cfg.Duration, cfg.Warmup = o.duration, o.warmup
					res, err := ec.run(ctx, cfg)
					if err != nil {
						return fmt.Errorf("%s on etcd: %w", sp.id, err)
					}
					if !s.alive() {
						return fmt.Errorf("etcd died during %s:\n%s", sp.id, s.logTail())
					}
					rep.Runs = append(rep.Runs, run{Spec: sp.id, Server: "etcd", Repeat: r, Result: res})
					logf("[%3d/%d] %-15s %-9s r%d  %10.0f %s/s  p99 %.3f ms  errors %d  (%v elapsed)",
						n, total, sp.id, s.name, r+1, res.OpsPerSec, res.Unit, res.Latency.P99, res.Errors, time.Since(t0).Round(time.Second))
					time.Sleep(300 * time.Millisecond)
					continue
				}
				cfg := sp.cfg
				cfg.Server = s.addr()
				cfg.Duration, cfg.Warmup = o.duration, warmupFor(o, cfg)
				var rssBefore, rssSetup int64
				if sp.cfg.Workload == "sessions" && sp.cfg.Mode == "idle" {
					rssBefore, _ = rssBytes(s.pid())
					cfg.AfterSetup = func() {
						time.Sleep(time.Second)
						rssSetup, _ = rssBytes(s.pid())
					}
				}
				// The server's CPU over the measured window: the load's
				// client (a JVM for Curator's rows) is another process.
				var cpu0, cpu1 time.Duration
				var cpuErr error
				cfg.MeasureBegin = func() { cpu0, cpuErr = procCPU(s.pid()) }
				cfg.MeasureEnd = func() {
					if cpuErr == nil {
						cpu1, cpuErr = procCPU(s.pid())
					}
				}
				var stagesBefore map[string]int64
				if s.name == "zkgo" && strings.HasSuffix(sp.id, "-seq") {
					stagesBefore = mntr(s.addr())
				}
				res, err := bench.Run(ctx, cfg)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", sp.id, s.name, err)
				}
				if !s.alive() {
					return fmt.Errorf("%s died during %s:\n%s", s.name, sp.id, s.logTail())
				}
				ru := run{Spec: sp.id, Server: s.name, Repeat: r, Result: res}
				if stagesBefore != nil {
					ru.Stages = stageMeans(stagesBefore, mntr(s.addr()))
				}
				if cpuErr == nil && cpu1 > cpu0 {
					ru.ServerCPU = cpu1 - cpu0
				}
				if rssSetup > 0 {
					ru.IdleSessionBytes = float64(rssSetup-rssBefore) / float64(cfg.Sessions)
				}
				rep.Runs = append(rep.Runs, ru)
				logf("[%3d/%d] %-15s %-9s r%d  %10.0f %s/s  p99 %.3f ms  errors %d  (%v elapsed)",
					n, total, sp.id, s.name, r+1, res.OpsPerSec, res.Unit, res.Latency.P99, res.Errors, time.Since(t0).Round(time.Second))
				time.Sleep(300 * time.Millisecond)
			}
		}
	}
	zk.stop()
	zg.stop()
	if ec != nil {
		ec.stop()
	}
	return nil
}

// measureMemory starts a fresh server, loads the znodes, and measures its
// RSS growth, then its restart time on that data.
func measureMemory(ctx context.Context, o options, bin, root, name string) (memResult, error) {
	m := memResult{Server: name, Requested: o.znodes}
	var s *server
	var err error
	if name == "zookeeper" {
		s, err = newZooKeeper(root, o.heap)
	} else {
		s, err = newZkgo(bin, root)
	}
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(s.dir)
	defer s.kill()
	if _, err := s.start(2 * time.Minute); err != nil {
		return m, err
	}
	m.ZKVersionHint = ""
	if name == "zookeeper" {
		m.ZKVersionHint = s.version
	}
	time.Sleep(3 * time.Second)
	count0 := znodeCount(s)
	m.RSSBefore, _ = rssBytes(s.pid())
	if name == "zookeeper" {
		m.HeapBefore, _ = javaHeapUsed(s.pid())
	}
	logf("memory %s: loading %d znodes of 100 bytes (RSS before %.1f MiB)", name, o.znodes, mib(m.RSSBefore))
	lctx, cancel := context.WithTimeout(ctx, o.loadTimeout)
	t0 := time.Now()
	_, err = bench.Populate(lctx, s.addr(), "/mem", o.znodes, 100, 16)
	cancel()
	m.LoadSec = time.Since(t0).Seconds()
	if err != nil && lctx.Err() == nil {
		return m, err
	}
	time.Sleep(5 * time.Second)
	m.Znodes = znodeCount(s) - count0
	if m.Znodes < int64(o.znodes) {
		m.Note = fmt.Sprintf("only %d of %d znodes were loaded within %v", m.Znodes, o.znodes, o.loadTimeout)
	}
	m.RSSAfter, _ = rssBytes(s.pid())
	if name == "zookeeper" {
		m.HeapAfter, _ = javaHeapUsed(s.pid())
	}
	m.DataBytes = dirSize(s.dataDir())
	if name == "zkgo" {
		kv := mntr(s.addr())
		m.SnapBytes, m.SnapMs = kv["zkgo_last_snapshot_bytes"], kv["zkgo_last_snapshot_ms"]
	}
	logf("memory %s: %d znodes in %.1f s, RSS %.1f → %.1f MiB (%.0f B/znode)", name, m.Znodes, m.LoadSec,
		mib(m.RSSBefore), mib(m.RSSAfter), float64(m.RSSAfter-m.RSSBefore)/float64(max(m.Znodes, 1)))

	// The restart is timed until the last znode can be read (the first
	// one if the load was cut short).
	last := bench.PopulatePath("/mem", o.znodes-1)
	if m.Note != "" {
		last = bench.PopulatePath("/mem", 0)
	}
	// Graceful restart.
	if err := s.stop(); err != nil {
		return m, err
	}
	d, err := restart(s, last)
	if err != nil {
		return m, err
	}
	m.RestartSec = d.Seconds()
	time.Sleep(3 * time.Second)
	m.RSSRestarted, _ = rssBytes(s.pid())
	// kill -9 and restart.
	s.kill()
	d, err = restart(s, last)
	if err != nil {
		return m, err
	}
	m.KillRestartSec = d.Seconds()
	logf("memory %s: restart %.2f s (after SIGTERM), %.2f s (after kill -9), RSS after restart %.1f MiB",
		name, m.RestartSec, m.KillRestartSec, mib(m.RSSRestarted))
	return m, s.stop()
}

// restart starts s on its data and returns the time until a read of path
// succeeds.
func restart(s *server, path string) (time.Duration, error) {
	t0 := time.Now()
	if _, err := s.start(5 * time.Minute); err != nil {
		return 0, err
	}
	for {
		ok, err := bench.Exists(s.addr(), path)
		if err == nil && ok {
			return time.Since(t0), nil
		}
		if err == nil && !ok {
			return 0, fmt.Errorf("%s: %s missing after restart", s.name, path)
		}
		if time.Since(t0) > 5*time.Minute {
			return 0, fmt.Errorf("%s: no read served within 5 minutes of restart: %v", s.name, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func znodeCount(s *server) int64 {
	r, err := apachezk.FourLetterWord(s.addr(), "mntr", 10*time.Second)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(r, "\n") {
		if v, ok := strings.CutPrefix(l, "zk_znode_count"); ok {
			var n int64
			fmt.Sscan(strings.TrimSpace(v), &n)
			return n
		}
	}
	return 0
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// saveRaw writes rep as JSON to path (nothing when path is empty).
func saveRaw(path string, rep *report) error {
	if path == "" {
		return nil
	}
	data, _ := json.MarshalIndent(rep, "", "  ")
	return os.WriteFile(path, data, 0o644)
}

// stageNames are zkgo's request stages in mntr (server/stages.go).
var stageNames = []string{"propose", "log", "fsync", "apply", "read", "reply"}

// stageMeans returns the mean µs of each of zkgo's stages between two
// mntr readings (stages with nothing counted are left out).
func stageMeans(before, after map[string]int64) map[string]float64 {
	out := map[string]float64{}
	for _, st := range stageNames {
		n := after["zkgo_stage_"+st+"_count"] - before["zkgo_stage_"+st+"_count"]
		ns := after["zkgo_stage_"+st+"_ns"] - before["zkgo_stage_"+st+"_ns"]
		if n > 0 {
			out[st] = float64(ns) / float64(n) / 1e3
		}
	}
	return out
}

// jvmWarmup is the least warm-up of a row whose client is a JVM started
// for the run (Curator's): its JIT compiles the client's hot paths in
// the first seconds, and a production client has long done so. Measured
// with Curator's lock at 16 contenders, 1 s against 5 s of warm-up:
// ZooKeeper 817 → 1,010 and zkgo 1,192 → 1,517 handoffs/s (medians of
// 3), the ratio 1.46× → 1.50×.
const jvmWarmup = 5 * time.Second

// warmupFor is the warm-up of a run of cfg: o's, or jvmWarmup if longer
// for a JVM client.
func warmupFor(o options, cfg bench.Config) time.Duration {
	if cfg.Client == "curator" {
		return max(o.warmup, jvmWarmup)
	}
	return o.warmup
}
