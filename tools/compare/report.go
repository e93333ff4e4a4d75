package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

const (
	beginMarker = "<!-- BEGIN MEASURED: written by go run ./tools/compare; edit outside these markers -->"
	endMarker   = "<!-- END MEASURED -->"
)

// agg is the spread of one figure over the repeats.
type agg struct{ med, lo, hi float64 }

func aggregate(v []float64) agg {
	if len(v) == 0 {
		return agg{math.NaN(), math.NaN(), math.NaN()}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return agg{med, s[0], s[len(s)-1]}
}

type row struct {
	id, label, unit string
	ops, p99        map[string]agg // by server
	idle            map[string]agg // sessions-idle: bytes per idle session
	cpu             map[string]agg // the server's CPU µs per operation
	errors          map[string]int64
	etcdParams      map[string]any // the params of an etcd run (-etcd-settle)
}

func (r *report) rows() []row { return r.rowsOf(r.Runs, r.specOrder) }

func (r *report) rowsOf(runs []run, order []string) []row {
	var out []row
	for _, id := range order {
		rw := row{id: id, label: r.specLabels[id], ops: map[string]agg{}, p99: map[string]agg{}, idle: map[string]agg{}, cpu: map[string]agg{}, errors: map[string]int64{}}
		for _, srv := range []string{"zookeeper", "zkgo", "etcd"} {
			var ops, p99, idle, cpu []float64
			for _, ru := range runs {
				if ru.Spec != id || ru.Server != srv {
					continue
				}
				ops = append(ops, ru.Result.OpsPerSec)
				p99 = append(p99, ru.Result.Latency.P99)
				if ru.IdleSessionBytes != 0 {
					idle = append(idle, ru.IdleSessionBytes)
				}
				if c := ru.cpuPerOp(); !math.IsNaN(c) {
					cpu = append(cpu, c)
				}
				rw.unit = ru.Result.Unit
				rw.errors[srv] += ru.Result.Errors
				if srv == "etcd" {
					rw.etcdParams = ru.Result.Params
				}
			}
			if len(ops) > 0 {
				rw.ops[srv], rw.p99[srv] = aggregate(ops), aggregate(p99)
			}
			if len(idle) > 0 {
				rw.idle[srv] = aggregate(idle)
			}
			if len(cpu) > 0 {
				rw.cpu[srv] = aggregate(cpu)
			}
		}
		out = append(out, rw)
	}
	return out
}

func (rw row) ratio() float64 { return rw.ops["zkgo"].med / rw.ops["zookeeper"].med }

// both reports whether the row has figures of ZooKeeper and zkgo.
func (rw row) both() bool {
	_, zk := rw.ops["zookeeper"]
	_, zg := rw.ops["zkgo"]
	return zk && zg
}

func fmtRate(a agg) string {
	if math.IsNaN(a.med) {
		return "—"
	}
	return fmt.Sprintf("%s (%s–%s)", group(a.med), group(a.lo), group(a.hi))
}

// fmtCPU formats the servers' CPU per operation (µs) and ZooKeeper's ÷
// zkgo's; a missing figure is a dash.
func fmtCPU(zk, zg agg) string {
	if zk == (agg{}) || zg == (agg{}) || math.IsNaN(zk.med) || math.IsNaN(zg.med) || zg.med == 0 {
		return "—"
	}
	return fmt.Sprintf("%s / %s (**%.1f×**)", group(zk.med), group(zg.med), zk.med/zg.med)
}

func fmtMs(a agg) string {
	if math.IsNaN(a.med) {
		return "—"
	}
	return fmt.Sprintf("%s (%s–%s)", ms(a.med), ms(a.lo), ms(a.hi))
}

func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func group(v float64) string {
	n := int64(math.Round(v))
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/1e3) }

// target is one of issue 7's goals.
type target struct {
	name   string
	ids    []string
	ratio  float64 // throughput ratio zkgo/ZooKeeper at least this
	p99    bool    // zkgo's p99 no worse than ZooKeeper's
	absP99 float64 // zkgo's p99 below this many ms
}

var targets = []target{
	{name: "getData ≥ 2× ZooKeeper", ids: []string{"get-hot", "get-10k"}, ratio: 2},
	{name: "setData ≥ 1.5×", ids: []string{"set"}, ratio: 1.5},
	{name: "create ≥ 1.5×", ids: []string{"create", "create-eseq"}, ratio: 1.5},
	{name: "mixed ≥ 2×", ids: []string{"mixed-2", "mixed-10", "mixed-100"}, ratio: 2},
	{name: "lock handoffs ≥ 2×", ids: []string{"lock-2", "lock-16", "lock-64", "lock-16-gozk", "lock-16-curator"}, ratio: 2},
	{name: "p99 no worse at the same load (open loop)", ids: []string{"get-rate", "set-rate"}, p99: true},
	{name: "latch graceful handover p99 < 1 ms", ids: []string{"latch"}, absP99: 1},
}

func writeReport(path string, r *report) error {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	rows := r.rows()
	byID := map[string]row{}
	for _, rw := range rows {
		byID[rw.id] = rw
	}
	w("%s\n\n", beginMarker)
	w("## Measured results\n\n")
	w("Measured on %s (%s), the whole run took %s:\n\n", r.Started.UTC().Format("2006-01-02"), r.Started.UTC().Format("15:04 MST"),
		r.Finished.Sub(r.Started).Round(time.Second))
	w("```sh\n%s\n```\n\n", r.Command)
	m := r.Machine
	w("| | |\n|---|---|\n")
	w("| machine | %d cores (%s), %s memory, %s, data on %s |\n", m.Cores, m.CPU, m.Memory, m.Kernel, m.Filesystem)
	w("| disk: 4 KiB write + fdatasync, %d× | overwrite of a preallocated file p50 %s, p99 %s; append p50 %s, p99 %s |\n",
		r.Fsync.N, us(r.Fsync.OverwriteP50), us(r.Fsync.Overwrite99), us(r.Fsync.AppendP50), us(r.Fsync.AppendP99))
	standalone := len(rows) > 0 || len(r.Memory) > 0
	var zkHow, zgHow []string
	if standalone {
		zkHow = append(zkHow, fmt.Sprintf("standalone with `-Xms%s -Xmx%s`", r.Heap, r.Heap))
		zgHow = append(zgHow, "standalone")
	}
	if c := r.Cluster; c != nil {
		zkHow = append(zkHow, fmt.Sprintf("%d-member ensembles of `QuorumPeerMain` with `-Xms%s -Xmx%s` each", c.Members, c.Heap, c.Heap))
		zgHow = append(zgHow, fmt.Sprintf("%d-member ensembles of `zkgo server zooN.cfg`", c.Members))
	}
	w("| Apache ZooKeeper | Debian package zookeeper %s (srvr: %s); %s; %s; default collector (G1), forceSync=yes, maxClientCnxns=0, log level WARN |\n",
		orDash(m.ZKPackage), orDash(r.ZKVersion), orDash(m.Java), strings.Join(zkHow, "; "))
	w("| zkgo | `zkgo server` (srvr: %s), from commit %s, %s; %s; durable (fsync before the reply), maxClientCnxns=0, `-log-level warn` |\n",
		orDash(r.ZkgoVer), orDash(m.Commit), m.GoVersion, strings.Join(zgHow, "; "))
	if r.EtcdVer != "" {
		var how []string
		if len(rows) > 0 {
			how = append(how, "standalone")
		}
		if r.Cluster != nil {
			how = append(how, fmt.Sprintf("%d-member clusters", r.Cluster.Members))
		}
		w("| etcd | Debian package etcd-server %s (server version %s); %s; each member `%s` besides its name, data directory, loopback URLs and initial cluster; otherwise etcd's defaults (WAL fsync before commit, snapshot count, heartbeat 100 ms, election timeout 1 s, backend quota, no auto-compaction); client go.etcd.io/etcd/client/v3 %s, its `concurrency` package |\n",
			orDash(m.EtcdPackage), r.EtcdVer, strings.Join(how, "; "), strings.Join(etcdFlags, " "), orDash(m.EtcdClient))
	}
	w("| load | `tools/bench` (the code of `zkgo bench`) in the compare process, same client for both: 16 sessions, 64 workers, 100-byte data, closed loop unless a rate is given |\n")
	w("| runs | %v measured after %v warm-up (Curator's rows: at least %v, for its client JVM's JIT; all after a global warm-up of each server), %d repeats per server, alternating which server goes first; figures are medians (min–max over the repeats) |\n\n",
		r.Duration, r.Warmup, max(r.Warmup, jvmWarmup), r.Repeats)

	if len(rows) > 0 {
		w("### Throughput and latency\n\n")
		writeTable(w, rows)
		w("Latency is per request, except: lock = wait for the lock; latch = leader's Close until the other latch leads; ")
		w("selector = end of one turn until the next leader starts; watch = setData sent until each watcher is notified; ")
		w("sessions churn = connect + closeSession. Rows with a rate are open loop (latency from the scheduled send time).\n\n")
		writeEtcdTable(w, rows)
		if rw, ok := byID["sessions-idle"]; ok && len(rw.idle) > 0 {
			w("Memory per idle session (RSS growth while the 10,000 idle sessions were opened, median): ZooKeeper %.0f B, zkgo %.0f B. ",
				rw.idle["zookeeper"].med, rw.idle["zkgo"].med)
			w("ZooKeeper's figure says little: its heap is reserved up front (-Xms) and RSS grows only as the JVM touches heap pages.\n\n")
		}
	}

	writeSequential(w, r)

	var memZK, memZG *memResult
	for i := range r.Memory {
		if r.Memory[i].Server == "zookeeper" {
			memZK = &r.Memory[i]
		} else {
			memZG = &r.Memory[i]
		}
	}
	if memZK != nil && memZG != nil {
		w("### Memory per znode and restart\n\n")
		w("A fresh server of each kind gets %s znodes of 100 bytes (1,000 per parent, pipelined over 16 sessions); RSS is read from /proc 5 s after the load. ", group(float64(memZK.Requested)))
		w("Per znode = growth / znodes added (the parents included). The restart is timed from starting the process on the same data until a read of the last znode succeeds.\n\n")
		w("| | ZooKeeper | zkgo |\n|---|--:|--:|\n")
		w("| znodes added | %s | %s |\n", group(float64(memZK.Znodes)), group(float64(memZG.Znodes)))
		w("| load time | %.1f s (%s creates/s) | %.1f s (%s creates/s) |\n", memZK.LoadSec, group(float64(memZK.Znodes)/memZK.LoadSec), memZG.LoadSec, group(float64(memZG.Znodes)/memZG.LoadSec))
		w("| RSS before → after | %.0f → %.0f MiB | %.0f → %.0f MiB |\n", mib(memZK.RSSBefore), mib(memZK.RSSAfter), mib(memZG.RSSBefore), mib(memZG.RSSAfter))
		w("| **RSS growth per znode** | **%.0f B** | **%.0f B** |\n", perZnode(memZK.RSSAfter-memZK.RSSBefore, memZK.Znodes), perZnode(memZG.RSSAfter-memZG.RSSBefore, memZG.Znodes))
		if memZK.HeapAfter > 0 {
			w("| Java heap used after a full GC, per znode | %.0f B | — |\n", perZnode(memZK.HeapAfter-memZK.HeapBefore, memZK.Znodes))
		}
		w("| RSS after the restart, growth over the fresh server, per znode | %.0f B | %.0f B |\n", perZnode(memZK.RSSRestarted-memZK.RSSBefore, memZK.Znodes), perZnode(memZG.RSSRestarted-memZG.RSSBefore, memZG.Znodes))
		w("| data directory after the load | %.0f MiB | %.0f MiB |\n", mib(memZK.DataBytes), mib(memZG.DataBytes))
		w("| **restart after SIGTERM** | **%.2f s** | **%.2f s** |\n", memZK.RestartSec, memZG.RestartSec)
		w("| restart after kill -9 | %.2f s | %.2f s |\n", memZK.KillRestartSec, memZG.KillRestartSec)
		if memZG.SnapBytes > 0 {
			w("| last snapshot taken during the load | — | %.0f MiB in %.1f s |\n", mib(memZG.SnapBytes), float64(memZG.SnapMs)/1e3)
		}
		w("\n")
		for _, mm := range []*memResult{memZK, memZG} {
			if mm.Note != "" {
				w("Note (%s): %s.\n\n", mm.Server, mm.Note)
			}
		}
	} else if memZG != nil {
		w("### Memory per znode and restart (zkgo alone)\n\n")
		w("A fresh zkgo server gets %s znodes of 100 bytes (1,000 per parent, pipelined over 16 sessions); RSS is read from /proc 5 s after the load.\n\n", group(float64(memZG.Requested)))
		w("| | zkgo |\n|---|--:|\n")
		w("| znodes added | %s |\n", group(float64(memZG.Znodes)))
		w("| load time | %.1f s (%s creates/s) |\n", memZG.LoadSec, group(float64(memZG.Znodes)/memZG.LoadSec))
		w("| RSS before → after | %.0f → %.0f MiB |\n", mib(memZG.RSSBefore), mib(memZG.RSSAfter))
		w("| **RSS growth per znode** | **%.0f B** |\n", perZnode(memZG.RSSAfter-memZG.RSSBefore, memZG.Znodes))
		w("| RSS after the restart, growth per znode | %.0f B |\n", perZnode(memZG.RSSRestarted-memZG.RSSBefore, memZG.Znodes))
		w("| data directory after the load | %.0f MiB |\n", mib(memZG.DataBytes))
		if memZG.SnapBytes > 0 {
			w("| last snapshot taken during the load | %.0f MiB in %.1f s |\n", mib(memZG.SnapBytes), float64(memZG.SnapMs)/1e3)
		}
		w("| **restart after SIGTERM** | **%.2f s** |\n", memZG.RestartSec)
		w("| restart after kill -9 | %.2f s |\n\n", memZG.KillRestartSec)
		if memZG.Note != "" {
			w("Note: %s.\n\n", memZG.Note)
		}
	}

	if standalone {
		writeTargets(w, rows, byID, memZG)
	}
	if r.Cluster != nil {
		writeCluster(w, r)
	}
	for _, n := range r.Notes {
		w("%s\n\n", n)
	}
	w("%s\n", endMarker)
	return spliceReport(path, b.String())
}

// writeTable writes the throughput and latency table of rows and the line
// on failed operations.
func writeTable(w func(string, ...any), rows []row) {
	withCPU := slices.ContainsFunc(rows, func(rw row) bool { return len(rw.cpu) > 0 })
	cpuHead, cpuRule := "", ""
	if withCPU {
		cpuHead, cpuRule = " server CPU µs per op, ZooKeeper / zkgo (ZK÷zkgo) |", "--:|"
	}
	w("| workload | unit | ZooKeeper /s | zkgo /s | zkgo/ZK | ZooKeeper p99 ms | zkgo p99 ms |%s\n", cpuHead)
	w("|---|---|--:|--:|--:|--:|--:|%s\n", cpuRule)
	for _, rw := range rows {
		cpu := ""
		if withCPU {
			cpu = " " + fmtCPU(rw.cpu["zookeeper"], rw.cpu["zkgo"]) + " |"
		}
		w("| %s | %s | %s | %s | **%.2f×** | %s | %s |%s\n", rw.label, rw.unit, fmtRate(rw.ops["zookeeper"]), fmtRate(rw.ops["zkgo"]),
			rw.ratio(), fmtMs(rw.p99["zookeeper"]), fmtMs(rw.p99["zkgo"]), cpu)
	}
	w("\n")
	if withCPU {
		w("Server CPU per operation: the server's utime+stime (every thread, 10 ms ticks; an ensemble's members together) over the measured window ÷ the operations in it, medians over the repeats; the load's client is another process (or a thread of this one) and is not counted.\n\n")
	}
	var errs []string
	for _, rw := range rows {
		for _, s := range []string{"zookeeper", "zkgo"} {
			if rw.errors[s] > 0 {
				errs = append(errs, fmt.Sprintf("%s on %s: %d", rw.id, s, rw.errors[s]))
			}
		}
	}
	if len(errs) == 0 {
		w("No operation failed in any run.\n\n")
	} else {
		w("Failed operations (counted, not in the latencies): %s.\n\n", strings.Join(errs, "; "))
	}
}

func writeTargets(w func(string, ...any), rows []row, byID map[string]row, memZG *memResult) {
	w("### Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range targets {
		var parts []string
		met, any := true, false
		for _, id := range t.ids {
			rw, ok := byID[id]
			if !ok || !rw.both() {
				continue
			}
			any = true
			switch {
			case t.ratio > 0:
				x := rw.ratio()
				parts = append(parts, fmt.Sprintf("%s %.2f×", id, x))
				met = met && x >= t.ratio
			case t.p99:
				zk, zg := rw.p99["zookeeper"].med, rw.p99["zkgo"].med
				parts = append(parts, fmt.Sprintf("%s p99 %s vs %s ms", id, ms(zg), ms(zk)))
				met = met && zg <= zk
			case t.absP99 > 0:
				zg := rw.p99["zkgo"]
				parts = append(parts, fmt.Sprintf("p99 %s ms (worst repeat %s ms)", ms(zg.med), ms(zg.hi)))
				met = met && zg.med < t.absP99
			}
		}
		if !any {
			continue
		}
		w("| %s | %s | %s |\n", t.name, strings.Join(parts, "; "), yesNo(met))
	}
	if memZG != nil {
		per := perZnode(memZG.RSSAfter-memZG.RSSBefore, memZG.Znodes)
		w("| RSS growth per znode of 100 B ≤ 250 B | %.0f B (after a restart: %.0f B) | %s |\n", per,
			perZnode(memZG.RSSRestarted-memZG.RSSBefore, memZG.Znodes), yesNo(per <= 250))
	}
	// p99 at saturation, for information.
	var worse []string
	for _, rw := range rows {
		if rw.both() && rw.p99["zkgo"].med > rw.p99["zookeeper"].med {
			worse = append(worse, fmt.Sprintf("%s (%s vs %s ms)", rw.id, ms(rw.p99["zkgo"].med), ms(rw.p99["zookeeper"].med)))
		}
	}
	w("\n")
	if len(rows) > 0 {
		if len(worse) == 0 {
			w("zkgo's median p99 is no worse than ZooKeeper's in every row.\n\n")
		} else {
			w("Rows where zkgo's median p99 is worse than ZooKeeper's: %s.\n\n", strings.Join(worse, ", "))
		}
	}
}

// writeCluster writes the section on the 3-member ensembles.
func writeCluster(w func(string, ...any), r *report) {
	c := r.Cluster
	w("### %d-member clusters on one machine\n\n", c.Members)
	w("Both ensembles run at the same time on this machine: Apache ZooKeeper as %d JVMs (`QuorumPeerMain`, `-Xms%s -Xmx%s` each) ", c.Members, c.Heap, c.Heap)
	w("and zkgo as %d `zkgo server zooN.cfg` processes, each member with its own data directory and `myid`, ", c.Members)
	w("the zoo.cfg keys above plus initLimit=10, syncLimit=5 and `server.N=127.0.0.1:peerPort:electionPort;127.0.0.1:clientPort` lines ")
	w("(zkgo runs raft over peerPort and does not use electionPort). ")
	procs := 2 * c.Members
	if _, ok := c.Versions["etcd"]; ok {
		procs += c.Members // the etcd cluster runs beside them
	}
	w("**All %d server processes and the load generator share the machine's %d cores**, and every member fsyncs each write on the same disk, ", procs, r.Machine.Cores)
	w("so these figures say how the two designs behave when a quorum shares one machine, not what an ensemble on %d machines would do. ", c.Members)
	w("The load's sessions are spread round-robin over the members (16 sessions or contenders: 6, 5 and 5; the latch's two on members 1 and 2; the setup session on member 1); ")
	w("each load session syncs once before the load; reads are answered by the member a session is connected to, writes go through the leader. ")
	w("The global warm-up of each ensemble is shorter than above (8 s mixed 2:1, 2 s create, 2 s lock); the runs are as above (%v after %v warm-up, %d repeats, alternating).\n\n",
		r.Duration, r.Warmup, r.Repeats)
	servers := []string{"zookeeper", "zkgo"}
	if _, ok := c.Versions["etcd"]; ok {
		servers = append(servers, "etcd")
		w("The %d-member etcd cluster (members with their own data directory, client and peer URLs on loopback) runs beside them at the same time, ", c.Members)
		w("its contenders spread over the members the same way; its global warm-up is 2 s of the lock with 16 contenders and 2 s of the handover.\n\n")
	}
	line := func(label string, f func(name string) string) {
		w("| %s |", label)
		for _, s := range servers {
			w(" %s |", f(s))
		}
		w("\n")
	}
	w("| | ZooKeeper | zkgo |")
	if len(servers) == 3 {
		w(" etcd |\n|---|--:|--:|--:|\n")
	} else {
		w("\n|---|--:|--:|\n")
	}
	line("leader when the ensemble first served", func(s string) string { return fmt.Sprintf("member %d", c.Leader[s]) })
	line("launch until every member served (one leader, a read answered on each)", func(s string) string { return fmt.Sprintf("%.1f s", c.StartSec[s]) })
	rss := func(name string) string {
		var p []string
		for _, v := range c.RSS[name] {
			p = append(p, fmt.Sprintf("%.0f", mib(v)))
		}
		if len(p) == 0 {
			return "—"
		}
		return strings.Join(p, " / ") + " MiB"
	}
	line("RSS of members 1 / 2 / 3 after the runs", rss)
	changes := func(name string) string {
		if len(c.LeaderChanges[name]) == 0 {
			return "none"
		}
		return strings.Join(c.LeaderChanges[name], "; ")
	}
	line("leader changes seen between the runs", changes)
	failed := func(name string) string {
		if len(c.Failed[name]) == 0 {
			return "none"
		}
		return strings.Join(c.Failed[name], "; ")
	}
	line("runs that failed (left out of the medians)", failed)
	w("\n")

	rows := r.rowsOf(c.Runs, c.specOrder)
	writeTable(w, rows)
	writeEtcdTable(w, rows)

	// Fsyncs per write, for the workloads that write.
	var lines []string
	for _, id := range c.specOrder {
		by := map[string][][]memberDelta{}
		var wl string
		for _, ru := range c.Runs {
			if ru.Spec == id && ru.Members != nil {
				by[ru.Server] = append(by[ru.Server], ru.Members)
				wl = ru.Result.Workload
			}
		}
		if wl == "get" || wl == "" {
			continue
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", r.specLabels[id],
			group(float64(txns(by["zookeeper"]))), fmtRatios(fsyncsPerTxn(by["zookeeper"])),
			group(float64(txns(by["zkgo"]))), fmtRatios(fsyncsPerTxn(by["zkgo"])), fmtRatios(entriesPerFsync(by["zkgo"]))))
	}
	if len(lines) > 0 {
		w("Fsyncs per write on each member, counted over the warm-up and the measurement of every repeat: transactions = growth of the leader's zxid; ")
		w("fsyncs of the transaction log from `mntr` (ZooKeeper `zk_cnt_fsynctime`, zkgo `zkgo_wal_syncs`); ")
		w("for zkgo also WAL entries per fsync (`zkgo_wal_entries` / `zkgo_wal_syncs`, the group-commit factor). Leader first, then the followers.\n\n")
		w("| workload | ZooKeeper transactions | ZooKeeper fsyncs per transaction | zkgo transactions | zkgo fsyncs per transaction | zkgo WAL entries per fsync |\n")
		w("|---|--:|--:|--:|--:|--:|\n")
		for _, l := range lines {
			w("%s\n", l)
		}
		w("\n")
	}
}

// txns sums the growth of the leader's zxid over runs.
func txns(runs [][]memberDelta) int64 {
	var n int64
	for _, ms := range runs {
		for _, m := range ms {
			if m.Leader && m.Zxid > 0 {
				n += m.Zxid
			}
		}
	}
	return n
}

func fmtRatios(v []float64) string {
	if v == nil {
		return "—"
	}
	p := make([]string, len(v))
	for i, x := range v {
		p[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(p, " / ")
}

func perZnode(b, n int64) float64 {
	if n <= 0 {
		return math.NaN()
	}
	return float64(b) / float64(n)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// spliceReport replaces the measured section of path (or creates the file).
func spliceReport(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	var out string
	switch {
	case i >= 0 && j > i:
		out = s[:i] + section + strings.TrimPrefix(s[j+len(endMarker):], "\n")
	case len(s) > 0:
		out = strings.TrimRight(s, "\n") + "\n\n" + section
	default:
		out = "# Benchmarks\n\n" + section
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// writeSequential writes the sequential latency of set-seq and get-seq
// beside the disk's fdatasync, and where zkgo's time went.
func writeSequential(w func(string, ...any), r *report) {
	p50 := map[string]map[string][]float64{} // spec → server → p50 ms of each repeat
	stages := map[string]map[string][]float64{}
	for _, ru := range r.Runs {
		if !strings.HasSuffix(ru.Spec, "-seq") || ru.Result == nil {
			continue
		}
		if p50[ru.Spec] == nil {
			p50[ru.Spec] = map[string][]float64{}
			stages[ru.Spec] = map[string][]float64{}
		}
		p50[ru.Spec][ru.Server] = append(p50[ru.Spec][ru.Server], ru.Result.Latency.P50)
		for st, v := range ru.Stages {
			stages[ru.Spec][st] = append(stages[ru.Spec][st], v)
		}
	}
	if len(p50) == 0 {
		return
	}
	fsync := float64(r.Fsync.OverwriteP50) / 1e3 // µs
	w("### Sequential latency\n\n")
	w("One session, one request at a time, 100-byte data (medians of the repeats' p50). The disk's fdatasync p50 is %.0f µs ", fsync)
	w("(overwrite of a preallocated file, as zkgo's WAL writes); a durable setData cannot be faster. ")
	w("zkgo's stages are means over each run from `mntr` (`zkgo_stage_*`): propose = request read until handed to raft; ")
	w("log = handed to raft until the reply is queued (WAL write and fsync, commit, apply); fsync = one WAL write+fsync; ")
	w("read = a read's request read until its reply is queued; reply = reply queued until written to the socket. ")
	w("The rest of the client's latency is the client and the loopback network.\n\n")
	w("| workload | ZooKeeper p50 | zkgo p50 | target | met | zkgo stages (mean µs) |\n|---|--:|--:|---|---|---|\n")
	for _, spec := range []string{"set-seq", "get-seq"} {
		by, ok := p50[spec]
		if !ok {
			continue
		}
		zk, zg := aggregate(by["zookeeper"]).med*1e3, aggregate(by["zkgo"]).med*1e3 // µs
		var target string
		var met bool
		if spec == "set-seq" {
			target = fmt.Sprintf("≤ fdatasync + 50 µs = %.0f µs", fsync+50)
			met = zg <= fsync+50
		} else {
			target = "≤ 40 µs"
			met = zg <= 40
		}
		var parts []string
		shown := []string{"propose", "log", "fsync", "apply", "reply"}
		if spec == "get-seq" {
			shown = []string{"read", "reply"} // (its setup's creates are counted too)
		}
		for _, st := range shown {
			if v := stages[spec][st]; len(v) > 0 {
				parts = append(parts, fmt.Sprintf("%s %.0f", st, aggregate(v).med))
			}
		}
		w("| %s | %.0f µs | %.0f µs | %s | %s | %s |\n", spec, zk, zg, target, yesNo(met), strings.Join(parts, ", "))
	}
	w("\n")
}

// writeEtcdTable writes the rows that have an etcd figure beside
// ZooKeeper's and zkgo's, with the throughput ratios and p99s. The lock
// rows of go-zookeeper's and Curator's recipes get the etcd figure of the
// lock with the same contenders (etcd's Mutex is measured once).
func writeEtcdTable(w func(string, ...any), rows []row) {
	byID := map[string]row{}
	for _, rw := range rows {
		byID[rw.id] = rw
	}
	etcdOf := func(rw row) (agg, agg, bool, bool) {
		if a, ok := rw.ops["etcd"]; ok {
			return a, rw.p99["etcd"], true, false
		}
		base := strings.TrimSuffix(strings.TrimSuffix(rw.id, "-gozk"), "-curator")
		if b, ok := byID[base]; ok && base != rw.id {
			if a, ok := b.ops["etcd"]; ok {
				return a, b.p99["etcd"], true, true
			}
		}
		return agg{}, agg{}, false, false
	}
	var lines []string
	shared := false
	for _, rw := range rows {
		eo, ep, ok, borrowed := etcdOf(rw)
		if !ok {
			continue
		}
		shared = shared || borrowed
		label := rw.label
		if borrowed {
			label += " (etcd: as above)"
		}
		ratio := func(a, b agg) string {
			if math.IsNaN(a.med) || math.IsNaN(b.med) || b.med == 0 {
				return "—"
			}
			return fmt.Sprintf("**%.2f×**", a.med/b.med)
		}
		get := func(m map[string]agg, s string) agg {
			if a, ok := m[s]; ok {
				return a
			}
			return agg{math.NaN(), math.NaN(), math.NaN()}
		}
		zk, zg := get(rw.ops, "zookeeper"), get(rw.ops, "zkgo")
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", label, rw.unit,
			fmtRate(zk), fmtRate(zg), fmtRate(eo), ratio(zg, zk), ratio(zg, eo),
			fmtMs(get(rw.p99, "zookeeper")), fmtMs(get(rw.p99, "zkgo")), fmtMs(ep)))
	}
	if len(lines) == 0 {
		return
	}
	w("Beside etcd, with its own recipes (go.etcd.io/etcd/client/v3/concurrency: `Mutex` for the lock, `Election` for the handover), ")
	w("each contender or participant with its own client connection and session (a lease, TTL %d s), the same contenders, warm-up and window:\n\n", etcdSessionTTL)
	w("| workload | unit | ZooKeeper /s | zkgo /s | etcd /s | zkgo/ZK | zkgo/etcd | ZooKeeper p99 ms | zkgo p99 ms | etcd p99 ms |\n")
	w("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, l := range lines {
		w("%s\n", l)
	}
	w("\n")
	w("etcd's latencies: lock = Mutex.Lock called until it returns (the wait for the lock, as for ZooKeeper's recipes); ")
	w("handover = the leader's Election.Resign called until the other participant's Campaign returns, ")
	w("after which the one that resigned campaigns again and the next handover waits until it is queued (as the latch rejoins). ")
	if settle := etcdSettleOf(rows); settle != "" {
		w("**Diagnostic run: etcd's handover paused %s after each rejoin before the next Resign (`-etcd-settle`); the ZooKeeper rows did not.** ", settle)
	}
	if shared {
		w("Rows marked \"as above\" repeat the etcd figure of the lock with zkgo's recipe: etcd has one Mutex, measured once. ")
	}
	var errs []string
	for _, rw := range rows {
		if rw.errors["etcd"] > 0 {
			errs = append(errs, fmt.Sprintf("%s: %d", rw.id, rw.errors["etcd"]))
		}
	}
	if len(errs) > 0 {
		w("Failed etcd operations: %s.", strings.Join(errs, "; "))
	}
	w("\n\n")
}

// etcdSettleOf returns the -etcd-settle pause of the rows' etcd runs ("" for none).
func etcdSettleOf(rows []row) string {
	for _, rw := range rows {
		if s, ok := rw.etcdParams["settle"].(string); ok {
			return s
		}
	}
	return ""
}
