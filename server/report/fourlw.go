package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/proto"
)

var fourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "conf": true, "cons": true, "crst": true,
	"srst": true, "envi": true, "mntr": true, "wchs": true, "wchc": true, "wchp": true,
	"dump": true, "isro": true, "dirs": true, "gtmk": true, "stmk": true, "hash": true,
	// ClickHouse Keeper's operator words.
	"ydld": true, "rqld": true, "csnp": true, "lgif": true,
}

// IsFourLetterWord reports whether s is a four-letter word this server
// answers.
func IsFourLetterWord(s string) bool { return fourLetterWords[s] }

// heavyWords walk every connection, session or watch (see Source.Heavy).
var heavyWords = map[string]bool{"stat": true, "cons": true, "dump": true, "wchc": true, "wchp": true}

// NotServing is ZooKeeper's answer to the four-letter words that need a
// running server while the member has no quorum (and is not serving
// read-only).
const NotServing = "This ZooKeeper instance is not currently serving requests\n"

// Word returns a four-letter word's output: the heavy ones through
// src.Heavy. stmk prints the mask; the caller sets it first
// (SetTraceMask) from the 8 bytes that follow the word.
func Word(src Source, cmd string) string {
	if heavyWords[cmd] {
		return src.Heavy(cmd, func() string { return FourLetterText(src, cmd) })
	}
	return FourLetterText(src, cmd)
}

// fourLetterText prints a four-letter word's output.
func fourLetterText(src Source, cmd string, b *strings.Builder) {
	switch cmd {
	case "srvr", "stat", "mntr", "conf", "cons", "crst", "srst", "dump", "wchs", "wchc", "wchp", "dirs", "hash":
		if !src.HasQuorum() && !src.ReadOnly() {
			b.WriteString(NotServing)
			if w := src.WaitingFor(); w != "" && (cmd == "srvr" || cmd == "stat" || cmd == "mntr") {
				// What the member waits for, on a line of its own after
				// ZooKeeper's text, which tools match.
				fmt.Fprintf(b, "zkgo: waiting for %s\n", w)
			}
			return
		}
	}
	switch cmd {
	case "ydld", "rqld", "csnp", "lgif":
		leadershipWord(src, cmd, b)
	case "ruok":
		b.WriteString("imok")
	case "isro":
		if src.ReadOnly() {
			b.WriteString("ro")
		} else {
			b.WriteString("rw")
		}
	case "srvr", "stat":
		v := src.ServerStats()
		fmt.Fprintf(b, "Zookeeper version: %s\n", v.Version)
		if cmd == "stat" {
			b.WriteString("Clients:\n")
			for _, c := range src.Conns() {
				b.WriteString(c.Text(false))
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", v.MinLat, JavaDouble(v.AvgLat), v.MaxLat)
		fmt.Fprintf(b, "Received: %d\n", v.Received)
		fmt.Fprintf(b, "Sent: %d\n", v.Sent)
		fmt.Fprintf(b, "Connections: %d\n", v.Connections)
		fmt.Fprintf(b, "Outstanding: %d\n", v.Outstanding)
		fmt.Fprintf(b, "Zxid: 0x%x\n", v.LastZxid)
		b.WriteString("Mode: " + v.Mode + "\n")
		fmt.Fprintf(b, "Node count: %d\n", v.NodeCount)
	case "conf":
		if dump := src.ConfigDump(); dump != nil {
			for _, l := range dump {
				b.WriteString(l + "\n")
			}
			return
		}
		v := src.Conf()
		fmt.Fprintf(b, "clientPort=%d\n", v.ClientPort)
		fmt.Fprintf(b, "dataDir=%s\n", v.DataDir)
		fmt.Fprintf(b, "dataLogDir=%s\n", v.DataLogDir)
		fmt.Fprintf(b, "tickTime=%d\n", v.TickTime)
		fmt.Fprintf(b, "maxClientCnxns=%d\n", v.MaxClientCnxns)
		fmt.Fprintf(b, "minSessionTimeout=%d\n", v.MinSessionTimeout)
		fmt.Fprintf(b, "maxSessionTimeout=%d\n", v.MaxSessionTimeout)
		fmt.Fprintf(b, "clientPortListenBacklog=-1\n")
		fmt.Fprintf(b, "serverId=%d\n", v.ServerID)
	case "cons":
		for _, c := range src.Conns() {
			b.WriteString(c.Text(true))
			b.WriteString("\n")
		}
		b.WriteString("\n")
	case "crst":
		src.ResetConnectionStats()
		b.WriteString("Connection stats reset.\n")
	case "srst":
		src.ResetServerStats()
		b.WriteString("Server stats reset.\n")
	case "envi":
		b.WriteString("Environment:\n")
		for _, e := range src.Environment() {
			fmt.Fprintf(b, "%s=%s\n", e.Key, e.Value)
		}
	case "mntr":
		for _, m := range src.Monitor() {
			v := m.Value
			if f, ok := v.(float64); ok {
				v = JavaDouble(f)
			}
			fmt.Fprintf(b, "%s\t%v\n", m.TextKey(), v)
		}
	case "wchs":
		st := src.Watches().Stats()
		fmt.Fprintf(b, "%d connections watching %d paths\nTotal watches:%d\n", st.Connections, st.Paths, st.Watches)
	case "wchc":
		bySess := src.Watches().BySession()
		ids := make([]int64, 0, len(bySess))
		for id := range bySess {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			fmt.Fprintf(b, "%s\n", proto.SessionIDHex(id))
			for _, p := range bySess[id] {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
	case "wchp":
		byPath := src.Watches().ByPath()
		paths := make([]string, 0, len(byPath))
		for p := range byPath {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(b, "%s\n", p)
			for _, id := range byPath[p] {
				fmt.Fprintf(b, "\t%s\n", proto.SessionIDHex(id))
			}
		}
	case "dump":
		d := src.SessionDump()
		b.WriteString("SessionTracker dump:\n")
		fmt.Fprintf(b, "Global Sessions(%d):\n", len(d.Sessions))
		for _, id := range d.Sessions {
			fmt.Fprintf(b, "%s\t%dms\n", proto.SessionIDHex(id), d.Timeouts[id])
		}
		b.WriteString("ephemeral nodes dump:\n")
		fmt.Fprintf(b, "Sessions with Ephemerals (%d):\n", len(d.WithEph))
		for _, id := range d.WithEph {
			fmt.Fprintf(b, "%s:\n", proto.SessionIDHex(id))
			for _, p := range d.Ephemerals[id] {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
		b.WriteString("Connections dump:\n")
		fmt.Fprintf(b, "Connections Sets (%d)\n", len(src.Conns()))
	case "dirs":
		data, log := src.DirSizes()
		fmt.Fprintf(b, "datadir_size: %d\nlogdir_size: %d\n", data, log)
	case "gtmk", "stmk":
		fmt.Fprintf(b, "%d", src.TraceMask())
	case "hash":
		// ZooKeeper's format: the logged digests, oldest first, one
		// "<zxid in hex>: <digest>" line each.
		for _, d := range src.DigestLog() {
			fmt.Fprintf(b, "%x: %d\n", d.Zxid, int64(d.Digest)) // a Java long
		}
	}
}

// leadershipWord answers ydld, rqld, csnp and lgif as ClickHouse Keeper
// words them.
func leadershipWord(src Source, cmd string, b *strings.Builder) {
	switch cmd {
	case "ydld":
		if _, err := src.YieldLeadership(); err != nil {
			b.WriteString("Failed to yield leadership request to leader.")
			return
		}
		b.WriteString("Sent yield leadership request to leader.")
	case "rqld":
		if _, err := src.RequestLeadership(); err != nil {
			b.WriteString("Failed to send leadership request to leader.")
			return
		}
		b.WriteString("Sent leadership request to leader.")
	case "csnp":
		idx, err := src.CreateSnapshot()
		if err != nil {
			b.WriteString("Failed to schedule snapshot creation task.")
			return
		}
		fmt.Fprintf(b, "Snapshot creation scheduled with last committed log index %d.", idx)
	case "lgif":
		li, err := src.LogInfo()
		if err != nil {
			b.WriteString("Failed to read the log: " + err.Error())
			return
		}
		for _, kv := range li {
			fmt.Fprintf(b, "%s\t%d\n", kv.Key, kv.Value)
		}
	}
}

// JavaDouble formats f as Java's Double.toString does for ordinary values
// ("0.0", "1.5", "0.3333333333333333").
func JavaDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
