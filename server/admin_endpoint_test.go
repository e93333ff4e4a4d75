package server_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// The AdminServer's HTTP endpoint: routes, limits, lifecycle, and
// commands on an ensemble. admin_test.go has the helpers.

func TestAdminEndpoint(t *testing.T) {
	srv := zktest.Start(t, withAdmin())

	// The command URL lists every command as a link, sorted: ZooKeeper
	// 3.8's 26 and zkgo's four operator commands (leadership.go).
	for _, p := range []string{"/commands", "/commands/"} {
		code, body := adminGet(t, srv.Server, p)
		links := regexp.MustCompile(`<a href="/commands/([a-z_]+)">([a-z_]+)</a>\n<br/>\n`).FindAllStringSubmatch(string(body), -1)
		var names []string
		for _, l := range links {
			if l[1] != l[2] {
				t.Errorf("link %q", l[0])
			}
			names = append(names, l[1])
		}
		if code != http.StatusOK || len(names) != 30 || !slices.IsSorted(names) || !slices.Contains(names, "monitor") || !slices.Contains(names, "yield_leadership") {
			t.Errorf("GET %s: %d, commands %q", p, code, names)
		}
	}
	// An unknown command is answered 200 with ZooKeeper's error; names
	// are case-sensitive and a slash is part of the name.
	for _, name := range []string{"nope", "SRVR", "ruok/extra"} {
		code, body := adminGet(t, srv.Server, "/commands/"+name)
		m := decodeJSON(t, name, bytes.NewReader(body))
		if code != http.StatusOK || m["command"] != name || m["error"] != "Unknown command: "+name || len(m) != 2 {
			t.Errorf("%s: %d %v", name, code, m)
		}
	}
	// Other methods, other paths, and /metrics and pprof when not enabled.
	a := "http://" + srv.AdminAddr().String()
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, "TRACE"} {
		req, _ := http.NewRequest(method, a+"/commands/ruok", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %s", method, resp.Status)
		}
	}
	if resp, err := http.Head(a + "/commands/ruok"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD: %v %v", resp, err)
	}
	for _, p := range []string{"/", "/foo", "/metrics", "/debug/pprof/", "/commandsx"} {
		if code, _ := adminGet(t, srv.Server, p); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}

	// Headers beyond the bound are refused.
	req, _ := http.NewRequest(http.MethodGet, a+"/commands/ruok", nil)
	req.Header.Set("X-Big", strings.Repeat("b", 64<<10))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("64 KiB header: %s", resp.Status)
		}
	}

	// A client that never finishes its header is cut off.
	nc, err := net.Dial("tcp", srv.AdminAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	nc.Write([]byte("GET /commands/ruok HTTP/1.1\r\nHost: x\r\n"))
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("slow header client not cut off: %v after %v", err, time.Since(start))
	}

	// The endpoint closes with the server.
	addr := srv.AdminAddr().String()
	srv.Close()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("AdminServer still accepts after Close")
	}
}

// At most four requests are served at a time; /metrics and pprof are
// there when enabled; the command URL is configurable.
func TestAdminConcurrencyMetricsPprof(t *testing.T) {
	srv := zktest.Start(t, withAdmin(func(o *server.Options) {
		o.AdminPprof, o.MetricsAddr, o.AdminCommandURL = true, "127.0.0.1:0", "/zk/cmds/"
	}))
	if code, body := adminGet(t, srv.Server, "/metrics"); code != http.StatusOK || !strings.Contains(string(body), "\nznode_count ") {
		t.Errorf("GET /metrics: %d\n%.300s", code, body)
	}
	if code, body := adminGet(t, srv.Server, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET /debug/pprof/: %d", code)
	}
	if code, body := adminGet(t, srv.Server, "/zk/cmds/ruok"); code != http.StatusOK || !strings.Contains(string(body), `"command": "ruok"`) {
		t.Errorf("GET /zk/cmds/ruok: %d %s", code, body)
	}
	if code, _ := adminGet(t, srv.Server, "/commands/ruok"); code != http.StatusNotFound {
		t.Errorf("GET /commands/ruok with another command URL: %d", code)
	}

	// Four delta profiles hold the four slots for four seconds: a fifth
	// request is refused at once. (Two seconds were once not enough on a
	// loaded machine for the five requests to overlap.)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			// A profile that arrives while the asking below holds a
			// slot is refused itself: it asks again, so that four
			// profiles do hold the four slots.
			for {
				resp, err := http.Get("http://" + srv.AdminAddr().String() + "/debug/pprof/heap?seconds=4")
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	// Asked again and again while the profiles run (until the last one
	// ends, not for a fixed time: on a loaded machine they may start
	// late), a request finds the four slots taken.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	refused := false
asking:
	for !refused {
		select {
		case <-done:
			break asking
		default:
		}
		code, _ := adminGet(t, srv.Server, "/zk/cmds/ruok")
		refused = code == http.StatusServiceUnavailable
	}
	wg.Wait()
	if !refused {
		t.Error("a fifth concurrent request was served")
	}
	if code, _ := adminGet(t, srv.Server, "/zk/cmds/ruok"); code != http.StatusOK {
		t.Errorf("after the profiles: %d", code)
	}
}

// An AdminServer address that cannot be bound is logged; the server runs
// without it.
func TestAdminPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var logs syncBuffer
	srv := zktest.Start(t, withAdmin(func(o *server.Options) {
		o.AdminAddr = ln.Addr().String()
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	if a := srv.AdminAddr(); a != nil {
		t.Fatalf("AdminAddr %v", a)
	}
	if got := srv.FourLetterWord("ruok"); got != "imok" {
		t.Fatalf("server not running: %q", got)
	}
	if l := logs.String(); !strings.Contains(l, "AdminServer not started") || !strings.Contains(l, ln.Addr().String()) || !strings.Contains(l, "admin.serverPort") {
		t.Errorf("log does not say what happened:\n%s", l)
	}
}

type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// On an ensemble: leader, voting_view and observers describe it; a member
// without a quorum answers the commands that need a running server with
// ZooKeeper's error, the others as usual.
func TestAdminEnsemble(t *testing.T) {
	c := startCluster(t, 3, 1, func(o *server.Options) { o.AdminAddr = "127.0.0.1:0" })
	lead := c.leader()
	follower := (lead + 1) % 2
	for _, i := range []int{lead, follower} {
		m := adminJSON(t, c.members[i], "leader")
		if m["error"] != nil || m["is_leader"] != (i == lead) || num(t, "leader_id", m["leader_id"]) != int64(lead+1) || m["leader_ip"] != "127.0.0.1" {
			t.Errorf("member %d: leader %v", i+1, m)
		}
	}
	m := adminJSON(t, c.members[lead], "voting_view")
	cfg := obj(t, "current_config", m["current_config"])
	if len(cfg) != 2 {
		t.Fatalf("voting_view %v", m)
	}
	for id := 1; id <= 2; id++ {
		sv := obj(t, "server", cfg[strconv.Itoa(id)])
		wantKeys(t, "voting_view server", sv, false, "server_addresses", "election_addresses", "client_address", "learner_type")
		if sv["learner_type"] != "participant" || fmt.Sprint(sv["server_addresses"]) != "["+c.peers[id-1].Addr+"]" {
			t.Errorf("voting_view %d: %v", id, sv)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		m = adminJSON(t, c.members[lead], "observers")
		if num(t, "synced_observers", m["synced_observers"]) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("observers %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
	o := obj(t, "observer", list(t, "observers", m["observers"])[0])
	if num(t, "sid", o["sid"]) != 3 || o["remote_socket_address"] != c.peers[2].Addr {
		t.Errorf("observer %v", o)
	}
	if m = adminJSON(t, c.members[lead], "mntr"); m["server_state"] != "leader" || num(t, "synced_observers", m["synced_observers"]) != 1 {
		t.Errorf("leader's monitor %v", m)
	}

	// The leader stops: the other voter has no quorum.
	c.members[lead].Close()
	c.members[lead] = nil
	deadline = time.Now().Add(30 * time.Second)
	for c.members[follower].FourLetterWord("srvr") != "This ZooKeeper instance is not currently serving requests\n" {
		if time.Now().After(deadline) {
			t.Fatal("the follower still serves")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, name := range []string{"srvr", "ruok", "cons", "leader"} {
		m := adminJSON(t, c.members[follower], name)
		if m["command"] != name || m["error"] != "This ZooKeeper instance is not currently serving requests" || len(m) != 2 {
			t.Errorf("%s without a quorum: %v", name, m)
		}
	}
	// Commands that need no running server answer.
	if m := adminJSON(t, c.members[follower], "mntr"); m["error"] != nil || m["server_state"] != "follower" {
		t.Errorf("monitor without a quorum: %v", m)
	}
	if m := adminJSON(t, c.members[follower], "gtmk"); m["error"] != nil {
		t.Errorf("get_trace_mask without a quorum: %v", m)
	}
}

func TestAdminBadCommandURL(t *testing.T) {
	_, err := server.New(server.Options{Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminCommandURL: "/c/{name}"})
	if err == nil || !strings.Contains(err.Error(), "command URL") {
		t.Fatalf("New: %v", err)
	}
}
