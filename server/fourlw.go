package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/tree"
)

var fourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "conf": true, "cons": true, "crst": true,
	"srst": true, "envi": true, "mntr": true, "wchs": true, "wchc": true, "wchp": true,
	"dump": true, "isro": true, "dirs": true, "gtmk": true, "stmk": true, "hash": true,
	// ClickHouse Keeper's operator words (leadership.go).
	"ydld": true, "rqld": true, "csnp": true, "lgif": true,
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

// clear drops the outputs kept, after crst or srst changed what they
// print.
func (h *heavyCache) clear() {
	h.mu.Lock()
	clear(h.out)
	h.mu.Unlock()
}

type heavyOutput struct {
	at   time.Time
	text string
}

// serveFourLetterWord answers a four-letter word and closes the
// connection. stmk is followed by the new trace mask, 8 bytes big-endian,
// which it reads from r (as ZooKeeper, after the whitelist check); a
// connection that does not send them is closed without an answer.
func (c *Conn) serveFourLetterWord(cmd string, r io.Reader) {
	s := c.s
	var text string
	switch {
	case !s.fourLetterAllowed(cmd):
		text = fmt.Sprintf("%s is not executed because it is not in the whitelist.\n", cmd)
	case cmd == "stmk":
		var mask [8]byte
		if _, err := io.ReadFull(r, mask[:]); err != nil {
			return
		}
		s.trace.v.Store(int64(binary.BigEndian.Uint64(mask[:])))
		text = s.FourLetterWord(cmd)
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
	return s.heavyOutput(cmd, func() string {
		var b strings.Builder
		s.fourLetterText(cmd, &b)
		return b.String()
	})
}

// heavyOutput returns the output computed by compute under key (a
// four-letter word, or an AdminServer command), at most heavyTTL old:
// compute runs at most once per key and heavyTTL, one at a time.
func (s *Server) heavyOutput(key string, compute func() string) string {
	h := &s.heavy
	h.mu.Lock()
	defer h.mu.Unlock()
	if o, ok := h.out[key]; ok && time.Since(o.at) < heavyTTL {
		return o.text
	}
	text := compute()
	h.runs.Add(1)
	if h.out == nil {
		h.out = make(map[string]heavyOutput)
	}
	h.out[key] = heavyOutput{at: time.Now(), text: text}
	return text
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

// fourLetterText prints a four-letter word's output from the reports of
// report.go, which the AdminServer's commands print as JSON.
func (s *Server) fourLetterText(cmd string, b *strings.Builder) {
	switch cmd {
	case "srvr", "stat", "mntr", "conf", "cons", "crst", "srst", "dump", "wchs", "wchc", "wchp", "dirs", "hash":
		if !s.hasQuorum() && !s.readOnly.Load() {
			b.WriteString(notServing)
			if w := s.raft.waitingFor(); w != "" && (cmd == "srvr" || cmd == "stat" || cmd == "mntr") {
				// What the member waits for (quorum.go), on a line of
				// its own after ZooKeeper's text, which tools match.
				fmt.Fprintf(b, "zkgo: waiting for %s\n", w)
			}
			return
		}
	}
	switch cmd {
	case "ydld", "rqld", "csnp", "lgif":
		s.leadershipWord(cmd, b)
	case "ruok":
		b.WriteString("imok")
	case "isro":
		if s.readOnly.Load() {
			b.WriteString("ro")
		} else {
			b.WriteString("rw")
		}
	case "srvr", "stat":
		v := s.serverStatsView()
		fmt.Fprintf(b, "Zookeeper version: %s\n", v.version)
		if cmd == "stat" {
			b.WriteString("Clients:\n")
			for _, c := range s.connList() {
				b.WriteString(c.info().text(false))
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", v.minLat, javaDouble(v.avgLat), v.maxLat)
		fmt.Fprintf(b, "Received: %d\n", v.received)
		fmt.Fprintf(b, "Sent: %d\n", v.sent)
		fmt.Fprintf(b, "Connections: %d\n", v.connections)
		fmt.Fprintf(b, "Outstanding: %d\n", v.outstanding)
		fmt.Fprintf(b, "Zxid: 0x%x\n", v.lastZxid)
		b.WriteString("Mode: " + v.mode + "\n")
		fmt.Fprintf(b, "Node count: %d\n", v.nodeCount)
	case "conf":
		o := s.opts
		if o.ConfigDump != nil {
			for _, l := range o.ConfigDump() {
				b.WriteString(l + "\n")
			}
			return
		}
		v := s.confView()
		fmt.Fprintf(b, "clientPort=%d\n", v.clientPort)
		fmt.Fprintf(b, "dataDir=%s\n", v.dataDir)
		fmt.Fprintf(b, "dataLogDir=%s\n", v.dataLogDir)
		fmt.Fprintf(b, "tickTime=%d\n", v.tickTime)
		fmt.Fprintf(b, "maxClientCnxns=%d\n", v.maxClientCnxns)
		fmt.Fprintf(b, "minSessionTimeout=%d\n", v.minSessionTimeout)
		fmt.Fprintf(b, "maxSessionTimeout=%d\n", v.maxSessionTimeout)
		fmt.Fprintf(b, "clientPortListenBacklog=-1\n")
		fmt.Fprintf(b, "serverId=%d\n", v.serverID)
	case "cons":
		for _, c := range s.connList() {
			b.WriteString(c.info().text(true))
			b.WriteString("\n")
		}
		b.WriteString("\n")
	case "crst":
		s.resetConnectionStats()
		b.WriteString("Connection stats reset.\n")
	case "srst":
		s.resetServerStats()
		b.WriteString("Server stats reset.\n")
	case "envi":
		b.WriteString("Environment:\n")
		for _, e := range s.environment() {
			fmt.Fprintf(b, "%s=%s\n", e.key, e.value)
		}
	case "mntr":
		for _, m := range s.monitorValues() {
			v := m.value
			if f, ok := v.(float64); ok {
				v = javaDouble(f)
			}
			fmt.Fprintf(b, "%s\t%v\n", m.textKey(), v)
		}
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
		d := s.sessionDump()
		b.WriteString("SessionTracker dump:\n")
		fmt.Fprintf(b, "Global Sessions(%d):\n", len(d.sessions))
		for _, id := range d.sessions {
			fmt.Fprintf(b, "%s\t%dms\n", hexID(id), d.timeouts[id])
		}
		b.WriteString("ephemeral nodes dump:\n")
		fmt.Fprintf(b, "Sessions with Ephemerals (%d):\n", len(d.withEph))
		for _, id := range d.withEph {
			fmt.Fprintf(b, "%s:\n", hexID(id))
			for _, p := range d.ephemerals[id] {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
		b.WriteString("Connections dump:\n")
		fmt.Fprintf(b, "Connections Sets (%d)\n", len(s.connList()))
	case "dirs":
		data, log := s.dirSizes()
		fmt.Fprintf(b, "datadir_size: %d\nlogdir_size: %d\n", data, log)
	case "gtmk":
		fmt.Fprintf(b, "%d", s.trace.v.Load())
	case "stmk":
		// serveFourLetterWord read the mask and set it.
		fmt.Fprintf(b, "%d", s.trace.v.Load())
	case "hash":
		// ZooKeeper's format: the logged digests, oldest first, one
		// "<zxid in hex>: <digest>" line each.
		for _, d := range s.digestLog() {
			fmt.Fprintf(b, "%x: %d\n", d.Zxid, int64(d.Digest)) // a Java long
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

func (s *Server) lastZxid() int64 {
	return s.sm.LastZxid()
}

// text formats a connection as ZooKeeper's cons (full) and stat do.
func (ci connInfo) text(full bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, " /%s[%d](queued=%d,recved=%d,sent=%d", ci.remote, ci.interestOps, ci.outstanding, ci.received, ci.sent)
	if full && ci.sessionID != 0 {
		fmt.Fprintf(&b, ",sid=%s,lop=%s,est=%d,to=%d", hexID(ci.sessionID), ci.lastOp, ci.established, ci.timeout)
		if ci.lastCxid >= 0 {
			fmt.Fprintf(&b, ",lcxid=0x%x", ci.lastCxid)
		}
		fmt.Fprintf(&b, ",lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			uint64(ci.lastZxid), ci.lastResp, ci.lastLat, ci.minLat, ci.avgLat, ci.maxLat)
	}
	b.WriteString(")")
	return b.String()
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

// digestLog returns the tree's logged digests, oldest first (hash).
func (s *Server) digestLog() []tree.ZxidDigest {
	var log []tree.ZxidDigest
	s.sm.View(func(t *tree.Tree) { log = t.DigestLog() })
	return log
}
