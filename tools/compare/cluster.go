package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tools/bench"
)

// The 3-member comparison: Apache ZooKeeper 3.8 as a 3-server ensemble
// (three QuorumPeerMain JVMs) and zkgo as three "zkgo server zooN.cfg"
// processes, from the same kind of zoo.cfg (server.N lines, myid), all six
// on loopback on this machine. The load's sessions are spread round-robin
// over the three members.

// clusterSize is the number of members of each ensemble.
const clusterSize = 3

// clusterIDs are the workloads of specs() run against the ensembles.
var clusterIDs = []string{"get-10k", "set", "create", "mixed-10", "lock-16", "lock-16-gozk", "lock-16-curator", "latch"}

// ensemble is one 3-member ensemble of zookeeper or zkgo.
type ensemble struct {
	name    string // "zookeeper" or "zkgo"
	dir     string
	members // the processes, in server id order
	version string
}

// clusterResult is the 3-member part of the report.
type clusterResult struct {
	Members  int                `json:"members"`
	Heap     string             `json:"heap"`      // each ZooKeeper member's -Xms = -Xmx
	Leader   map[string]int     `json:"leader"`    // member (1-based) leading when the ensemble first served
	StartSec map[string]float64 `json:"start_s"`   // exec until every member served
	RSS      map[string][]int64 `json:"rss_after"` // per member, after the runs
	// LeaderChanges lists the leader changes seen between runs, by server.
	LeaderChanges map[string][]string `json:"leader_changes,omitempty"`
	// Failed lists the runs that ended in an error, by server; the
	// comparison goes on without them.
	Failed    map[string][]string `json:"failed,omitempty"`
	Versions  map[string]string   `json:"versions"`
	Runs      []run               `json:"runs"`
	specOrder []string
}

// memberDelta is the growth of one member's counters over a run's load
// (warm-up and measurement).
type memberDelta struct {
	Member  int   `json:"member"` // 1-based
	Leader  bool  `json:"leader"`
	Fsyncs  int64 `json:"fsyncs"`  // txn log fsyncs: zk_cnt_fsynctime or zkgo_wal_syncs (-1: not reported)
	Entries int64 `json:"entries"` // zkgo_wal_entries (-1: not reported)
	Zxid    int64 `json:"zxid"`    // growth of the last zxid (-1: the epoch changed)
}

func (e *ensemble) addrs() string {
	a := make([]string, len(e.members))
	for i, m := range e.members {
		a[i] = m.addr()
	}
	return strings.Join(a, ",")
}

func (e *ensemble) pids() []int {
	p := make([]int, len(e.members))
	for i, m := range e.members {
		if m.cmd != nil {
			p[i] = m.pid()
		}
	}
	return p
}

// distinctPorts returns n free loopback ports, all different.
func distinctPorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, errors.New("no free ports")
		}
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// newEnsemble writes the members' zoo.cfg and myid in a new directory
// under root; argv returns a member's command line.
func newEnsemble(name, root, extra string, argv func(dir, cfg string) ([]string, error)) (*ensemble, error) {
	dir, err := os.MkdirTemp(root, name+"-ensemble-")
	if err != nil {
		return nil, err
	}
	ports, err := distinctPorts(3 * clusterSize)
	if err != nil {
		return nil, err
	}
	var lines []string
	for i := 0; i < clusterSize; i++ {
		// server.N=host:peerPort:electionPort;clientHost:clientPort
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d;127.0.0.1:%d", i+1, ports[3*i+1], ports[3*i+2], ports[3*i]))
	}
	e := &ensemble{name: name, dir: dir}
	for i := 0; i < clusterSize; i++ {
		mdir := filepath.Join(dir, strconv.Itoa(i+1))
		if err := os.MkdirAll(filepath.Join(mdir, "data"), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(mdir, "data", "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
			return nil, err
		}
		text := zooCfg(mdir, ports[3*i], extra+"initLimit=10\nsyncLimit=5\n"+strings.Join(lines, "\n")+"\n")
		cfg := filepath.Join(mdir, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			return nil, err
		}
		av, err := argv(mdir, cfg)
		if err != nil {
			return nil, err
		}
		e.members = append(e.members, &server{name: fmt.Sprintf("%s member %d", name, i+1), dir: mdir, port: ports[3*i], argv: av})
	}
	return e, nil
}

func newZooKeeperEnsemble(root, heap string) (*ensemble, error) {
	return newEnsemble("zookeeper", root, "", func(dir, cfg string) ([]string, error) {
		return zooKeeperArgv(dir, heap, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
	})
}

func newZkgoEnsemble(bin, root string) (*ensemble, error) {
	return newEnsemble("zkgo", root, "", func(dir, cfg string) ([]string, error) {
		return []string{bin, "server", "-log-level", "warn", cfg}, nil
	})
}

// start launches the members and waits until the ensemble serves: every
// member's srvr reports Mode leader or follower with exactly one leader
// (zkgo: every member's mntr names that leader as zkgo_raft_leader), and
// a session on every member answers a read. It returns the time from
// launching until then and the leader's index (0-based).
func (e *ensemble) start(ctx context.Context, timeout time.Duration) (time.Duration, int, error) {
	t0 := time.Now()
	for _, m := range e.members {
		if err := m.launch(); err != nil {
			e.kill()
			return 0, -1, err
		}
	}
	deadline := t0.Add(timeout)
	for {
		for _, m := range e.members {
			if !m.alive() {
				e.kill()
				return 0, -1, fmt.Errorf("%s exited during startup:\n%s", m.name, m.logTail())
			}
		}
		if lead, ok := e.serving(); ok {
			return time.Since(t0), lead, nil
		}
		if ctx.Err() != nil {
			e.kill()
			return 0, -1, ctx.Err()
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, m := range e.members {
				r, err := apachezk.FourLetterWord(m.addr(), "srvr", time.Second)
				fmt.Fprintf(&b, "=== %s: srvr: %q %v\n%s", m.name, r, err, m.logTail())
			}
			e.kill()
			return 0, -1, fmt.Errorf("%s ensemble did not serve within %v:\n%s", e.name, timeout, b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serving reports whether the ensemble serves, and its leader.
func (e *ensemble) serving() (int, bool) {
	lead, ok := e.leader()
	if !ok {
		return -1, false
	}
	if e.name == "zkgo" {
		for _, m := range e.members {
			if mntr(m.addr())["zkgo_raft_leader"] != int64(lead+1) {
				return -1, false
			}
		}
	}
	for _, m := range e.members {
		if ok, err := bench.Exists(m.addr(), "/"); err != nil || !ok {
			return -1, false
		}
	}
	if r, err := apachezk.FourLetterWord(e.members[lead].addr(), "srvr", time.Second); err == nil {
		if v, ok := srvrVersion(r); ok {
			e.version = v
		}
	}
	return lead, true
}

// leader returns the index of the one member whose srvr says Mode:
// leader, if every member answers leader or follower.
func (e *ensemble) leader() (int, bool) {
	lead, n := -1, 0
	for i, m := range e.members {
		r, err := apachezk.FourLetterWord(m.addr(), "srvr", time.Second)
		if err != nil {
			return -1, false
		}
		switch srvrField(r, "Mode") {
		case "leader":
			lead, n = i, n+1
		case "follower":
		default:
			return -1, false
		}
	}
	return lead, n == 1
}

// counters reads every member's fsync and zxid counters.
// cpu is the CPU time (utime+stime) of the ensemble's member processes
// together.
func (e *ensemble) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, m := range e.members {
		c, err := procCPU(m.pid())
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

func (e *ensemble) counters() []memberDelta {
	out := make([]memberDelta, len(e.members))
	lead, _ := e.leader()
	for i, m := range e.members {
		d := memberDelta{Member: i + 1, Leader: i == lead, Fsyncs: -1, Entries: -1, Zxid: -1}
		kv := mntr(m.addr())
		if v, ok := kv["zk_cnt_fsynctime"]; ok {
			d.Fsyncs = v
		}
		if v, ok := kv["zkgo_wal_syncs"]; ok {
			d.Fsyncs = v
		}
		if v, ok := kv["zkgo_wal_entries"]; ok {
			d.Entries = v
		}
		if r, err := apachezk.FourLetterWord(m.addr(), "srvr", 5*time.Second); err == nil {
			if z, err := strconv.ParseInt(strings.TrimPrefix(srvrField(r, "Zxid"), "0x"), 16, 64); err == nil {
				d.Zxid = z
			}
		}
		out[i] = d
	}
	return out
}

// deltas is after - before, member by member (leader: as before the run).
func deltas(before, after []memberDelta) []memberDelta {
	out := make([]memberDelta, len(before))
	sub := func(a, b int64) int64 {
		if a < 0 || b < 0 {
			return -1
		}
		return a - b
	}
	for i := range before {
		b, a := before[i], after[i]
		d := memberDelta{Member: b.Member, Leader: b.Leader, Fsyncs: sub(a.Fsyncs, b.Fsyncs), Entries: sub(a.Entries, b.Entries), Zxid: -1}
		if a.Zxid >= 0 && b.Zxid >= 0 && a.Zxid>>32 == b.Zxid>>32 {
			d.Zxid = a.Zxid - b.Zxid
		}
		out[i] = d
	}
	return out
}

// members are the processes of a 3-member ensemble (ZooKeeper's, zkgo's
// or etcd's).
type members []*server

// alive reports the first member whose process died, with its log's tail.
func (ms members) alive() error {
	for _, m := range ms {
		if !m.alive() {
			return fmt.Errorf("%s died:\n%s", m.name, m.logTail())
		}
	}
	return nil
}

// kill stops every member with SIGKILL.
func (ms members) kill() {
	for _, m := range ms {
		m.kill()
	}
}

// stop stops every member gracefully, in parallel (SIGKILL after a minute).
func (ms members) stop() error {
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.stop()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mntr returns the integer values of the server's mntr answer.
func mntr(addr string) map[string]int64 {
	out := map[string]int64{}
	r, err := apachezk.FourLetterWord(addr, "mntr", 5*time.Second)
	if err != nil {
		return out
	}
	for _, l := range strings.Split(r, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			out[f[0]] = v
		}
	}
	return out
}

// srvrField returns the value of "Key: value" in a srvr answer.
func srvrField(r, key string) string {
	for _, l := range strings.Split(r, "\n") {
		if v, ok := strings.CutPrefix(l, key+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// runClusters starts both ensembles side by side and runs todo against
// them, alternating which goes first, -repeats times.
func runClusters(ctx context.Context, o options, bin, root string, todo []spec, rep *report) error {
	cr := &clusterResult{Members: clusterSize, Heap: o.clusterHeap, Leader: map[string]int{}, StartSec: map[string]float64{},
		RSS: map[string][]int64{}, Versions: map[string]string{}, LeaderChanges: map[string][]string{},
		Failed: map[string][]string{}}
	for _, s := range todo {
		cr.specOrder = append(cr.specOrder, s.id)
	}
	rep.Cluster = cr
	zk, err := newZooKeeperEnsemble(root, o.clusterHeap)
	if err != nil {
		return err
	}
	defer zk.kill()
	zg, err := newZkgoEnsemble(bin, root)
	if err != nil {
		return err
	}
	defer zg.kill()
	leaders := map[string]int{}
	for _, e := range []*ensemble{zk, zg} {
		logf("starting the %d-member %s ensemble", clusterSize, e.name)
		d, lead, err := e.start(ctx, 3*time.Minute)
		if err != nil {
			return err
		}
		leaders[e.name] = lead
		cr.Leader[e.name] = lead + 1
		cr.StartSec[e.name] = d.Seconds()
		cr.Versions[e.name] = e.version
		if e.name == "zookeeper" && rep.ZKVersion == "" {
			rep.ZKVersion = e.version
		}
		if e.name == "zkgo" && rep.ZkgoVer == "" {
			rep.ZkgoVer = e.version
		}
		logf("%s ensemble serves after %.1f s on %s (pids %v); member %d leads", e.name, d.Seconds(), e.addrs(), e.pids(), lead+1)
	}
	var ec *etcdCluster
	if o.etcd != "" && slices.ContainsFunc(todo, etcdSpec) {
		if ec, err = newEtcdCluster(o.etcd, root, clusterSize); err != nil {
			return err
		}
		ec.settle = o.etcdSettle
		defer ec.kill()
		logf("starting the %d-member etcd cluster", clusterSize)
		d, lead, err := ec.start(ctx, 3*time.Minute)
		if err != nil {
			return err
		}
		leaders["etcd"] = lead
		cr.Leader["etcd"] = lead + 1
		cr.StartSec["etcd"] = d.Seconds()
		cr.Versions["etcd"] = ec.version
		rep.EtcdVer = ec.version
		logf("etcd cluster serves after %.1f s on %s (pids %v); member %d leads", d.Seconds(), strings.Join(ec.endpoints(), ","), ec.pids(), lead+1)
	}

	// Global warm-up, shorter than the standalone one.
	for _, e := range []*ensemble{zk, zg} {
		for _, w := range []bench.Config{
			{Workload: "mixed", Ratio: 2, Duration: 8 * time.Second},
			{Workload: "create", Duration: 2 * time.Second},
			{Workload: "lock", Contenders: 16, Duration: 2 * time.Second},
		} {
			w.Server = e.addrs()
			if _, err := bench.Run(ctx, w); err != nil {
				return fmt.Errorf("warm-up of the %s ensemble, %s: %w", e.name, w.Workload, err)
			}
		}
		logf("warmed up the %s ensemble", e.name)
	}
	if ec != nil {
		if err := ec.warmUp(ctx); err != nil {
			return err
		}
		logf("warmed up the etcd cluster")
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
			// zookeeper, zkgo (, etcd: nil), the other way round every
			// other repeat.
			order := []*ensemble{zk, zg}
			if ec != nil && etcdSpec(sp) {
				order = append(order, nil)
			}
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, e := range order {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				n++
				if e == nil {
					res, err := runEtcdCluster(ctx, o, ec, sp, r, cr, leaders)
					if err != nil {
						return err
					}
					if res != nil {
						logf("[%3d/%d] cluster %-9s %-9s r%d  %10.0f %s/s  p99 %.3f ms  errors %d  (%v elapsed)",
							n, total, sp.id, "etcd", r+1, res.OpsPerSec, res.Unit, res.Latency.P99, res.Errors, time.Since(t0).Round(time.Second))
					}
					time.Sleep(300 * time.Millisecond)
					continue
				}
				cfg := sp.cfg
				cfg.Server = e.addrs()
				cfg.Duration, cfg.Warmup = o.duration, warmupFor(o, cfg)
				var before, after []memberDelta
				cfg.AfterSetup = func() { before = e.counters() }
				cfg.AfterLoad = func() { after = e.counters() }
				var cpu0, cpu1 time.Duration
				var cpuErr error
				cfg.MeasureBegin = func() { cpu0, cpuErr = e.cpu() }
				cfg.MeasureEnd = func() {
					if cpuErr == nil {
						cpu1, cpuErr = e.cpu()
					}
				}
				res, err := bench.Run(ctx, cfg)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if aerr := e.alive(); aerr != nil {
						return fmt.Errorf("%s on the %s ensemble: %w (%v)", sp.id, e.name, err, aerr)
					}
					// One stuck run (a request never answered) must not
					// lose the whole comparison: note it and go on.
					msg := fmt.Sprintf("%s repeat %d: %v", sp.id, r+1, err)
					logf("run failed on the %s ensemble: %s", e.name, msg)
					cr.Failed[e.name] = append(cr.Failed[e.name], msg)
					time.Sleep(time.Second)
					continue
				}
				if err := e.alive(); err != nil {
					return fmt.Errorf("during %s: %w", sp.id, err)
				}
				ru := run{Spec: sp.id, Server: e.name, Repeat: r, Result: res}
				if before != nil && after != nil {
					ru.Members = deltas(before, after)
				}
				if cpuErr == nil && cpu1 > cpu0 {
					ru.ServerCPU = cpu1 - cpu0
				}
				cr.Runs = append(cr.Runs, ru)
				lead, ok := e.leader()
				if ok && lead != leaders[e.name] {
					msg := fmt.Sprintf("member %d leads after %s (repeat %d), member %d before", lead+1, sp.id, r+1, leaders[e.name]+1)
					logf("leader change in the %s ensemble: %s", e.name, msg)
					cr.LeaderChanges[e.name] = append(cr.LeaderChanges[e.name], msg)
					leaders[e.name] = lead
				}
				logf("[%3d/%d] cluster %-9s %-9s r%d  %10.0f %s/s  p99 %.3f ms  errors %d  %s(%v elapsed)",
					n, total, sp.id, e.name, r+1, res.OpsPerSec, res.Unit, res.Latency.P99, res.Errors, fsyncSummary(ru.Members), time.Since(t0).Round(time.Second))
				time.Sleep(300 * time.Millisecond)
			}
		}
	}
	for _, e := range []*ensemble{zk, zg} {
		for _, p := range e.pids() {
			rss, _ := rssBytes(p)
			cr.RSS[e.name] = append(cr.RSS[e.name], rss)
		}
	}
	if ec != nil {
		for _, p := range ec.pids() {
			rss, _ := rssBytes(p)
			cr.RSS["etcd"] = append(cr.RSS["etcd"], rss)
		}
		if err := ec.stop(); err != nil {
			logf("stopping the etcd cluster: %v", err)
		}
	}
	var wg sync.WaitGroup
	var errZK, errZG error
	wg.Add(2)
	go func() { defer wg.Done(); errZK = zk.stop() }()
	go func() { defer wg.Done(); errZG = zg.stop() }()
	wg.Wait()
	if err := errors.Join(errZK, errZG); err != nil {
		logf("stopping the ensembles: %v", err)
	}
	return nil
}

// runEtcdCluster runs repeat r of sp on the etcd cluster; a failed run is
// noted and left out (nil result), as for the ensembles.
func runEtcdCluster(ctx context.Context, o options, ec *etcdCluster, sp spec, r int, cr *clusterResult, leaders map[string]int) (*bench.Result, error) {
	cfg := sp.cfg
	cfg.Duration, cfg.Warmup = o.duration, o.warmup
	res, err := ec.run(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if aerr := ec.alive(); aerr != nil {
			return nil, fmt.Errorf("%s on the etcd cluster: %w (%v)", sp.id, err, aerr)
		}
		msg := fmt.Sprintf("%s repeat %d: %v", sp.id, r+1, err)
		logf("run failed on the etcd cluster: %s", msg)
		cr.Failed["etcd"] = append(cr.Failed["etcd"], msg)
		time.Sleep(time.Second)
		return nil, nil
	}
	if err := ec.alive(); err != nil {
		return nil, fmt.Errorf("during %s: %w", sp.id, err)
	}
	cr.Runs = append(cr.Runs, run{Spec: sp.id, Server: "etcd", Repeat: r, Result: res})
	if lead, err := ec.currentLeader(ctx); err == nil && lead != leaders["etcd"] {
		msg := fmt.Sprintf("member %d leads after %s (repeat %d), member %d before", lead+1, sp.id, r+1, leaders["etcd"]+1)
		logf("leader change in the etcd cluster: %s", msg)
		cr.LeaderChanges["etcd"] = append(cr.LeaderChanges["etcd"], msg)
		leaders["etcd"] = lead
	}
	return res, nil
}

// fsyncSummary is the log's note on a run's fsyncs per transaction.
func fsyncSummary(ms []memberDelta) string {
	f := fsyncsPerTxn([][]memberDelta{ms})
	if f == nil {
		return ""
	}
	parts := make([]string, len(f))
	for i, v := range f {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("fsyncs/txn leader,followers %s  ", strings.Join(parts, ","))
}

// fsyncsPerTxn sums the runs' deltas and returns the fsyncs per
// transaction of the leader, then of each follower (transactions: the
// growth of the leader's zxid); nil when not known.
func fsyncsPerTxn(runs [][]memberDelta) []float64 {
	var txns int64
	sums := map[int]int64{} // by member
	var order []int
	leaderOf := map[int]bool{}
	for _, ms := range runs {
		for _, m := range ms {
			if m.Fsyncs < 0 {
				return nil
			}
			if m.Leader {
				if m.Zxid < 0 {
					return nil
				}
				txns += m.Zxid
				leaderOf[m.Member] = true
			}
			if _, ok := sums[m.Member]; !ok {
				order = append(order, m.Member)
			}
			sums[m.Member] += m.Fsyncs
		}
	}
	if txns <= 0 || len(leaderOf) != 1 {
		return nil // no writes, or the leader changed between runs
	}
	var out []float64
	for _, id := range order {
		if leaderOf[id] {
			out = append([]float64{float64(sums[id]) / float64(txns)}, out...)
		} else {
			out = append(out, float64(sums[id])/float64(txns))
		}
	}
	return out
}

// entriesPerFsync sums zkgo's WAL counters over the runs: entries per
// fsync of the leader, then of each follower; nil when not reported.
func entriesPerFsync(runs [][]memberDelta) []float64 {
	type acc struct{ syncs, entries int64 }
	sums := map[int]*acc{}
	var order []int
	leader := 0
	for _, ms := range runs {
		for _, m := range ms {
			if m.Entries < 0 || m.Fsyncs < 0 {
				return nil
			}
			if m.Leader {
				if leader != 0 && leader != m.Member {
					return nil
				}
				leader = m.Member
			}
			if sums[m.Member] == nil {
				sums[m.Member] = &acc{}
				order = append(order, m.Member)
			}
			sums[m.Member].syncs += m.Fsyncs
			sums[m.Member].entries += m.Entries
		}
	}
	if leader == 0 {
		return nil
	}
	var out []float64
	for _, id := range order {
		a := sums[id]
		v := 0.0
		if a.syncs > 0 {
			v = float64(a.entries) / float64(a.syncs)
		}
		if id == leader {
			out = append([]float64{v}, out...)
		} else {
			out = append(out, v)
		}
	}
	return out
}
