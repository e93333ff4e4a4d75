package server

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/replica"
	"github.com/zkgo/zkgo/server/report"
	"github.com/zkgo/zkgo/server/stats"
	"github.com/zkgo/zkgo/tree"
)

// Reports: the numbers the four-letter words and the AdminServer's
// commands (package report, through reports.go) print. Each report is read
// once into a value here and printed by both, so that a number has one
// source: srvr and server_stats, cons and connections, mntr and monitor,
// dirs, gtmk, … agree by construction.

// defaultTraceMask is ZooKeeper's ZooTrace default text trace mask (what
// gtmk prints before any stmk).
const defaultTraceMask = 306

// traceMask is the mask set by stmk (four-letter word or AdminServer
// set_trace_mask) and read by gtmk. ZooKeeper's mask selects the TRACE
// log lines of ZooTrace; zkgo has no trace logging, so the mask is only
// stored and reported.
type traceMask struct{ v atomic.Int64 }

// serverStatsView reads srvr's numbers: the same sources as the gauges
// (gauges.go) without the ones srvr does not print (file descriptors,
// raft), so that polling srvr stays cheap.
func (s *Server) serverStatsView() report.ServerStats {
	v := report.ServerStats{Version: Version(), ReadOnly: s.port.ReadOnly(), Mode: s.Mode(),
		Received: s.stats.PacketsReceived.Load(), Sent: s.stats.PacketsSent.Load(),
		Uptime: time.Since(s.started), Response: s.stats.Response.Get()}
	v.MinLat, v.AvgLat, v.MaxLat, _ = s.stats.Lat.Get()
	conns := s.port.Conns()
	v.Connections = len(conns)
	for _, c := range conns {
		v.Outstanding += c.Outstanding()
	}
	s.sm.View(func(t *tree.Tree) { v.LastZxid, v.NodeCount = t.LastZxid(), t.NodeCount() })
	return v
}

// resetConnectionStats is crst: every connection's statistics start over.
func (s *Server) resetConnectionStats() {
	for _, c := range s.port.Conns() {
		c.ResetStats()
	}
	s.heavy.clear()
}

// resetServerStats is srst: the server's packet counts, latencies and
// response sizes start over.
func (s *Server) resetServerStats() {
	s.stats.Reset()
	s.heavy.clear()
}

// confView reads conf's settings.
func (s *Server) confView() report.Conf {
	o := &s.opts
	port := func(a net.Addr) int {
		if a == nil {
			return 0
		}
		n, _ := strconv.Atoi(portOf(a))
		return n
	}
	var secure int
	if a := s.port.SecureAddr(); a != nil {
		secure = port(a)
	}
	var plain int
	if a := s.port.Addr(); a != nil {
		plain = port(a)
	}
	logDir := o.DataLogDir
	if logDir == "" {
		logDir = o.DataDir
	}
	return report.Conf{ClientPort: plain, SecureClientPort: secure, DataDir: o.DataDir, DataLogDir: logDir,
		TickTime: o.TickTime.Milliseconds(), MaxClientCnxns: o.MaxClientCnxns,
		MinSessionTimeout: o.MinSessionTimeout.Milliseconds(), MaxSessionTimeout: o.MaxSessionTimeout.Milliseconds(),
		ServerID: o.ServerID}
}

// dirSizes returns the bytes in the data directory and in the log
// directory (every file below them, as ZooKeeper's dirs counts its snapshot
// and transaction log directories); 0 and 0 in memory. zkgo keeps its raft
// log and snapshots in dataLogDir/zkgo, so without a separate dataLogDir
// both numbers are the same directory's.
func (s *Server) dirSizes() (dataDir, logDir int64) {
	o := &s.opts
	if o.DataDir == "" && o.DataLogDir == "" {
		return 0, 0
	}
	data := dirSize(o.DataDir)
	if o.DataLogDir == "" || o.DataLogDir == o.DataDir {
		return data, data
	}
	return data, dirSize(o.DataLogDir)
}

// dirSize sums the sizes of the regular files below dir; files that
// vanish during the walk (a purge) are skipped.
func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return nil // unreadable: count what can be read
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// environment lists what envi and environment print: ZooKeeper's keys
// where they have a meaning in a Go process (zookeeper.version,
// host.name, os.*, user.*), Go's in place of java.*.
func (s *Server) environment() []report.EnvEntry {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	var name, home string
	if u, err := user.Current(); err == nil {
		name, home = u.Username, u.HomeDir
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mb := func(b uint64) string { return strconv.FormatUint(b>>20, 10) + "MB" }
	return []report.EnvEntry{
		{Key: "zookeeper.version", Value: Version()},
		{Key: "host.name", Value: host},
		{Key: "go.version", Value: runtime.Version()},
		{Key: "go.compiler", Value: runtime.Compiler},
		{Key: "os.name", Value: runtime.GOOS},
		{Key: "os.arch", Value: runtime.GOARCH},
		{Key: "os.version", Value: report.OSVersion()},
		{Key: "os.procs", Value: strconv.Itoa(runtime.NumCPU())},
		{Key: "user.name", Value: name},
		{Key: "user.home", Value: home},
		{Key: "user.dir", Value: wd},
		{Key: "os.memory.free", Value: mb(ms.HeapIdle - ms.HeapReleased)},
		{Key: "os.memory.total", Value: mb(ms.Sys)},
	}
}

// sessionDump reads dump's content.
func (s *Server) sessionDump() report.SessionDump {
	// The tree's read lock is taken per session, not for the whole walk,
	// so that applying goes on meanwhile.
	d := report.SessionDump{Timeouts: make(map[int64]int32), Expiry: make(map[int64][]int64), Ephemerals: make(map[int64][]string)}
	var sessions []*tree.Session
	s.sm.View(func(t *tree.Tree) { sessions = t.Sessions() })
	for _, ss := range sessions {
		d.Sessions = append(d.Sessions, ss.ID)
		d.Timeouts[ss.ID] = ss.Timeout
		var ps []string
		s.sm.View(func(t *tree.Tree) { ps = t.Ephemerals(ss.ID) })
		if len(ps) > 0 {
			d.WithEph = append(d.WithEph, ss.ID)
			d.Ephemerals[ss.ID] = ps
		}
	}
	tick := s.opts.TickTime.Milliseconds()
	for id, deadline := range s.sessions.Deadlines() {
		ms := time.Unix(0, deadline).UnixMilli()
		if tick > 0 {
			ms = (ms/tick + 1) * tick
		}
		d.Expiry[ms] = append(d.Expiry[ms], id)
	}
	for _, ids := range d.Expiry {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	}
	return d
}

// monitorValues are mntr's and monitor's values. The keys /metrics
// exports too come from the same metrics.Gauges, so all three agree.
func (s *Server) monitorValues() []report.MonitorValue {
	g := s.gauges()
	var out []report.MonitorValue
	zk := func(k string, v any) { out = append(out, report.MonitorValue{Key: k, Value: v}) }
	own := func(k string, v any) { out = append(out, report.MonitorValue{Key: k, Value: v, Own: true}) }
	zk("version", Version())
	zk("server_state", s.Mode())
	zk("avg_latency", g.AvgLatency)
	zk("max_latency", g.MaxLatency)
	zk("min_latency", g.MinLatency)
	zk("packets_received", g.PacketsReceived)
	zk("packets_sent", g.PacketsSent)
	zk("num_alive_connections", g.AliveConnections)
	zk("outstanding_requests", g.Outstanding)
	zk("znode_count", g.Znodes)
	zk("watch_count", g.Watches)
	zk("ephemerals_count", g.Ephemerals)
	zk("approximate_data_size", g.DataSize)
	zk("open_file_descriptor_count", g.OpenFDs)
	zk("max_file_descriptor_count", g.MaxFDs)
	zk("global_sessions", g.GlobalSessions)
	zk("local_sessions", g.LocalSessions)
	zk("uptime", g.Uptime.Milliseconds())
	zk("last_client_response_size", g.Response.Last)
	zk("max_client_response_size", g.Response.Max)
	zk("min_client_response_size", g.Response.Min)
	own("zkgo_in_memory_only", !s.Durable())
	var queued int
	most := 0
	for _, c := range s.port.Conns() {
		queued += c.QueuedBytes()
		if n := s.watches.WatchesOf(c); n > most {
			most = n
		}
	}
	own("zkgo_queued_bytes", queued)
	own("zkgo_parked_connections", g.ParkedConnections)
	own("zkgo_connection_parks", s.stats.ConnectionParks.Load())
	own("zkgo_last_snapshot_bytes", s.stats.SnapshotBytes.Load())
	own("zkgo_memory_returns", s.stats.MemoryReturns.Load())
	own("zkgo_last_snapshot_ms", time.Duration(s.stats.SnapshotNanos.Load()).Milliseconds())
	for st, name := range stats.StageNames {
		own("zkgo_stage_"+name+"_ns", s.stats.Stages.NS[st].Load())
		own("zkgo_stage_"+name+"_count", s.stats.Stages.Count[st].Load())
	}
	own("zkgo_throttled_connections", s.stats.Throttled.Load())
	own("zkgo_throttle_events", s.stats.ThrottleEvents.Load())
	own("zkgo_max_watches_per_connection", most)
	own("zkgo_watch_limit_refusals", s.stats.WatchRefusals.Load())
	own("zkgo_throttled_connections_refused", s.stats.ThrottledConns.Load())
	if a := s.port.Audit(); a != nil {
		own("zkgo_audit_events", a.Written())
		own("zkgo_audit_dropped", a.Dropped())
	}
	if _, syncs, entries, prefilled, ok := s.raft.Status(); ok && g.RaftOK {
		st := g.Raft
		own("zkgo_raft_id", st.ID)
		own("zkgo_raft_leader", st.Leader)
		own("zkgo_raft_term", st.Term)
		own("zkgo_raft_commit", st.Commit)
		own("zkgo_raft_applied", st.Applied)
		own("zkgo_raft_snapshot_index", st.Snapshot)
		own("zkgo_wal_syncs", syncs)
		own("zkgo_wal_entries", entries)
		own("zkgo_wal_prefilled_bytes", prefilled)
		own("zkgo_raft_commit_holds", st.CommitHolds)
		own("zkgo_raft_commit_holds_joined", st.CommitHoldsJoined)
		own("zkgo_raft_commit_late_holds", st.CommitLateHolds)
		own("zkgo_raft_commit_precise_holds", st.CommitPreciseHolds)
		own("zkgo_raft_fast_elections", st.FastElections)
		own("zkgo_raft_voters", len(st.Voters))
		own("zkgo_raft_learners", len(st.Learners))
		if g.Clustered {
			zk("quorum_size", g.QuorumSize)
			own("zkgo_ensemble_formation", raftnode.FormationString(s.raft.Formation()))
		}
		if l := g.Leader; l != nil {
			// ZooKeeper's leader-only keys.
			zk("learners", l.Learners)
			zk("synced_followers", l.SyncedFollowers)
			zk("synced_non_voting_followers", l.SyncedNonVotingFollowers)
			zk("synced_observers", l.SyncedObservers)
			zk("pending_syncs", 0) // no such queue in zkgo; for tools that expect the key
			zk("leader_uptime", l.Uptime.Milliseconds())
		}
	}
	return out
}

// leaderView reads lead/leader.
func (s *Server) leaderView() report.LeaderView {
	v := report.LeaderView{IsLeader: s.isLeader(), LeaderID: -1}
	lead := s.raft.Leader()
	if lead == 0 {
		v.IsLeader = false
		return v
	}
	v.LeaderID = replica.MemberID(uint64(lead))
	if m := s.currentMembership(); m != nil {
		if sv, ok := m.Server(v.LeaderID); ok {
			v.LeaderIP = sv.Host
		}
	}
	return v
}

// votingMembers are the ensemble's voters (voting_view), by id; nil
// standalone.
func (s *Server) votingMembers() []config.Server {
	m := s.currentMembership()
	if m == nil || !s.clustered() {
		return nil
	}
	var out []config.Server
	for _, sv := range m.Servers {
		if sv.Role == config.Participant {
			out = append(out, sv)
		}
	}
	return out
}

// observers returns the observers in sync with this member if it leads
// (nil otherwise).
func (s *Server) observers() []report.ObserverInfo {
	st, _, _, _, ok := s.raft.Status()
	if !ok || !s.clustered() || st.Role != raftnode.RoleLeader {
		return nil
	}
	var out []report.ObserverInfo
	for id, match := range st.Match {
		if id == st.ID || !s.raft.IsObserver(id) || match+replica.PromoteLag < st.Commit {
			continue
		}
		o := report.ObserverInfo{SID: replica.MemberID(id), LastZxid: int64(match)}
		if p, ok := s.raft.Peer(o.SID); ok {
			o.Addr = p.Addr
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SID < out[j].SID })
	return out
}

// lastSnapshot is last_snapshot: the zxid of the newest durable snapshot
// and when it was written (unix seconds), or -1 and -1 without one.
func (s *Server) lastSnapshot() (zxid int64, unixSec int64) {
	st := s.raft.Storage()
	if st == nil {
		return -1, -1
	}
	idx, at := st.LastSnapshot()
	if idx == 0 {
		return -1, -1
	}
	if at.IsZero() {
		return int64(idx), -1
	}
	return int64(idx), at.Unix()
}

// running reports whether the server serves requests: what ZooKeeper's
// commands that need a running server check (a member with a quorum, or
// serving read-only).
func (s *Server) running() bool {
	return !s.port.Closing() && (s.hasQuorum() || s.port.ReadOnly())
}
