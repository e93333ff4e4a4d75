package server_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tree"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// withAdmin serves the AdminServer on a free loopback port.
func withAdmin(fn ...func(o *server.Options)) zktest.Option {
	return zktest.WithOptions(func(o *server.Options) {
		o.AdminAddr = "127.0.0.1:0"
		for _, f := range fn {
			f(o)
		}
	})
}

// adminGet fetches path from srv's AdminServer and returns the status
// and body.
func adminGet(t *testing.T, srv *server.Server, path string) (int, []byte) {
	t.Helper()
	a := srv.AdminAddr()
	if a == nil {
		t.Fatal("no AdminServer")
	}
	resp, err := http.Get("http://" + a.String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// adminJSON runs a command over HTTP and decodes its JSON (numbers as
// json.Number, so that types are checked as written).
func adminJSON(t *testing.T, srv *server.Server, cmd string) map[string]any {
	t.Helper()
	a := srv.AdminAddr()
	resp, err := http.Get("http://" + a.String() + "/commands/" + cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", cmd, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", cmd, ct)
	}
	return decodeJSON(t, cmd, resp.Body)
}

func decodeJSON(t *testing.T, what string, r io.Reader) map[string]any {
	t.Helper()
	d := json.NewDecoder(r)
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return m
}

// num returns v as an int64, failing unless it is a JSON integer.
func num(t *testing.T, what string, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%s: %v (%T) is not a number", what, v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%s: %v is not an integer", what, v)
	}
	return i
}

func obj(t *testing.T, what string, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: %v (%T) is not an object", what, v, v)
	}
	return m
}

func list(t *testing.T, what string, v any) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: %v (%T) is not an array", what, v, v)
	}
	return l
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// wantKeys checks that m has exactly the keys want (and "command" and
// "error" when top is set).
func wantKeys(t *testing.T, what string, m map[string]any, top bool, want ...string) {
	t.Helper()
	if top {
		want = append(want, "command", "error")
	}
	sort.Strings(want)
	if got := keys(m); !slices.Equal(got, want) {
		t.Errorf("%s: keys %q, want %q", what, got, want)
	}
}

// textValue returns the value after "key" in four-letter word output
// (lines "key: value", "key=value" or "key\tvalue").
func textValue(t *testing.T, text, key string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		for _, sep := range []string{": ", "=", "\t"} {
			if v, ok := strings.CutPrefix(l, key+sep); ok {
				return v
			}
		}
	}
	t.Fatalf("no %q in %q", key, text)
	return ""
}

func TestAdminOffByDefault(t *testing.T) {
	srv := zktest.Start(t)
	if a := srv.AdminAddr(); a != nil {
		t.Fatalf("AdminServer on %v without Options.AdminAddr", a)
	}
}

// TestAdminCommands runs every command after known requests (znodes,
// an ephemeral, watches from two sessions) and checks each field's type
// and value, and that the four-letter word prints the same numbers.
func TestAdminCommands(t *testing.T) {
	dir := t.TempDir()
	srv := zktest.Start(t, withAdmin(func(o *server.Options) {
		o.DataDir, o.NoSync = dir, true
		o.InitialConfig = "tickTime=100\ndataDir=" + dir + "\n"
	}))
	c1, c2 := dial(t, srv.Addr()), dial(t, srv.Addr())
	const n = 3
	call(t, c1, proto.OpCreate, &proto.CreateRequest{Path: "/a", ACL: openACL}, nil)
	for i := range n {
		call(t, c1, proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/a/%d", i), Data: []byte("x"), ACL: openACL}, nil)
	}
	call(t, c1, proto.OpCreate, &proto.CreateRequest{Path: "/e", ACL: openACL, Flags: proto.ModeEphemeral}, nil)
	call(t, c1, proto.OpGetData, &proto.GetDataRequest{Path: "/a/0", Watch: true}, &proto.GetDataResponse{})
	call(t, c1, proto.OpExists, &proto.ExistsRequest{Path: "/nx", Watch: true}, &proto.ExistsResponse{})
	call(t, c2, proto.OpGetData, &proto.GetDataRequest{Path: "/a/0", Watch: true}, &proto.GetDataResponse{})
	s1, s2 := c1.Session.SessionID, c2.Session.SessionID
	sid := func(id int64) string { return strconv.FormatInt(id, 10) }

	check := func(cmd, primary string) map[string]any {
		t.Helper()
		m := adminJSON(t, srv.Server, cmd)
		if m["command"] != primary || m["error"] != nil {
			t.Errorf("%s: command %v, error %v; want %q and null", cmd, m["command"], m["error"], primary)
		}
		return m
	}

	m := check("ruok", "ruok")
	wantKeys(t, "ruok", m, true)

	srvr := srv.FourLetterWord("srvr")
	m = check("srvr", "server_stats")
	wantKeys(t, "server_stats", m, true, "version", "read_only", "server_stats", "client_response", "node_count")
	if v, _ := m["version"].(string); !strings.HasPrefix(v, "3.8.0-zkgo") || v != textValue(t, srvr, "Zookeeper version") {
		t.Errorf("version %v", m["version"])
	}
	if m["read_only"] != false {
		t.Errorf("read_only %v", m["read_only"])
	}
	nodes := num(t, "node_count", m["node_count"])
	if want, _ := strconv.ParseInt(textValue(t, srvr, "Node count"), 10, 64); nodes != want || nodes < n+2 {
		t.Errorf("node_count %d, srvr says %d", nodes, want)
	}
	ss := obj(t, "server_stats", m["server_stats"])
	wantKeys(t, "server_stats.server_stats", ss, false, "packets_sent", "packets_received", "fsync_threshold_exceed_count",
		"client_response_stats", "data_dir_size", "log_dir_size", "provider_null", "server_state", "last_processed_zxid",
		"outstanding_requests", "avg_latency", "max_latency", "min_latency", "num_alive_client_connections", "uptime",
		"auth_failed_count", "non_mtlsremote_conn_count", "non_mtlslocal_conn_count")
	if ss["server_state"] != "standalone" || ss["provider_null"] != false {
		t.Errorf("server_stats %v", ss)
	}
	for key, text := range map[string]string{"packets_received": "Received", "packets_sent": "Sent",
		"num_alive_client_connections": "Connections", "outstanding_requests": "Outstanding"} {
		if got, want := num(t, key, ss[key]), textValue(t, srvr, text); strconv.FormatInt(got, 10) != want {
			t.Errorf("server_stats.%s = %d, srvr %s: %s", key, got, text, want)
		}
	}
	if got := num(t, "num_alive_client_connections", ss["num_alive_client_connections"]); got != 2 {
		t.Errorf("num_alive_client_connections %d, want 2", got)
	}
	if zxid := num(t, "last_processed_zxid", ss["last_processed_zxid"]); "0x"+strconv.FormatInt(zxid, 16) != textValue(t, srvr, "Zxid") {
		t.Errorf("last_processed_zxid %d, srvr %s", zxid, textValue(t, srvr, "Zxid"))
	}
	lat := fmt.Sprintf("%d/%s/%d", num(t, "min", ss["min_latency"]), ss["avg_latency"], num(t, "max", ss["max_latency"]))
	if want := textValue(t, srvr, "Latency min/avg/max"); lat != want {
		t.Errorf("latency %s, srvr %s", lat, want)
	}
	if !strings.Contains(string(ss["avg_latency"].(json.Number)), ".") {
		t.Errorf("avg_latency %v is not written as a double", ss["avg_latency"])
	}
	cr := obj(t, "client_response", m["client_response"])
	wantKeys(t, "client_response", cr, false, "last_buffer_size", "min_buffer_size", "max_buffer_size")
	if num(t, "max_buffer_size", cr["max_buffer_size"]) <= 0 {
		t.Errorf("client_response %v", cr)
	}
	if d := num(t, "data_dir_size", ss["data_dir_size"]); d <= 0 || d != num(t, "log_dir_size", ss["log_dir_size"]) {
		t.Errorf("dir sizes %v %v", ss["data_dir_size"], ss["log_dir_size"])
	}

	m = check("stat", "stats")
	for _, k := range []string{"connections", "secure_connections"} {
		l := list(t, k, m[k])
		if want := map[string]int{"connections": 2, "secure_connections": 0}[k]; len(l) != want {
			t.Fatalf("stats %s: %d, want %d", k, len(l), want)
		}
		for _, e := range l {
			wantKeys(t, "stats "+k, obj(t, k, e), false, "remote_socket_address", "interest_ops", "outstanding_requests", "packets_received", "packets_sent")
		}
	}

	cons := srv.FourLetterWord("cons")
	m = check("cons", "connections")
	conns := list(t, "connections", m["connections"])
	if len(conns) != 2 || len(list(t, "secure_connections", m["secure_connections"])) != 0 {
		t.Fatalf("connections %v", m)
	}
	for _, e := range conns {
		ci := obj(t, "connection", e)
		wantKeys(t, "connection", ci, false, "remote_socket_address", "interest_ops", "outstanding_requests", "packets_received", "packets_sent",
			"session_id", "last_operation", "established", "session_timeout", "last_cxid", "last_zxid", "last_response_time",
			"last_latency", "min_latency", "avg_latency", "max_latency")
		id := num(t, "session_id", ci["session_id"])
		if id != s1 && id != s2 {
			t.Errorf("session_id %d is neither %d nor %d", id, s1, s2)
		}
		// The same numbers as cons's line for the connection.
		line := fmt.Sprintf(" /%s[%d](queued=%d,recved=%d,sent=%d,sid=0x%x,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d)",
			ci["remote_socket_address"], num(t, "", ci["interest_ops"]), num(t, "", ci["outstanding_requests"]), num(t, "", ci["packets_received"]),
			num(t, "", ci["packets_sent"]), id, ci["last_operation"], num(t, "", ci["established"]), num(t, "", ci["session_timeout"]),
			num(t, "", ci["last_cxid"]), num(t, "", ci["last_zxid"]), num(t, "", ci["last_response_time"]), num(t, "", ci["last_latency"]),
			num(t, "", ci["min_latency"]), num(t, "", ci["avg_latency"]), num(t, "", ci["max_latency"]))
		if !strings.Contains(cons, line+"\n") {
			t.Errorf("cons does not have %q:\n%s", line, cons)
		}
		wantOp, wantRecv := "EXIS", int64(n+4) // c1: n+2 creates, getData, exists
		if id == s2 {
			wantOp, wantRecv = "GETD", 1
		}
		if ci["last_operation"] != wantOp || num(t, "packets_received", ci["packets_received"]) != wantRecv {
			t.Errorf("session %x: last_operation %v packets_received %v, want %s %d", id, ci["last_operation"], ci["packets_received"], wantOp, wantRecv)
		}
	}

	m = check("conf", "configuration")
	wantKeys(t, "configuration", m, true, "client_port", "data_dir", "data_log_dir", "tick_time", "max_client_cnxns",
		"min_session_timeout", "max_session_timeout", "server_id", "client_port_listen_backlog")
	_, port, _ := net.SplitHostPort(srv.Addr())
	if strconv.FormatInt(num(t, "client_port", m["client_port"]), 10) != port || m["data_dir"] != dir || m["data_log_dir"] != dir ||
		num(t, "tick_time", m["tick_time"]) != 100 || num(t, "server_id", m["server_id"]) != 0 ||
		num(t, "min_session_timeout", m["min_session_timeout"]) != 200 || num(t, "max_session_timeout", m["max_session_timeout"]) != 2000 {
		t.Errorf("configuration %v", m)
	}
	conf := srv.FourLetterWord("conf")
	if textValue(t, conf, "tickTime") != "100" || textValue(t, conf, "dataDir") != dir {
		t.Errorf("conf %q", conf)
	}

	m = check("dump", "dump")
	wantKeys(t, "dump", m, true, "expiry_time_to_session_ids", "session_id_to_ephemeral_paths")
	eph := obj(t, "ephemerals", m["session_id_to_ephemeral_paths"])
	if l := list(t, "ephemerals", eph[sid(s1)]); len(eph) != 1 || len(l) != 1 || l[0] != "/e" {
		t.Errorf("session_id_to_ephemeral_paths %v", eph)
	}
	var expiring []int64
	for k, v := range obj(t, "expiry", m["expiry_time_to_session_ids"]) {
		if _, err := strconv.ParseInt(k, 10, 64); err != nil {
			t.Errorf("expiry time %q", k)
		}
		for _, id := range list(t, "expiry", v) {
			expiring = append(expiring, num(t, "session", id))
		}
	}
	if slices.Sort(expiring); !slices.Equal(expiring, []int64{min(s1, s2), max(s1, s2)}) {
		t.Errorf("expiry_time_to_session_ids has %v, want %x and %x", expiring, s1, s2)
	}

	m = check("envi", "environment")
	envi := srv.FourLetterWord("envi")
	for _, k := range []string{"zookeeper.version", "host.name", "os.name", "os.arch", "user.dir"} {
		if v, ok := m[k].(string); !ok || textValue(t, envi, k) != v {
			t.Errorf("environment %s = %v, envi %q", k, m[k], textValue(t, envi, k))
		}
	}

	m = check("wchc", "watches")
	w := obj(t, "watches", m["session_id_to_watched_paths"])
	if fmt.Sprint(w[sid(s1)]) != "[/a/0 /nx]" || fmt.Sprint(w[sid(s2)]) != "[/a/0]" || len(w) != 2 {
		t.Errorf("session_id_to_watched_paths %v", w)
	}
	m = check("wchp", "watches_by_path")
	wp := obj(t, "watches_by_path", m["path_to_session_ids"])
	var ids []int64
	for _, v := range list(t, "/a/0", wp["/a/0"]) {
		ids = append(ids, num(t, "session", v))
	}
	if len(wp) != 2 || !slices.Equal(ids, []int64{min(s1, s2), max(s1, s2)}) {
		t.Errorf("path_to_session_ids %v", wp)
	}
	m = check("wchs", "watch_summary")
	wantKeys(t, "watch_summary", m, true, "num_connections", "num_paths", "num_total_watches")
	if num(t, "", m["num_connections"]) != 2 || num(t, "", m["num_paths"]) != 2 || num(t, "", m["num_total_watches"]) != 3 {
		t.Errorf("watch_summary %v", m)
	}
	if got := srv.FourLetterWord("wchs"); got != "2 connections watching 2 paths\nTotal watches:3\n" {
		t.Errorf("wchs %q", got)
	}

	m = check("isro", "is_read_only")
	if m["read_only"] != false {
		t.Errorf("is_read_only %v", m)
	}
	// Standalone: ZooKeeper's LeaderCommand sets the error itself.
	m = adminJSON(t, srv.Server, "lead")
	if m["command"] != "leader" || m["error"] != "server is not initialized" || len(m) != 2 {
		t.Errorf("leader %v", m)
	}
	m = check("voting_view", "voting_view")
	if cfg := obj(t, "current_config", m["current_config"]); len(cfg) != 0 {
		t.Errorf("voting_view %v", m)
	}
	m = check("lsnp", "last_snapshot")
	if z, ok := m["zxid"].(string); !ok {
		t.Errorf("last_snapshot zxid %v", m["zxid"])
	} else if _, err := strconv.ParseUint(z, 16, 64); err != nil {
		t.Errorf("last_snapshot zxid %q is not hexadecimal", z)
	}
	num(t, "timestamp", m["timestamp"])
	m = check("icfg", "initial_configuration")
	if m["initial_configuration"] != "tickTime=100\ndataDir="+dir+"\n" {
		t.Errorf("initial_configuration %v", m)
	}
	m = check("obsr", "observers")
	if num(t, "synced_observers", m["synced_observers"]) != 0 || len(list(t, "observers", m["observers"])) != 0 {
		t.Errorf("observers %v", m)
	}
	check("orst", "observer_connection_stat_reset")
	m = check("dirs", "dirs")
	dirs := srv.FourLetterWord("dirs")
	if d := num(t, "datadir_size", m["datadir_size"]); d <= 0 || strconv.FormatInt(d, 10) != textValue(t, dirs, "datadir_size") ||
		strconv.FormatInt(num(t, "logdir_size", m["logdir_size"]), 10) != textValue(t, dirs, "logdir_size") {
		t.Errorf("dirs %v, four-letter word %q", m, dirs)
	}
	// A digest is logged every 128 zxids: write past one.
	for i := range tree.DigestLogInterval {
		call(t, c1, proto.OpSetData, &proto.SetDataRequest{Path: "/a", Data: []byte(fmt.Sprint(i)), Version: -1}, &proto.SetDataResponse{})
	}
	m = check("hash", "hash")
	var want strings.Builder
	for _, d := range list(t, "digests", m["digests"]) {
		e := obj(t, "digest", d)
		if num(t, "digest_version", e["digest_version"]) != 2 {
			t.Errorf("digest %v", e)
		}
		// JSON numbers: the digest, a uint64, as text to keep its digits.
		fmt.Fprintf(&want, "%x: %s\n", num(t, "zxid", e["zxid"]), e["digest"].(json.Number))
	}
	if got := srv.FourLetterWord("hash"); want.Len() == 0 || got != want.String() {
		t.Errorf("hash: AdminServer %q, four-letter word %q", want.String(), got)
	}
	m = check("zabstate", "zabstate")
	if m["voting"] != false || m["zabstate"] != "" {
		t.Errorf("zabstate %v", m)
	}
	m = check("sysp", "system_properties")
	if _, ok := m["os.name"].(string); !ok {
		t.Errorf("system_properties %v", m)
	}

	// monitor: ZooKeeper's keys without zk_, zkgo's as mntr prints them,
	// the same values.
	m = check("mntr", "monitor")
	mntr := srv.FourLetterWord("mntr")
	lines := strings.Split(strings.TrimSpace(mntr), "\n")
	if len(m) != len(lines)+2 {
		t.Errorf("monitor has %d fields, mntr %d lines", len(m)-2, len(lines))
	}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "\t")
		jk := strings.TrimPrefix(k, "zk_")
		got, ok := m[jk]
		if !ok {
			t.Errorf("monitor has no %s (mntr %s)", jk, k)
			continue
		}
		if strings.HasPrefix(jk, "zkgo_stage_") { // the reply stage of the last reply may land between the two
			num(t, jk, got)
			continue
		}
		switch jk {
		case "uptime", "open_file_descriptor_count", // change between the two
			"zkgo_queued_bytes",       // the last reply's bytes until its writer has counted them out
			"zkgo_parked_connections": // a connection parks when idle
			num(t, jk, got)
			continue
		}
		if fmt.Sprint(got) != v {
			t.Errorf("monitor %s = %v, mntr %s = %s", jk, got, k, v)
		}
	}
	if num(t, "znode_count", m["znode_count"]) != nodes || num(t, "ephemerals_count", m["ephemerals_count"]) != 1 ||
		num(t, "watch_count", m["watch_count"]) != 3 || m["server_state"] != "standalone" || m["zkgo_in_memory_only"] != false {
		t.Errorf("monitor %v", m)
	}

	// Trace mask: ZooKeeper's default, set over HTTP and by the
	// four-letter word, read back by both.
	m = check("gtmk", "get_trace_mask")
	if num(t, "tracemask", m["tracemask"]) != 306 || srv.FourLetterWord("gtmk") != "306" {
		t.Errorf("get_trace_mask %v, gtmk %q", m, srv.FourLetterWord("gtmk"))
	}
	m = check("stmk?traceMask=5", "set_trace_mask")
	if num(t, "tracemask", m["tracemask"]) != 5 || srv.FourLetterWord("gtmk") != "5" {
		t.Errorf("set_trace_mask %v, gtmk %q", m, srv.FourLetterWord("gtmk"))
	}
	for q, want := range map[string]string{"": "setTraceMask requires long traceMask argument", "?traceMask=x": "setTraceMask requires long traceMask argument, got x"} {
		m = adminJSON(t, srv.Server, "set_trace_mask"+q)
		if m["error"] != want || m["command"] != "set_trace_mask" {
			t.Errorf("set_trace_mask%s: %v", q, m)
		}
	}
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg := binary.BigEndian.AppendUint64([]byte("stmk"), 0x1ff)
	nc.Write(msg)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if out, err := io.ReadAll(nc); err != nil || string(out) != "511" {
		t.Errorf("stmk: %q %v", out, err)
	}
	if m = adminJSON(t, srv.Server, "gtmk"); num(t, "tracemask", m["tracemask"]) != 511 {
		t.Errorf("get_trace_mask after stmk: %v", m)
	}
}

// crst and srst start the counters over, over HTTP and as four-letter
// words.
func TestAdminResetCommands(t *testing.T) {
	srv := zktest.Start(t, withAdmin())
	c := dial(t, srv.Addr())
	call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/x", ACL: openACL}, nil)
	call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: "/x"}, &proto.GetDataResponse{})

	conn := func() map[string]any {
		t.Helper()
		l := list(t, "connections", adminJSON(t, srv.Server, "cons")["connections"])
		if len(l) != 1 {
			t.Fatalf("connections %v", l)
		}
		return obj(t, "connection", l[0])
	}
	if ci := conn(); num(t, "packets_received", ci["packets_received"]) != 2 || ci["last_operation"] != "GETD" {
		t.Fatalf("before crst: %v", ci)
	}
	m := adminJSON(t, srv.Server, "crst")
	if m["command"] != "connection_stat_reset" || m["error"] != nil || len(m) != 2 {
		t.Errorf("crst: %v", m)
	}
	ci := conn()
	for k, want := range map[string]any{"packets_received": int64(0), "packets_sent": int64(0), "last_operation": "NA",
		"last_cxid": int64(-1), "last_zxid": int64(-1), "last_response_time": int64(0), "max_latency": int64(0)} {
		got := ci[k]
		if n, ok := got.(json.Number); ok {
			got, _ = n.Int64()
		}
		if got != want {
			t.Errorf("after crst %s = %v, want %v", k, got, want)
		}
	}
	// The four-letter word prints no lcxid after a reset, as ZooKeeper.
	if cons := srv.FourLetterWord("cons"); !strings.Contains(cons, "recved=0,sent=0,") || !strings.Contains(cons, "lop=NA") ||
		strings.Contains(cons, "lcxid") || !strings.Contains(cons, "lzxid=0xffffffffffffffff") {
		t.Errorf("cons after crst: %q", cons)
	}
	call(t, c, proto.OpExists, &proto.ExistsRequest{Path: "/x"}, &proto.ExistsResponse{})
	if cons := srv.FourLetterWord("cons"); !strings.Contains(cons, "recved=1,sent=1,") || !strings.Contains(cons, "lop=EXIS") {
		t.Errorf("cons after a request: %q", cons)
	}
	if got := srv.FourLetterWord("crst"); got != "Connection stats reset.\n" {
		t.Errorf("crst: %q", got)
	}
	if cons := srv.FourLetterWord("cons"); !strings.Contains(cons, "recved=0,sent=0,") {
		t.Errorf("cons after the four-letter crst: %q", cons)
	}

	ss := obj(t, "server_stats", adminJSON(t, srv.Server, "srvr")["server_stats"])
	if num(t, "packets_received", ss["packets_received"]) == 0 {
		t.Fatalf("server_stats before srst: %v", ss)
	}
	if m := adminJSON(t, srv.Server, "srst"); m["command"] != "stat_reset" || m["error"] != nil {
		t.Errorf("srst: %v", m)
	}
	m = adminJSON(t, srv.Server, "srvr")
	ss = obj(t, "server_stats", m["server_stats"])
	cr := obj(t, "client_response", m["client_response"])
	if num(t, "", ss["packets_received"]) != 0 || num(t, "", ss["packets_sent"]) != 0 || num(t, "", ss["max_latency"]) != 0 ||
		num(t, "", cr["last_buffer_size"]) != -1 || num(t, "", cr["max_buffer_size"]) != -1 {
		t.Errorf("after srst: %v", m)
	}
	srvr := srv.FourLetterWord("srvr")
	if textValue(t, srvr, "Received") != "0" || textValue(t, srvr, "Latency min/avg/max") != "0/0.0/0" {
		t.Errorf("srvr after srst: %q", srvr)
	}
}

// dirs reports the bytes in the data directory, which grow with writes
// (the WAL's segments are preallocated; snapshots are new files).
func TestAdminDirsGrow(t *testing.T) {
	dir := t.TempDir()
	srv := zktest.Start(t, withAdmin(func(o *server.Options) { o.DataDir, o.NoSync, o.SnapCount = dir, true, 20 }))
	sizes := func() (int64, int64) {
		m := adminJSON(t, srv.Server, "dirs")
		return num(t, "datadir_size", m["datadir_size"]), num(t, "logdir_size", m["logdir_size"])
	}
	// The four-letter word agrees (while nothing writes in the background).
	agree := func() {
		t.Helper()
		var text string
		for range 50 {
			d, l := sizes()
			if text = srv.FourLetterWord("dirs"); text == fmt.Sprintf("datadir_size: %d\nlogdir_size: %d\n", d, l) {
				return
			}
		}
		t.Errorf("dirs %q never agreed with the JSON", text)
	}
	agree()
	d0, l0 := sizes()
	if d0 <= 0 || d0 != l0 {
		t.Fatalf("dirs before writes: %d %d", d0, l0)
	}
	c := dial(t, srv.Addr())
	data := bytes.Repeat([]byte("z"), 1024)
	for i := range 100 {
		call(t, c, proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/n%d", i), Data: data, ACL: openACL}, nil)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Snapshots are written in the background.
		if d, _ := sizes(); d > d0+50*1024 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dirs did not grow after 100 KiB of writes: %d → %d", d0, func() int64 { d, _ := sizes(); return d }())
		}
		time.Sleep(20 * time.Millisecond)
	}
	agree()
	// In memory: nothing on disk.
	mem := zktest.Start(t, withAdmin())
	if m := adminJSON(t, mem.Server, "dirs"); num(t, "", m["datadir_size"]) != 0 || num(t, "", m["logdir_size"]) != 0 {
		t.Errorf("in-memory dirs %v", m)
	}
}
