package server

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
)

// Version is the version string the four-letter words report. Tools such
// as zkServer.sh parse only the "Mode:" line, so the ZooKeeper-like prefix
// is informational.
const Version = "3.8.0-zkgo-0.1.0, built on 11/21/2026 00:00 GMT"

var fourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "conf": true, "cons": true, "crst": true,
	"srst": true, "envi": true, "mntr": true, "wchs": true, "wchc": true, "wchp": true,
	"dump": true, "isro": true, "dirs": true, "gtmk": true, "stmk": true, "hash": true,
}

func isFourLetterWord(s string) bool { return fourLetterWords[s] }

func (s *Server) fourLetterAllowed(cmd string) bool {
	for _, w := range s.opts.FourLetterWords {
		if w == "*" || w == cmd {
			return true
		}
	}
	return false
}

// heavyWords walk every connection, session or watch. Polled, they could
// keep the tree or the watch manager locked and starve writes
// (CVE-2017-5637): their output is computed one at a time and reused for
// heavyTTL, so polling costs at most one computation per word and second.
var heavyWords = map[string]bool{"stat": true, "cons": true, "dump": true, "wchc": true, "wchp": true}

const heavyTTL = time.Second

// heavyCache holds the last output of each heavy word.
type heavyCache struct {
	mu   sync.Mutex // guards out; held while one is computed (one at a time)
	out  map[string]heavyOutput
	runs atomic.Int64 // computations, for tests
}

type heavyOutput struct {
	at   time.Time
	text string
}

// serveFourLetterWord answers a four-letter word and closes the connection.
func (c *Conn) serveFourLetterWord(cmd string) {
	s := c.s
	var text string
	switch {
	case !s.fourLetterAllowed(cmd):
		text = fmt.Sprintf("%s is not executed because it is not in the whitelist.\n", cmd)
	case heavyWords[cmd]:
		text = s.heavyText(cmd)
	default:
		var b strings.Builder
		s.fourLetterText(cmd, &b)
		text = b.String()
	}
	c.raw.SetWriteDeadline(time.Now().Add(10 * time.Second))
	c.nc.Write([]byte(text))
}

// heavyText returns the output of a heavy word, at most heavyTTL old.
func (s *Server) heavyText(cmd string) string {
	h := &s.heavy
	h.mu.Lock()
	defer h.mu.Unlock()
	if o, ok := h.out[cmd]; ok && time.Since(o.at) < heavyTTL {
		return o.text
	}
	var b strings.Builder
	s.fourLetterText(cmd, &b)
	h.runs.Add(1)
	if h.out == nil {
		h.out = make(map[string]heavyOutput)
	}
	h.out[cmd] = heavyOutput{at: time.Now(), text: b.String()}
	return b.String()
}

// FourLetterWord returns the output of a four-letter word, ignoring the
// whitelist; for tools and tests.
func (s *Server) FourLetterWord(cmd string) string {
	var b strings.Builder
	s.fourLetterText(cmd, &b)
	return b.String()
}

// notServing is ZooKeeper's answer to the four-letter words that need a
// running server while the member has no quorum (and is not serving
// read-only).
const notServing = "This ZooKeeper instance is not currently serving requests\n"

func (s *Server) fourLetterText(cmd string, b *strings.Builder) {
	switch cmd {
	case "srvr", "stat", "mntr", "conf", "cons", "crst", "srst", "dump", "wchs", "wchc", "wchp", "dirs", "hash":
		if !s.hasQuorum() && !s.readOnly.Load() {
			b.WriteString(notServing)
			return
		}
	}
	switch cmd {
	case "ruok":
		b.WriteString("imok")
	case "isro":
		if s.readOnly.Load() {
			b.WriteString("ro")
		} else {
			b.WriteString("rw")
		}
	case "srvr", "stat":
		fmt.Fprintf(b, "Zookeeper version: %s\n", Version)
		if cmd == "stat" {
			b.WriteString("Clients:\n")
			for _, c := range s.connList() {
				b.WriteString(c.describe(false))
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		min, avg, max, _ := s.stats.lat.get()
		fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", min, javaDouble(avg), max)
		fmt.Fprintf(b, "Received: %d\n", s.stats.packetsReceived.Load())
		fmt.Fprintf(b, "Sent: %d\n", s.stats.packetsSent.Load())
		fmt.Fprintf(b, "Connections: %d\n", len(s.connList()))
		fmt.Fprintf(b, "Outstanding: %d\n", s.outstanding())
		fmt.Fprintf(b, "Zxid: 0x%x\n", s.lastZxid())
		b.WriteString("Mode: " + s.Mode() + "\n")
		fmt.Fprintf(b, "Node count: %d\n", s.nodeCount())
	case "conf":
		o := s.opts
		if o.ConfigDump != nil {
			for _, l := range o.ConfigDump() {
				b.WriteString(l + "\n")
			}
			return
		}
		fmt.Fprintf(b, "clientPort=%s\n", portOf(s.Addr()))
		fmt.Fprintf(b, "dataDir=%s\n", o.DataDir)
		fmt.Fprintf(b, "dataLogDir=%s\n", o.DataLogDir)
		fmt.Fprintf(b, "tickTime=%d\n", o.TickTime.Milliseconds())
		fmt.Fprintf(b, "maxClientCnxns=%d\n", o.MaxClientCnxns)
		fmt.Fprintf(b, "minSessionTimeout=%d\n", o.MinSessionTimeout.Milliseconds())
		fmt.Fprintf(b, "maxSessionTimeout=%d\n", o.MaxSessionTimeout.Milliseconds())
		fmt.Fprintf(b, "clientPortListenBacklog=-1\n")
		fmt.Fprintf(b, "serverId=%d\n", o.ServerID)
	case "cons":
		for _, c := range s.connList() {
			b.WriteString(c.describe(true))
			b.WriteString("\n")
		}
		b.WriteString("\n")
	case "crst":
		b.WriteString("Connection stats reset.\n")
	case "srst":
		s.stats.reset()
		b.WriteString("Server stats reset.\n")
	case "envi":
		host, _ := os.Hostname()
		wd, _ := os.Getwd()
		b.WriteString("Environment:\n")
		fmt.Fprintf(b, "zookeeper.version=%s\n", Version)
		fmt.Fprintf(b, "host.name=%s\n", host)
		fmt.Fprintf(b, "go.version=%s\n", runtime.Version())
		fmt.Fprintf(b, "os.name=%s\n", runtime.GOOS)
		fmt.Fprintf(b, "os.arch=%s\n", runtime.GOARCH)
		fmt.Fprintf(b, "user.dir=%s\n", wd)
		fmt.Fprintf(b, "os.procs=%d\n", runtime.NumCPU())
	case "mntr":
		s.mntr(b)
	case "wchs":
		st := s.watches.Stats()
		fmt.Fprintf(b, "%d connections watching %d paths\nTotal watches:%d\n", st.Connections, st.Paths, st.Watches)
	case "wchc":
		bySess := s.watches.BySession()
		ids := make([]int64, 0, len(bySess))
		for id := range bySess {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			fmt.Fprintf(b, "%s\n", hexID(id))
			for _, p := range bySess[id] {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
	case "wchp":
		byPath := s.watches.ByPath()
		paths := make([]string, 0, len(byPath))
		for p := range byPath {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(b, "%s\n", p)
			for _, id := range byPath[p] {
				fmt.Fprintf(b, "\t%s\n", hexID(id))
			}
		}
	case "dump":
		// The tree's read lock is taken per session, not for the whole
		// walk, so that applying goes on meanwhile.
		b.WriteString("SessionTracker dump:\n")
		s.sm.mu.RLock()
		sessions := s.sm.tree.Sessions()
		s.sm.mu.RUnlock()
		fmt.Fprintf(b, "Global Sessions(%d):\n", len(sessions))
		for _, ss := range sessions {
			fmt.Fprintf(b, "%s\t%dms\n", hexID(ss.ID), ss.Timeout)
		}
		b.WriteString("ephemeral nodes dump:\n")
		eph := make(map[int64][]string)
		var withEph []int64
		for _, ss := range sessions {
			s.sm.mu.RLock()
			ps := s.sm.tree.Ephemerals(ss.ID)
			s.sm.mu.RUnlock()
			if len(ps) > 0 {
				withEph = append(withEph, ss.ID)
				eph[ss.ID] = ps
			}
		}
		fmt.Fprintf(b, "Sessions with Ephemerals (%d):\n", len(withEph))
		for _, id := range withEph {
			fmt.Fprintf(b, "%s:\n", hexID(id))
			for _, p := range eph[id] {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
		b.WriteString("Connections dump:\n")
		fmt.Fprintf(b, "Connections Sets (%d)\n", len(s.connList()))
	case "dirs":
		b.WriteString("datadir_size: 0\nlogdir_size: 0\n")
	case "gtmk":
		b.WriteString("0\n")
	case "stmk":
		b.WriteString("0\n")
	case "hash":
		b.WriteString("No digest in this server\n")
	}
}

// mntr prints ZooKeeper's monitoring keys, and zkgo's. The keys /metrics
// exports too come from the same gaugeSnapshot, so the two agree.
func (s *Server) mntr(b *strings.Builder) {
	g := s.gauges()
	kv := func(k string, v any) { fmt.Fprintf(b, "%s\t%v\n", k, v) }
	kv("zk_version", Version)
	kv("zk_server_state", s.Mode())
	kv("zk_avg_latency", javaDouble(g.avgLatency))
	kv("zk_max_latency", g.maxLatency)
	kv("zk_min_latency", g.minLatency)
	kv("zk_packets_received", g.packetsReceived)
	kv("zk_packets_sent", g.packetsSent)
	kv("zk_num_alive_connections", g.aliveConnections)
	kv("zk_outstanding_requests", g.outstanding)
	kv("zk_znode_count", g.znodes)
	kv("zk_watch_count", g.watches)
	kv("zk_ephemerals_count", g.ephemerals)
	kv("zk_approximate_data_size", g.dataSize)
	kv("zk_open_file_descriptor_count", g.openFDs)
	kv("zk_max_file_descriptor_count", g.maxFDs)
	kv("zk_global_sessions", g.globalSessions)
	kv("zk_local_sessions", g.localSessions)
	kv("zk_uptime", g.uptime.Milliseconds())
	kv("zk_last_client_response_size", g.response.last)
	kv("zk_max_client_response_size", g.response.max)
	kv("zk_min_client_response_size", g.response.min)
	kv("zkgo_in_memory_only", !s.Durable())
	var queued int
	for _, c := range s.connList() {
		queued += c.queuedBytes()
	}
	kv("zkgo_queued_bytes", queued)
	kv("zkgo_throttled_connections", s.stats.throttled.Load())
	kv("zkgo_throttle_events", s.stats.throttleEvents.Load())
	most := 0
	for _, c := range s.connList() {
		if n := s.watches.WatchesOf(c); n > most {
			most = n
		}
	}
	kv("zkgo_max_watches_per_connection", most)
	kv("zkgo_watch_limit_refusals", s.stats.watchRefusals.Load())
	kv("zkgo_throttled_connections_refused", s.stats.throttledConns.Load())
	if _, syncs, entries, prefilled, ok := s.raft.status(); ok && g.raftOK {
		st := g.raft
		kv("zkgo_raft_id", st.ID)
		kv("zkgo_raft_leader", st.Leader)
		kv("zkgo_raft_term", st.Term)
		kv("zkgo_raft_commit", st.Commit)
		kv("zkgo_raft_applied", st.Applied)
		kv("zkgo_raft_snapshot_index", st.Snapshot)
		kv("zkgo_wal_syncs", syncs)
		kv("zkgo_wal_entries", entries)
		kv("zkgo_wal_prefilled_bytes", prefilled)
		kv("zkgo_raft_voters", len(st.Voters))
		kv("zkgo_raft_learners", len(st.Learners))
		if g.clustered {
			kv("zk_quorum_size", g.quorumSize)
			kv("zkgo_ensemble_formation", raftnode.FormationString(s.raft.formation()))
		}
		if l := g.leader; l != nil {
			// ZooKeeper's leader-only keys.
			kv("zk_learners", l.learners)
			kv("zk_synced_followers", l.syncedFollowers)
			kv("zk_synced_non_voting_followers", l.syncedNonVotingFollowers)
			kv("zk_synced_observers", l.syncedObservers)
			kv("zk_pending_syncs", 0) // no such queue in zkgo; for tools that expect the key
			kv("zk_leader_uptime", l.uptime.Milliseconds())
		}
	}
}

func (s *Server) connList() []*Conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		if c.handshaken.Load() {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out
}

func (s *Server) outstanding() int {
	n := 0
	for _, c := range s.connList() {
		n += len(c.slots)
	}
	return n
}

func (s *Server) lastZxid() int64 {
	s.sm.mu.RLock()
	defer s.sm.mu.RUnlock()
	return s.sm.tree.LastZxid()
}

func (s *Server) nodeCount() int {
	s.sm.mu.RLock()
	defer s.sm.mu.RUnlock()
	return s.sm.tree.NodeCount()
}

// describe formats a connection as ZooKeeper's cons/stat do.
func (c *Conn) describe(full bool) string {
	addr := c.raw.RemoteAddr().String()
	if !full {
		return fmt.Sprintf(" /%s[1](queued=%d,recved=%d,sent=%d)", addr, len(c.slots), c.packetsIn.Load(), c.packetsOut.Load())
	}
	lastOp := "NA"
	if v := c.lastOp.Load(); v != 0 {
		lastOp = opName(proto.OpCode(int32(uint32(v))))
	}
	minLat, avg, maxLat, llat := c.lat.get()
	avgLat := int64(avg)
	return fmt.Sprintf(" /%s[1](queued=%d,recved=%d,sent=%d,sid=%s,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d)",
		addr, len(c.slots), c.packetsIn.Load(), c.packetsOut.Load(), hexID(c.sessionID), lastOp,
		c.created.UnixMilli(), c.timeout.Milliseconds(), uint32(c.lastXid.Load()), c.lastZxid.Load(),
		c.lastResp.Load(), llat, minLat, avgLat, maxLat)
}

func portOf(a interface{ String() string }) string {
	if a == nil {
		return ""
	}
	s := a.String()
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}
