package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// The smoke tests run every workload for a fraction of a second against an
// in-process zkgo server (in memory): they check that each workload sets
// up, measures, reports and cleans up after itself, not how fast it is.

func smoke(t *testing.T, addr string, cfg Config) *Result {
	t.Helper()
	cfg.Server = addr
	if cfg.Duration == 0 {
		cfg.Duration = 200 * time.Millisecond
	}
	cfg.Connections = max(cfg.Connections, 2)
	cfg.Workers = max(cfg.Workers, 4)
	var progress bytes.Buffer
	cfg.Progress = &syncWriter{w: &progress}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%s: %v\nprogress:\n%s", cfg.Workload, err, progress.String())
	}
	if res.Ops == 0 {
		t.Fatalf("%s: no operation measured: %+v", cfg.Workload, res)
	}
	if res.Errors != 0 {
		t.Errorf("%s: %d errors", cfg.Workload, res.Errors)
	}
	if res.OpsPerSec <= 0 || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 || res.Latency.Max < res.Latency.P999 {
		t.Errorf("%s: implausible result %+v", cfg.Workload, res)
	}
	var out bytes.Buffer
	res.Print(&out)
	if !strings.Contains(out.String(), "p99.9") {
		t.Errorf("%s: Print output lacks p99.9:\n%s", cfg.Workload, out.String())
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("%s: %v", cfg.Workload, err)
	}
	return res
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestWorkloadsSmoke(t *testing.T) {
	srv := zktest.Start(t)
	cases := []Config{
		{Workload: "get"},
		{Workload: "get", Keys: 100},
		{Workload: "get", Client: "zk"},
		{Workload: "get", Client: "gozk"},
		{Workload: "set"},
		{Workload: "set", Client: "gozk"},
		{Workload: "create"},
		{Workload: "create", Mode: "ephemeral-sequential"},
		{Workload: "delete", Count: 5000},
		{Workload: "children", Children: 100},
		{Workload: "multi"},
		{Workload: "mixed", Ratio: 2},
		{Workload: "watch", Watchers: 20},
		{Workload: "sessions"},
		{Workload: "sessions", Mode: "idle", Sessions: 50},
		{Workload: "lock", Contenders: 4},
		{Workload: "lock", Contenders: 4, Client: "gozk"},
		{Workload: "latch"},
		{Workload: "selector", Participants: 3},
	}
	for _, c := range cases {
		name := c.Workload + "/" + c.Client + c.Mode
		t.Run(name, func(t *testing.T) {
			res := smoke(t, srv.Addr(), c)
			if c.Workload == "mixed" && (res.ByKind["get"].Ops == 0 || res.ByKind["set"].Ops == 0) {
				t.Errorf("mixed: %+v", res.ByKind)
			}
			if c.Workload == "sessions" && c.Mode == "idle" && res.Extra["idle_sessions_opened_per_s"] <= 0 {
				t.Errorf("idle sessions: %+v", res.Extra)
			}
		})
	}
	// Every run deleted what it created.
	c, err := Dial(srv.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var resp proto.GetChildrenResponse
	if err := check(c.Do(proto.OpGetChildren, &proto.GetChildrenRequest{Path: "/zkgo-bench"}, &resp)); err != nil {
		t.Fatal(err)
	}
	if len(resp.Children) != 0 {
		t.Errorf("left behind: %v", resp.Children)
	}
}

// TestEnsembleServers: with a comma-separated list of an ensemble's
// members, the sessions are spread round-robin over them, and the
// workloads run without errors (each load session syncs first, so a
// follower's reads see the keys the setup created through the first one).
func TestEnsembleServers(t *testing.T) {
	cl := zktest.StartCluster(t, 3)
	cl.Leader()
	addrs := strings.Split(cl.ConnectString(), ",")
	conns := func() []int {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out := make([]int, len(addrs))
		for i, a := range addrs {
			r, err := zk.FourLetterWord(ctx, a, "mntr")
			if err != nil {
				t.Errorf("mntr on %s: %v", a, err)
				continue
			}
			for _, l := range strings.Split(r, "\n") {
				if v, ok := strings.CutPrefix(l, "zk_num_alive_connections"); ok {
					fmt.Sscan(strings.TrimSpace(v), &out[i])
				}
			}
		}
		return out
	}
	for _, c := range []Config{
		{Workload: "get", Keys: 100, Connections: 6},
		{Workload: "set", Connections: 6},
		{Workload: "mixed", Connections: 3, Client: "zk"},
		{Workload: "create", Connections: 3},
		{Workload: "watch", Watchers: 6},
		{Workload: "lock", Contenders: 3},
		{Workload: "latch"},
		{Workload: "sessions", Workers: 3},
	} {
		t.Run(c.Workload+"/"+c.Client, func(t *testing.T) {
			var seen []int
			loaded := false
			c.AfterSetup = func() { seen = conns() }
			c.AfterLoad = func() { loaded = true }
			var window []string
			c.MeasureBegin = func() { window = append(window, "begin") }
			c.MeasureEnd = func() { window = append(window, "end") }
			smoke(t, cl.ConnectString(), c)
			if !loaded {
				t.Error("AfterLoad was not called")
			}
			if !slices.Equal(window, []string{"begin", "end"}) {
				t.Errorf("measured window hooks called %v, want [begin end]", window)
			}
			t.Logf("connections per member during the load: %v", seen)
			want := 1 // the latch has two sessions, on the first two members
			switch c.Workload {
			case "sessions":
				return // churn: short-lived sessions, one worker per member
			case "get", "set", "watch":
				want = 2
			}
			for i, n := range seen {
				if n < want && !(c.Workload == "latch" && i == 2) {
					t.Errorf("member %d had %d connections during the load, want at least %d (all: %v)", i+1, n, want, seen)
				}
			}
		})
	}
}

func TestServerList(t *testing.T) {
	c := Config{Server: "a:1, b:2,c:3"}
	var got []string
	for i := 0; i < 4; i++ {
		got = append(got, c.serverFor(i))
	}
	if strings.Join(got, " ") != "a:1 b:2 c:3 a:1" || !c.multiServer() {
		t.Errorf("round-robin over %q: %v", c.Server, got)
	}
	c = Config{Server: "a:1"}
	if c.serverFor(5) != "a:1" || c.multiServer() {
		t.Errorf("one server: %v", c.serverFor(5))
	}
}

// TestOpenLoopRate: with -rate the load follows the schedule, and a server
// that is paused is charged for the whole pause (no coordinated omission).
func TestOpenLoopRate(t *testing.T) {
	srv := zktest.Start(t)
	res := smoke(t, srv.Addr(), Config{Workload: "get", Rate: 2000, Duration: 500 * time.Millisecond, Workers: 8})
	if res.OpsPerSec < 1500 || res.OpsPerSec > 2500 {
		t.Errorf("rate 2000/s: measured %.0f/s", res.OpsPerSec)
	}
}

func TestCoordinatedOmission(t *testing.T) {
	// A fake op that stalls once for 100 ms: in open loop at 1000/s with
	// one worker the ~100 requests due during the stall are charged for
	// it, so p90 is far above the op's own 0 latency.
	e := &env{cfg: &Config{Workers: 1, Rate: 1000}, st: newStats()}
	s := e.st.add("op")
	e.st.begin()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	stalled := false
	start := time.Now()
	e.loop(ctx, nil, func(w *worker) (*series, error) {
		if !stalled && time.Since(start) > 100*time.Millisecond {
			stalled = true
			time.Sleep(100 * time.Millisecond)
		}
		return s, nil
	})
	e.st.stop()
	h := s.total
	if h.TotalCount() < 350 {
		t.Fatalf("only %d ops at 1000/s in 500 ms", h.TotalCount())
	}
	if p90 := time.Duration(h.ValueAtQuantile(90)); p90 < 5*time.Millisecond {
		t.Errorf("p90 %v: the stall was not charged to the requests it delayed", p90)
	}
}

// A worker that slept until its due time measures from its wake-up: the
// lateness of Go's timer (up to ~1 ms in an idle process) is the load
// generator's, not the server's. The op itself takes no time, so every
// latency is the few microseconds between the wake-up and the record;
// measured from the due time, p90 was ~1 ms on an idle 2-core VM.
func TestOpenLoopTimerLatenessNotCharged(t *testing.T) {
	e := &env{cfg: &Config{Workers: 1, Rate: 200}, st: newStats()}
	s := e.st.add("op")
	e.st.begin()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	e.loop(ctx, nil, func(w *worker) (*series, error) { return s, nil })
	e.st.stop()
	h := s.total
	if h.TotalCount() < 40 {
		t.Fatalf("only %d ops at 200/s in 400 ms", h.TotalCount())
	}
	if p90 := time.Duration(h.ValueAtQuantile(90)); p90 > 200*time.Microsecond {
		t.Errorf("p90 %v for an op that takes no time: the timer's lateness was charged", p90)
	}
}

func TestConnPipelining(t *testing.T) {
	srv := zktest.Start(t)
	c, err := Dial(srv.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := check(c.Do(proto.OpCreate, &proto.CreateRequest{Path: "/p", ACL: openACL}, nil)); err != nil {
		t.Fatal(err)
	}
	// 32 goroutines, each writing then reading its own znode on one
	// session: every reply goes to its request.
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("/p/%d", g)
			if err := check(c.Do(proto.OpCreate, &proto.CreateRequest{Path: p, ACL: openACL}, nil)); err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < 200; i++ {
				want := fmt.Sprintf("%d-%d", g, i)
				if err := check(c.Do(proto.OpSetData, &proto.SetDataRequest{Path: p, Data: []byte(want), Version: -1}, nil)); err != nil {
					t.Error(err)
					return
				}
				var r proto.GetDataResponse
				if err := check(c.Do(proto.OpGetData, &proto.GetDataRequest{Path: p}, &r)); err != nil {
					t.Error(err)
					return
				}
				if string(r.Data) != want {
					t.Errorf("%s: got %q, want %q", p, r.Data, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	if code, err := c.Do(proto.OpGetData, &proto.GetDataRequest{Path: "/nope"}, nil); err != nil || code != proto.ErrNoNode {
		t.Errorf("getData /nope: %v %v", code, err)
	}
	if err := deleteTree(c, "/p", 1); err != nil {
		t.Fatal(err)
	}
	if code, _ := c.Do(proto.OpExists, &proto.ExistsRequest{Path: "/p"}, nil); code != proto.ErrNoNode {
		t.Errorf("/p not deleted: %v", code)
	}
}

func TestConnFailsPendingOnClose(t *testing.T) {
	srv := zktest.Start(t)
	c, err := Dial(srv.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.abort()
	if _, err := c.Do(proto.OpGetData, &proto.GetDataRequest{Path: "/"}, nil); err == nil {
		t.Fatal("request on a closed Conn succeeded")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Workload: "nope"},
		{Workload: "latch", Client: "gozk"},
		{Workload: "get", Client: "curator"},
		{Workload: "lock", Client: "nope"},
		{Workload: "lock", Rate: 10},
		{Workload: "get", Mode: "idle"},
		{Workload: "create", Mode: "ephemeral"},
		{Workload: "get", Root: "relative"},
		{Workload: "get", Server: "127.0.0.1:2181,"},
		{Workload: "get", Server: "127.0.0.1"},
	} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
