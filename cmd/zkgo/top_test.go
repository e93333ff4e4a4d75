package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/tlstest"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// topOutput is a snapshot zkgo top printed: its header line and each
// member's cells by column name.
type topOutput struct {
	header string
	rows   map[string]map[string]string
}

// parseTop reads a snapshot by the columns' offsets in the table's first
// line, so it also checks that every row is aligned with it.
func parseTop(t *testing.T, out string) topOutput {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "zkgo top ") || !strings.HasPrefix(lines[1], "MEMBER ") {
		t.Fatalf("not a zkgo top snapshot:\n%s", out)
	}
	names := strings.Fields(lines[1])
	var starts []int
	for _, n := range names {
		starts = append(starts, strings.Index(lines[1], n))
	}
	res := topOutput{header: lines[0], rows: map[string]map[string]string{}}
	for _, l := range lines[2:] {
		row := map[string]string{}
		for i, n := range names {
			if len(l) <= starts[i] || (i > 0 && l[starts[i]-1] != ' ') {
				t.Fatalf("column %s is not aligned in %q:\n%s", n, l, out)
			}
			end := len(l)
			if i+1 < len(starts) {
				end = min(end, starts[i+1])
			}
			row[n] = strings.TrimSpace(l[starts[i]:end])
		}
		res.rows[row["MEMBER"]] = row
	}
	return res
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func TestTopStandalone(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfg, []byte(fmt.Sprintf("tickTime=100\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=mntr,srvr\n",
		dir, zktest.FreePort(t))), 0o644)
	_, addr := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/top", "/top/a", "/top/b"} {
		if _, err := c.Create(ctx, p, []byte("x"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	znodes := mntrKey(ctx, addr, "zk_znode_count")
	if znodes == "" {
		t.Fatal("no zk_znode_count in mntr")
	}
	for _, target := range [][]string{{"-server", addr}, {"-config", cfg}} {
		out, errOut, code := runCommand(t, append([]string{"top", "-once", "-interval", "100ms"}, target...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", target, code, out, errOut)
		}
		snap := parseTop(t, out)
		row, ok := snap.rows[addr]
		if len(snap.rows) != 1 || !ok {
			t.Fatalf("%v: want one row for %s:\n%s", target, addr, out)
		}
		if !strings.Contains(snap.header, "leader (standalone)") || !strings.Contains(snap.header, "1/1 members answered") {
			t.Errorf("%v: header %q", target, snap.header)
		}
		if row["ROLE"] != "standalone" || row["ZNODES"] != znodes {
			t.Errorf("%v: role %q znodes %q, want standalone and %s (mntr):\n%s", target, row["ROLE"], row["ZNODES"], znodes, out)
		}
		// -once polled twice: the rates are there, and the raft numbers.
		for _, col := range []string{"REQ/S", "SENT/S", "TERM", "APPLIED", "LAG", "SESS", "CONNS"} {
			if !isNumber(row[col]) {
				t.Errorf("%v: %s is %q, not a number:\n%s", target, col, row[col], out)
			}
		}
	}
	// -n: snapshots one after another (stdout is no terminal); rates from
	// the second on.
	out, errOut, code := runCommand(t, "top", "-n", "2", "-interval", "100ms", "-server", addr)
	snaps := strings.Split(out, "\n\n")
	if code != 0 || len(snaps) != 2 {
		t.Fatalf("-n 2: exit %d, %d snapshots\n%s%s", code, len(snaps), out, errOut)
	}
	if first, second := parseTop(t, snaps[0]).rows[addr]["REQ/S"], parseTop(t, snaps[1]).rows[addr]["REQ/S"]; first != "-" || !isNumber(second) {
		t.Errorf("-n 2: REQ/S %q then %q, want - then a number", first, second)
	}
	if _, errOut, code := runCommand(t, "top", "-server", addr, "-config", cfg); code != 2 || !strings.Contains(errOut, "exclude") {
		t.Errorf("-server with -config: exit %d %q", code, errOut)
	}
}

// TestTopTLS: the TLS flags reach the members' secure client ports.
func TestTopTLS(t *testing.T) {
	dir := t.TempDir()
	files := tlstest.WriteFiles(t, dir, "server", "client")
	securePort := zktest.FreePort(t)
	cfg := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfg, []byte(fmt.Sprintf("tickTime=100\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nsecureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n"+
		"ssl.keyStore.location=%s\nssl.trustStore.location=%s\nadmin.enableServer=false\n4lw.commands.whitelist=mntr\n",
		dir, zktest.FreePort(t), securePort, files.Path("server"), files.Path("ca"))), 0o644)
	startServer(t, cfg)
	secure := fmt.Sprintf("127.0.0.1:%d", securePort)
	out, errOut, code := runCommand(t, "top", "-once", "-interval", "0", "-server", secure,
		"-tls-ca", files.Path("ca"), "-tls-cert", files.Path("client"), "-tls-key", files.Path("client"))
	if code != 0 || parseTop(t, out).rows[secure]["ROLE"] != "standalone" {
		t.Fatalf("over TLS: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = runCommand(t, "top", "-once", "-interval", "0", "-timeout", "1s", "-server", secure)
	if code != 1 || !strings.HasPrefix(parseTop(t, out).rows[secure]["ROLE"], "unreachable: ") {
		t.Fatalf("plaintext to the TLS port: exit %d, want 1\n%s", code, out)
	}
}

func TestTopEnsemble(t *testing.T) {
	const n = 3
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\n")
	addrs := clientAddrs(lines)
	m := newMemberProcs(t, cfgs)
	for i := range cfgs {
		m.start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitHealthy(ctx, t, addrs, "starting")

	out, errOut, code := runCommand(t, "top", "-once", "-interval", "200ms", "-config", cfgs[0])
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	snap := parseTop(t, out)
	roles := map[string]int{}
	follower := -1
	for i, a := range addrs {
		row, ok := snap.rows[a]
		if !ok {
			t.Fatalf("no row for %s:\n%s", a, out)
		}
		roles[row["ROLE"]]++
		if row["ROLE"] == "leader" && !strings.Contains(snap.header, "leader "+a+" ") {
			t.Errorf("header %q does not name the leader %s", snap.header, a)
		}
		if row["ROLE"] == "follower" {
			follower = i
		}
		for _, col := range []string{"TERM", "APPLIED", "LAG", "ZNODES", "REQ/S"} {
			if !isNumber(row[col]) {
				t.Errorf("%s: %s is %q, not a number:\n%s", a, col, row[col], out)
			}
		}
		if lag, _ := strconv.Atoi(row["LAG"]); lag < 0 {
			t.Errorf("%s: negative lag %d", a, lag)
		}
	}
	if len(snap.rows) != n || roles["leader"] != 1 || roles["follower"] != n-1 || !strings.Contains(snap.header, "3/3 members answered") {
		t.Fatalf("want one leader and two followers, all answering:\n%s", out)
	}

	// A member down is a row, not the end of the view.
	m.procs[follower].kill()
	servers := strings.Join(addrs, ",")
	out, errOut, code = runCommand(t, "top", "-once", "-interval", "0", "-timeout", "2s", "-server", servers)
	if code != 0 {
		t.Fatalf("one member down: exit %d\n%s%s", code, out, errOut)
	}
	snap = parseTop(t, out)
	if got := snap.rows[addrs[follower]]["ROLE"]; !strings.HasPrefix(got, "unreachable: ") {
		t.Errorf("the killed member's role is %q:\n%s", got, out)
	}
	if len(snap.rows) != n || !strings.Contains(snap.header, "2/3 members answered") {
		t.Errorf("one member down:\n%s", out)
	}

	for i := range m.procs {
		if i != follower {
			m.procs[i].kill()
		}
	}
	out, _, code = runCommand(t, "top", "-once", "-interval", "0", "-server", servers)
	if code != 1 || !strings.Contains(out, "0/3 members answered") {
		t.Fatalf("all members down: exit %d, want 1:\n%s", code, out)
	}
}

func TestTopParseMntr(t *testing.T) {
	text := "zk_version\t3.9.2-e454e8c7283100c7caec6dcae2bc82aaecb63023, built on 2024-02-12 20:59 UTC\r\n" +
		"zk_server_state\tfollower\n" +
		"garbage without a tab\n" +
		"\tno key\n" +
		"a key with spaces\t1\n" +
		"\x00\x01\xff\t2\n" +
		strings.Repeat("k", 200) + "\t3\n" +
		"zk_znode_count\t  42 \n" +
		"zk_znode_count\t43\n" +
		"zk_empty\t\n" +
		"zk_avg_latency\t0.1234\n" +
		"zk_truncat"
	got, err := parseMntr(text)
	want := map[string]string{
		"zk_version":      "3.9.2-e454e8c7283100c7caec6dcae2bc82aaecb63023, built on 2024-02-12 20:59 UTC",
		"zk_server_state": "follower",
		"zk_znode_count":  "42",
		"zk_empty":        "",
		"zk_avg_latency":  "0.1234",
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseMntr = %q, %v; want %q", got, err, want)
	}
	for text, want := range map[string]error{
		"This ZooKeeper instance is not currently serving requests\n": errNotServing,
		"mntr is not executed because it is not in the whitelist.\n":  errNotWhitelisted,
	} {
		if _, err := parseMntr(text); err != want {
			t.Errorf("parseMntr(%q): %v, want %v", text, err, want)
		}
	}
	for _, text := range []string{"", "HTTP/1.1 400 Bad Request\r\n\r\n", "\x00\x00\x00\x10garbage"} {
		if vals, err := parseMntr(text); err == nil {
			t.Errorf("parseMntr(%q) = %q, want an error", text, vals)
		}
	}
}

func TestTopRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sample := func(at time.Duration, kv ...string) mntrSample {
		s := mntrSample{addr: "a:1", at: t0.Add(at), vals: map[string]string{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.vals[kv[i]] = kv[i+1]
		}
		return s
	}
	prev := sample(0, "zk_packets_received", "100", "zk_uptime", "5000", "zk_packets_sent", "x")
	for _, tt := range []struct {
		name string
		cur  mntrSample
		key  string
		want float64
		ok   bool
	}{
		{"rate", sample(2*time.Second, "zk_packets_received", "300", "zk_uptime", "7000"), "zk_packets_received", 100, true},
		{"idle", sample(500*time.Millisecond, "zk_packets_received", "100"), "zk_packets_received", 0, true},
		{"missing now", sample(2*time.Second, "zk_uptime", "7000"), "zk_packets_received", 0, false},
		{"missing before", sample(2*time.Second, "zkgo_raft_applied", "9"), "zkgo_raft_applied", 0, false},
		{"not a number", sample(2*time.Second, "zk_packets_sent", "12"), "zk_packets_sent", 0, false},
		{"went back", sample(2*time.Second, "zk_packets_received", "50"), "zk_packets_received", 0, false},
		{"restarted", sample(2*time.Second, "zk_packets_received", "150", "zk_uptime", "10"), "zk_packets_received", 0, false},
		{"no time passed", sample(0, "zk_packets_received", "300"), "zk_packets_received", 0, false},
	} {
		if got, ok := rate(prev, tt.cur, tt.key); got != tt.want || ok != tt.ok {
			t.Errorf("%s: rate = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// TestTopRender: the table of an ensemble of zkgo members, an Apache
// ZooKeeper one (no zkgo_* keys), one that is down and one without a
// quorum.
func TestTopRender(t *testing.T) {
	now := time.Unix(2000, 0)
	member := func(addr, role string, applied int, received string) mntrSample {
		return mntrSample{addr: addr, at: now, vals: map[string]string{
			"zk_server_state": role, "zk_znode_count": "12", "zk_packets_received": received, "zk_packets_sent": "10",
			"zk_avg_latency": "0.4567", "zk_max_latency": "9", "zk_global_sessions": "3", "zk_approximate_data_size": "3145728",
			"zkgo_raft_term": "4", "zkgo_raft_applied": strconv.Itoa(applied)}}
	}
	apache := mntrSample{addr: "zk4:2181", at: now, vals: map[string]string{"zk_server_state": "observer", "zk_znode_count": "12"}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cur := []mntrSample{
		member("zk1:2181", "follower", 7, "250"), member("zk2:2181", "leader", 10, "90"), apache,
		{addr: "zk5:2181", err: refused}, {addr: "zk6:2181", err: errNotServing},
		{addr: "zk7:2181", err: fmt.Errorf("read: %w", os.ErrDeadlineExceeded)}, {addr: "zk8:2181", err: errNotWhitelisted},
		{addr: "zk9:2181", err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "zk9", Server: "10.0.0.53:53", IsNotFound: true}}},
	}
	prev := map[string]mntrSample{"zk1:2181": member("zk1:2181", "follower", 5, "50")}
	prev["zk1:2181"] = mntrSample{addr: "zk1:2181", at: now.Add(-2 * time.Second), vals: prev["zk1:2181"].vals}
	var b bytes.Buffer
	if got := renderTop(&b, now, cur, prev); got != 4 {
		t.Errorf("renderTop counted %d members answering, want 4", got)
	}
	snap := parseTop(t, b.String())
	if !strings.Contains(snap.header, "leader zk2:2181 ") || !strings.Contains(snap.header, "4/8 members answered") {
		t.Errorf("header %q", snap.header)
	}
	want := map[string]map[string]string{
		"zk1:2181": {"ROLE": "follower", "REQ/S": "100", "SENT/S": "0.0", "LAG": "3", "APPLIED": "7", "LATENCY": "0.46/9", "SESS": "3", "DATA": "3.0MiB"},
		"zk2:2181": {"ROLE": "leader", "REQ/S": "-", "LAG": "0", "TERM": "4"},
		"zk4:2181": {"ROLE": "observer", "ZNODES": "12", "TERM": "-", "APPLIED": "-", "LAG": "-", "LATENCY": "-", "SESS": "-", "DATA": "-"},
		"zk5:2181": {"ROLE": "unreachable: connection refused", "ZNODES": "-", "DATA": "-"},
		"zk6:2181": {"ROLE": "not serving", "ZNODES": "-"},
		"zk7:2181": {"ROLE": "unreachable: timed out"},
		"zk8:2181": {"ROLE": "refused: mntr not whitelisted", "LAG": "-"},
		"zk9:2181": {"ROLE": "unreachable: lookup zk9: no such host"},
	}
	for addr, cols := range want {
		for col, v := range cols {
			if got := snap.rows[addr][col]; got != v {
				t.Errorf("%s %s = %q, want %q", addr, col, got, v)
			}
		}
	}
	if t.Failed() {
		t.Logf("table:\n%s", b.String())
	}
}

// TestTopPollMember: the answer is bounded and the exchange has a
// deadline, whatever the other side does.
func TestTopPollMember(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for i := 0; ; i++ {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				nc.Read(make([]byte, 4))
				if i == 0 { // a flood: keys, then 2 MiB of garbage
					nc.Write([]byte("zk_server_state\tleader\nzk_znode_count\t4\n"))
					nc.Write(bytes.Repeat([]byte("zk_x\t1"), 2<<20/6))
					return
				}
				time.Sleep(10 * time.Second) // silence
			}()
		}
	}()
	v := &topView{timeout: 10 * time.Second}
	s := v.pollMember(context.Background(), ln.Addr().String())
	if s.err != nil || s.vals["zk_server_state"] != "leader" || s.vals["zk_znode_count"] != "4" || len(s.vals) != 2 {
		t.Errorf("flood: %v %q", s.err, s.vals)
	}
	v.timeout = 300 * time.Millisecond
	start := time.Now()
	s = v.pollMember(context.Background(), ln.Addr().String())
	if !errors.Is(s.err, os.ErrDeadlineExceeded) || shortError(s.err) != "timed out" || time.Since(start) > 5*time.Second {
		t.Errorf("silence: %v after %v", s.err, time.Since(start))
	}
}

// TestTopTargets: the members to poll from a connect string, or from a
// zoo.cfg (and its dynamic file) on a machine without the member's myid.
func TestTopTargets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	static := write("static.cfg", "tickTime=2000\ndataDir="+dir+"/absent\nclientPort=2181\ninitLimit=5\nsyncLimit=2\n"+
		"server.1=zk1:2888:3888\nserver.2=zk2:2888:3888;2191\nserver.3=[::1]:2888:3888:observer;0.0.0.0:2192\n")
	write("zoo.cfg.dynamic.100000000", "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:3181\nserver.2=127.0.0.1:2889:3889:participant;3182\n")
	dynamic := write("dynamic.cfg", "tickTime=2000\ndataDir="+dir+"\ndynamicConfigFile=zoo.cfg.dynamic.100000000\n")
	standalone := write("standalone.cfg", "tickTime=2000\ndataDir="+dir+"\nclientPort=2281\n")
	for _, tt := range []struct {
		server, config string
		want           []string
	}{
		{"a:1, b ,c:3/chroot", "", []string{"a:1", "b:2181", "c:3"}},
		{"[::1]:5,[::1]", "", []string{"[::1]:5", "[::1]:2181"}},
		{"", static, []string{"zk1:2181", "zk2:2191", "[::1]:2192"}},
		{"", dynamic, []string{"127.0.0.1:3181", "127.0.0.1:3182"}},
		{"", standalone, []string{"127.0.0.1:2281"}},
	} {
		got, err := topTargets(tt.server, tt.config)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("topTargets(%q, %q) = %q, %v; want %q", tt.server, tt.config, got, err, tt.want)
		}
	}
	for _, bad := range [][2]string{{" , ", ""}, {"", filepath.Join(dir, "missing.cfg")}} {
		if got, err := topTargets(bad[0], bad[1]); err == nil {
			t.Errorf("topTargets(%q, %q) = %q, want an error", bad[0], bad[1], got)
		}
	}
}
