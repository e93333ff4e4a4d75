// Command memznode measures a zkgo server's memory per znode at several
// tree sizes, and its memory under sustained writes on that tree.
//
//	go build -o /tmp/zkgo ./cmd/zkgo
//	go run ./tools/memznode -zkgo /tmp/zkgo -znodes 200000,500000,1000000 -set 20s
//
// For each size it starts a fresh `zkgo server` (standalone, durable, on a
// free loopback port, its data in a new temporary directory), reads its
// VmRSS 3 s after the start, loads that many znodes of 100 bytes (1,000
// per parent, pipelined over 16 sessions: tools/bench's Populate, as
// tools/compare's memory phase), reads VmRSS again 5 s after the load
// ended, and then the live heap (a collection forced through the
// AdminServer's /debug/pprof/heap?gc=1, after the RSS was read). With -set
// it then runs tools/bench's set workload on -keys keys for that long,
// samples VmRSS every 250 ms, and reads the live heap again as the load
// stops. Environment variables given with -env (GOGC=50, GOMEMLIMIT=…)
// are passed to the server.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tools/bench"
)

func main() {
	bin := flag.String("zkgo", "", "zkgo binary (required)")
	sizes := flag.String("znodes", "200000,500000,1000000", "comma-separated tree sizes")
	set := flag.Duration("set", 0, "after the load, run setData on -keys keys for this long (0: no)")
	keys := flag.Int("keys", 10000, "keys of the set load")
	env := flag.String("env", "", "comma-separated NAME=value pairs for the server's environment")
	args := flag.String("args", "", "extra arguments for `zkgo server`, space-separated")
	flag.StringVar(&keepLog, "log", "", "copy the server's log (with its gctrace lines) to this file, the size appended")
	flag.BoolVar(&memStats, "memstats", false, "print the server's runtime.MemStats where the live heap is read")
	flag.StringVar(&heapProfile, "heapprofile", "", "save the server's heap profile (after the forced collection, 5 s after the load) to this file, the size appended (go tool pprof -sample_index=inuse_space)")
	flag.BoolVar(&trace, "trace", false, "print VmRSS and the server's memory returns and snapshots every 500 ms for 10 s after the load")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "memznode: -zkgo is required")
		os.Exit(2)
	}
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fmt.Fprintf(os.Stderr, "memznode: -znodes: %v\n", err)
			os.Exit(2)
		}
		if err := measure(*bin, n, *set, *keys, *env, *args); err != nil {
			fmt.Fprintf(os.Stderr, "memznode: %d znodes: %v\n", n, err)
			os.Exit(1)
		}
	}
}

var (
	trace, memStats      bool
	keepLog, heapProfile string
)

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func measure(bin string, n int, set time.Duration, keys int, env, args string) error {
	dir, err := os.MkdirTemp("", "memznode")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port, admin := freePort(), freePort()
	cfg := filepath.Join(dir, "zoo.cfg")
	text := fmt.Sprintf(`tickTime=2000
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
forceSync=yes
4lw.commands.whitelist=*
admin.serverAddress=127.0.0.1
admin.serverPort=%d
zkgo.admin.pprof=true
`, filepath.Join(dir, "data"), port, admin)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		return err
	}
	argv := []string{"server", "-log-level", "warn"}
	argv = append(argv, strings.Fields(args)...)
	cmd := exec.Command(bin, append(argv, cfg)...)
	// gctrace: one line per collection on stderr, with the live heap it
	// marked (read back for the set load).
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	if env != "" {
		cmd.Env = append(cmd.Env, strings.Split(env, ",")...)
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	if keepLog != "" {
		defer func() {
			if data, err := os.ReadFile(logf.Name()); err == nil {
				os.WriteFile(fmt.Sprintf("%s.%d", keepLog, n), data, 0o644)
			}
		}()
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	pid := cmd.Process.Pid
	for t0 := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if _, err := apachezk.FourLetterWord(addr, "ruok", time.Second); err == nil {
			break
		}
		if time.Since(t0) > time.Minute {
			return fmt.Errorf("server not up")
		}
	}
	time.Sleep(3 * time.Second)
	count0 := znodeCount(addr)
	rss0 := rss(pid)
	cpu0 := cpuTime(pid)
	t0 := time.Now()
	if _, err := bench.Populate(context.Background(), addr, "/mem", n, 100, 16); err != nil {
		return err
	}
	load := time.Since(t0)
	cpuLoad := cpuTime(pid) - cpu0
	if trace {
		for i := 1; i <= 20; i++ {
			time.Sleep(500 * time.Millisecond)
			kv := mntr(addr)
			fmt.Printf("  +%.1f s: RSS %.1f MiB, memory returns %s, snapshot index %s\n", float64(i)/2, mib(rss(pid)), kv["zkgo_memory_returns"], kv["zkgo_raft_snapshot_index"])
		}
	}
	time.Sleep(5 * time.Second)
	rss1 := rss(pid)
	added := znodeCount(addr) - count0
	heap1 := liveHeap(admin)
	if heapProfile != "" {
		if err := saveHeapProfile(admin, fmt.Sprintf("%s.%d", heapProfile, n)); err != nil {
			fmt.Fprintf(os.Stderr, "memznode: heap profile: %v\n", err)
		}
	}
	fmt.Printf("znodes %d (added %d): load %.1f s (%.0f/s, server CPU %.1f µs per create); RSS %.1f → %.1f MiB: %.0f B/znode; live heap %.1f MiB (%.0f B/znode); RSS/live %.2f\n",
		n, added, load.Seconds(), float64(added)/load.Seconds(), float64(cpuLoad.Microseconds())/float64(added), mib(rss0), mib(rss1),
		float64(rss1-rss0)/float64(added), mib(heap1), float64(heap1)/float64(added), float64(rss1)/float64(heap1))
	if set <= 0 {
		return nil
	}
	var samples []int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	var heap2 int64
	var logFrom, logTo int64
	var cpuSet time.Duration
	var setOps int64
	go func() {
		defer close(sampled)
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				samples = append(samples, rss(pid))
			}
		}
	}()
	res, err := bench.Run(context.Background(), bench.Config{
		Server: addr, Workload: "set", Keys: keys, Duration: set, Warmup: time.Second,
		AfterSetup: func() { cpuSet, logFrom = cpuTime(pid), fileSize(logf) },
		AfterLoad: func() {
			cpuSet, logTo = cpuTime(pid)-cpuSet, fileSize(logf)
			close(stop)
			<-sampled
			heap2 = liveHeap(admin)
		},
	})
	if err != nil {
		return err
	}
	// The warm-up's requests are not in res.Ops: count them at the
	// measured rate.
	setOps = int64(res.OpsPerSec * (res.DurationSec + res.WarmupSec))
	late := slices.Clone(samples[len(samples)/2:])
	slices.Sort(late)
	gcs, live := marked(logf.Name(), logFrom, logTo)
	fmt.Printf("  set %d keys: %.0f/s, p99 %.2f ms, server CPU %.1f µs per set, %d collections; RSS over the second half: median %.1f MiB, max %.1f MiB; live heap marked by the collections: median %.1f MiB (as the load stopped %.1f MiB); RSS/live: median %.2f, max %.2f\n",
		keys, res.OpsPerSec, res.Latency.P99, float64(cpuSet.Microseconds())/float64(max(setOps, 1)), gcs, mib(late[len(late)/2]), mib(late[len(late)-1]), mib(live), mib(heap2),
		float64(late[len(late)/2])/float64(live), float64(late[len(late)-1])/float64(live))
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// rss returns the process's VmRSS in bytes (0 if unreadable).
func rss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func fileSize(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// marked reads the gctrace lines between offsets from and to of the
// server's log and returns how many collections there were and the
// median of the live heap they marked ("A->B->C MB": C).
func marked(name string, from, to int64) (int, int64) {
	data, err := os.ReadFile(name)
	if err != nil || to > int64(len(data)) || from > to {
		return 0, 0
	}
	var live []int64
	for _, l := range strings.Split(string(data[from:to]), "\n") {
		if !strings.HasPrefix(l, "gc ") {
			continue
		}
		for _, f := range strings.Split(l, ",") {
			f = strings.TrimSpace(f)
			if a, ok := strings.CutSuffix(f, " MB"); ok && strings.Count(a, "->") == 2 {
				mb, _ := strconv.ParseInt(a[strings.LastIndex(a, ">")+1:], 10, 64)
				live = append(live, mb<<20)
			}
		}
	}
	if len(live) == 0 {
		return 0, 0
	}
	slices.Sort(live)
	return len(live), live[len(live)/2]
}

// cpuTime returns the process's user and system CPU time so far.
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces).
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// liveHeap forces a collection in the server and returns its HeapAlloc
// right after it (the live heap, plus what was allocated meanwhile).
func liveHeap(admin int) int64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1&debug=1", admin))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var alloc int64
	var stats []string
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "# HeapAlloc = "); ok {
			alloc, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		for _, k := range []string{"HeapAlloc", "HeapInuse", "HeapIdle", "HeapReleased", "StackInuse", "MSpanInuse", "GCSys", "OtherSys", "Sys"} {
			if v, ok := strings.CutPrefix(l, "# "+k+" = "); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				stats = append(stats, fmt.Sprintf("%s %.1f", k, mib(n)))
			}
		}
	}
	if memStats {
		fmt.Printf("  after a collection (MiB): %s\n", strings.Join(stats, ", "))
	}
	return alloc
}

// saveHeapProfile writes the server's heap profile, after a collection,
// to file.
func saveHeapProfile(admin int, file string) error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", admin))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func znodeCount(addr string) int64 {
	n, _ := strconv.ParseInt(mntr(addr)["zk_znode_count"], 10, 64)
	return n
}

// mntr returns the server's mntr as a map.
func mntr(addr string) map[string]string {
	kv := map[string]string{}
	r, err := apachezk.FourLetterWord(addr, "mntr", 10*time.Second)
	if err != nil {
		return kv
	}
	for _, l := range strings.Split(r, "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			kv[f[0]] = f[1]
		}
	}
	return kv
}
