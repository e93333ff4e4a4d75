package gozk

import (
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// fourLetter sends a four-letter word over TCP and returns the reply.
func fourLetter(t *testing.T, addr, cmd string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, eventWait)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(eventWait))
	if _, err := nc.Write([]byte(cmd)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return string(b)
}

// keyValues parses "key: value" (srvr) or "key\tvalue" (mntr) lines.
func keyValues(s, sep string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, sep); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// freshNodeCount is a fresh ZooKeeper 3.5+ tree's node count: DataTree
// counts its map entries, and the root is in it twice ("" and "/"), plus
// /zookeeper, /zookeeper/quota and /zookeeper/config.
const freshNodeCount = 5

func TestFLWRuok(t *testing.T) {
	srv := startServer(t)
	if oks := zk.FLWRuok([]string{srv.Addr()}, eventWait); len(oks) != 1 || !oks[0] {
		t.Fatalf("FLWRuok = %v", oks)
	}
	if got := fourLetter(t, srv.Addr(), "ruok"); got != "imok" {
		t.Fatalf("ruok = %q", got)
	}
}

func TestFLWSrvrOutput(t *testing.T) {
	srv, c := start(t)
	mustCreate(t, c, "/a", nil, 0)
	mustCreate(t, c, "/a/b", nil, 0)
	mustCreate(t, c, "/e", nil, zk.FlagEphemeral)
	last := mustExists(t, c, "/e").Czxid

	out := fourLetter(t, srv.Addr(), "srvr")
	// The lines go-zookeeper's FLWSrvr regexp expects after the version.
	re := regexp.MustCompile(`(?m)^Latency min/avg/max: (\d+)/([0-9.]+)/(\d+)\n` +
		`Received: (\d+)\nSent: (\d+)\nConnections: (\d+)\nOutstanding: (\d+)\n` +
		`Zxid: (0x[0-9a-f]+)\nMode: (\w+)\nNode count: (\d+)\n`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("srvr output not in ZooKeeper's format:\n%s", out)
	}
	if !strings.HasPrefix(out, "Zookeeper version: ") {
		t.Fatalf("srvr does not start with the version line:\n%s", out)
	}
	if m[9] != "standalone" {
		t.Fatalf("Mode = %q", m[9])
	}
	if m[8] != fmt.Sprintf("0x%x", last) {
		t.Fatalf("Zxid = %s, want 0x%x (the last write)", m[8], last)
	}
	if n, _ := strconv.Atoi(m[6]); n < 1 {
		t.Fatalf("Connections = %d with a client connected", n)
	}
	before := fourLetter(t, srv.Addr(), "srvr")
	mustCreate(t, c, "/a/c", nil, 0)
	if got, want := nodeCount(t, fourLetter(t, srv.Addr(), "srvr")), nodeCount(t, before)+1; got != want {
		t.Fatalf("Node count after one create = %d, want %d", got, want)
	}

	mntr := keyValues(fourLetter(t, srv.Addr(), "mntr"), "\t")
	if mntr["zk_server_state"] != "standalone" || mntr["zk_znode_count"] != strconv.Itoa(nodeCount(t, fourLetter(t, srv.Addr(), "srvr"))) ||
		mntr["zk_ephemerals_count"] != "1" {
		t.Fatalf("mntr state %q znodes %q ephemerals %q",
			mntr["zk_server_state"], mntr["zk_znode_count"], mntr["zk_ephemerals_count"])
	}
	if got := fourLetter(t, srv.Addr(), "isro"); got != "rw" {
		t.Fatalf("isro = %q", got)
	}
}

func nodeCount(t *testing.T, srvr string) int {
	t.Helper()
	n, err := strconv.Atoi(keyValues(srvr, ": ")["Node count"])
	if err != nil {
		t.Fatalf("no node count in srvr output:\n%s", srvr)
	}
	return n
}

// TestNodeCountMatchesZooKeeper: srvr's "Node count" and mntr's
// zk_znode_count are DataTree.getNodeCount(), the size of ZooKeeper's node
// map, in which the root appears twice ("" and "/"). A fresh 3.5+ server
// reports 5.
func TestNodeCountMatchesZooKeeper(t *testing.T) {
	srv, c := start(t)
	if n := nodeCount(t, fourLetter(t, srv.Addr(), "srvr")); n != freshNodeCount {
		t.Fatalf("fresh server Node count = %d, want %d", n, freshNodeCount)
	}
	mustCreate(t, c, "/a", nil, 0)
	mustCreate(t, c, "/a/b", nil, 0)
	if n := nodeCount(t, fourLetter(t, srv.Addr(), "srvr")); n != freshNodeCount+2 {
		t.Fatalf("Node count = %d, want %d", n, freshNodeCount+2)
	}
	mntr := keyValues(fourLetter(t, srv.Addr(), "mntr"), "\t")
	if mntr["zk_znode_count"] != strconv.Itoa(freshNodeCount+2) {
		t.Fatalf("zk_znode_count = %s, want %d", mntr["zk_znode_count"], freshNodeCount+2)
	}
}

// TestFLWSrvrGoZookeeper: go-zookeeper's FLWSrvr also parses the version
// line, expecting "built on MM/dd/yyyy HH:mm ZONE".
func TestFLWSrvrGoZookeeper(t *testing.T) {
	srv, c := start(t)
	mustCreate(t, c, "/a", nil, 0)
	stats, ok := zk.FLWSrvr([]string{srv.Addr()}, eventWait)
	if len(stats) != 1 {
		t.Fatalf("FLWSrvr returned %d results", len(stats))
	}
	s := stats[0]
	if !ok || s.Error != nil {
		t.Fatalf("FLWSrvr failed: %v\nsrvr output:\n%s", s.Error, fourLetter(t, srv.Addr(), "srvr"))
	}
	if s.Mode != zk.ModeStandalone || s.NodeCount != freshNodeCount+1 || s.Connections < 1 || s.Outstanding != 0 {
		t.Fatalf("FLWSrvr = %+v", s)
	}
}

func TestFLWCons(t *testing.T) {
	srv, c := start(t)
	mustCreate(t, c, "/x", nil, 0)
	if _, _, err := c.Get("/x"); err != nil {
		t.Fatal(err)
	}
	last := mustExists(t, c, "/x").Czxid

	all, _ := zk.FLWCons([]string{srv.Addr()}, eventWait)
	// ok is not checked: ZooKeeper lists the cons request's own connection
	// in the brief form, which go-zookeeper's regexp rejects.
	if len(all) != 1 {
		t.Fatalf("FLWCons returned %d results", len(all))
	}
	var mine *zk.ServerClient
	for _, cl := range all[0].Clients {
		if cl.SessionID == c.SessionID() {
			mine = cl
		}
	}
	if mine == nil {
		t.Fatalf("session %#x not among parsed clients %+v (error %v); cons output:\n%s",
			c.SessionID(), all[0].Clients, all[0].Error, fourLetter(t, srv.Addr(), "cons"))
	}
	if mine.Timeout != int32(sessionTimeout/time.Millisecond) || !strings.HasPrefix(mine.Addr, "127.0.0.1:") ||
		mine.Queued != 0 || mine.Received < 3 || mine.Sent < 3 || mine.Lzxid < last {
		t.Fatalf("cons entry = %+v", mine)
	}
	if mine.LastOperation != "EXIS" && mine.LastOperation != "PING" {
		t.Fatalf("lop = %q, want EXIS (or PING)", mine.LastOperation)
	}
}

// TestFLWLatencyConsistent: ZooKeeper keeps request latencies in whole
// milliseconds and prints min/avg/max of those values, so
// min <= avg <= max always holds.
func TestFLWLatencyConsistent(t *testing.T) {
	srv, c := start(t)
	for i := 0; i < 20; i++ {
		if _, _, err := c.Exists("/"); err != nil {
			t.Fatal(err)
		}
	}
	out := fourLetter(t, srv.Addr(), "srvr")
	m := regexp.MustCompile(`(?m)^Latency min/avg/max: (\d+)/([0-9.]+)/(\d+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no latency line:\n%s", out)
	}
	lo, _ := strconv.ParseFloat(m[1], 64)
	avg, _ := strconv.ParseFloat(m[2], 64)
	hi, _ := strconv.ParseFloat(m[3], 64)
	if lo > avg || avg > hi {
		t.Fatalf("Latency min/avg/max = %s/%s/%s: avg outside [min, max]", m[1], m[2], m[3])
	}
}
