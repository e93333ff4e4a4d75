package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zktest"
)

// withMetrics serves metrics on a free port of the loopback interface.
func withMetrics() zktest.Option {
	return zktest.WithOptions(func(o *server.Options) { o.MetricsAddr = "127.0.0.1:0" })
}

// scrape fetches and parses /metrics.
func scrape(t *testing.T, srv *server.Server) map[string]*dto.MetricFamily {
	t.Helper()
	a := srv.MetricsAddr()
	if a == nil {
		t.Fatal("no metrics endpoint")
	}
	resp, err := http.Get("http://" + a.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want Prometheus text format", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value returns the value of the metric of family name whose labels
// include want (a counter's or gauge's value, a summary's or histogram's
// sample count); ok is false if there is none.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	v, ok := value(fams, name, labels...)
	if !ok {
		t.Fatalf("%s%v: not in the scrape", name, labels)
	}
	return v
}

// checkTable checks a scrape against the metrics table: every metric
// exported where the server is (standalone, member, leader) is there with
// its type, and no metric marked not exported is.
func checkTable(t *testing.T, fams map[string]*dto.MetricFamily, clustered, leader bool) {
	t.Helper()
	for _, m := range server.MetricSpecs() {
		f := fams[m.Name]
		want := m.Exported && (!m.EnsembleOnly || clustered) && (!m.LeaderOnly || leader)
		switch {
		case want && f == nil:
			// A labelled histogram shows once an operation was answered.
			t.Errorf("%s: exported, missing from the scrape", m.Name)
		case !want && f != nil:
			t.Errorf("%s: not expected here (exported %v), but in the scrape", m.Name, m.Exported)
		case f != nil && f.GetType() != m.Type:
			t.Errorf("%s: type %v, want %v", m.Name, f.GetType(), m.Type)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	srv := zktest.Start(t, withMetrics(), zktest.WithOptions(func(o *server.Options) {
		o.DataDir = t.TempDir()
		o.SnapCount = 10
	}))
	c := dial(t, srv.Addr())
	// Every labelled series needs one answered operation.
	if code := call(t, c, proto.OpExists, &proto.ExistsRequest{Path: "/"}, &proto.ExistsResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
	before := scrape(t, srv.Server)
	checkTable(t, before, false, false)
	for _, fam := range []string{"go_goroutines", "process_open_fds"} {
		if before[fam] == nil {
			t.Errorf("%s: the Go runtime's metrics are missing", fam)
		}
	}

	const creates, reads = 12, 7
	for i := range creates {
		req := &proto.CreateRequest{Path: fmt.Sprintf("/m%d", i), Data: []byte("data"), ACL: openACL}
		if code := call(t, c, proto.OpCreate, req, &proto.CreateResponse{}); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	for range reads {
		if code := call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: "/m0"}, &proto.GetDataResponse{}); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	after := scrape(t, srv.Server)
	delta := func(name string, labels ...string) float64 {
		b, _ := value(before, name, labels...)
		return mustValue(t, after, name, labels...) - b
	}
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"znode_count", nil, creates},
		{"packets_received", nil, creates + reads},
		{"zkgo_request_duration_seconds", []string{"op", "create"}, creates},
		{"zkgo_request_duration_seconds", []string{"op", "getData"}, reads},
		{"readlatency", nil, reads},
		{"updatelatency", nil, creates},
	} {
		if got := delta(tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v went up by %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	for _, name := range []string{"bytes_received_count", "response_bytes", "fsynctime", "sync_processor_batch_size",
		"zkgo_wal_fsync_duration_seconds", "zkgo_wal_fsync_entries", "propagation_latency"} {
		if got := delta(name); got <= 0 {
			t.Errorf("%s did not go up (%v)", name, got)
		}
	}
	if v := mustValue(t, after, "last_client_response_size"); v <= 0 {
		t.Errorf("last_client_response_size %v", v)
	}
	if v := mustValue(t, after, "num_alive_connections"); v != 1 {
		t.Errorf("num_alive_connections %v, want 1", v)
	}
	if v := mustValue(t, after, "zkgo_raft_applied_index"); v < creates {
		t.Errorf("zkgo_raft_applied_index %v", v)
	}
	// A snapshot every 10 entries: one is written in the background.
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams := scrape(t, srv.Server)
		if mustValue(t, fams, "snapshottime") > 0 && mustValue(t, fams, "zkgo_snapshot_size_bytes") > 0 &&
			mustValue(t, fams, "zkgo_snapshot_duration_seconds") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no snapshot recorded after 22 writes with snapCount 10")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mntr and /metrics report the gauges they share from the same numbers.
func TestMetricsAgreeWithMntr(t *testing.T) {
	srv := zktest.Start(t, withMetrics())
	c := dial(t, srv.Addr())
	for i := range 5 {
		req := &proto.CreateRequest{Path: fmt.Sprintf("/e%d", i), ACL: openACL, Flags: proto.ModeEphemeral}
		if code := call(t, c, proto.OpCreate, req, &proto.CreateResponse{}); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	if code := call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: "/e0", Watch: true}, &proto.GetDataResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
	// The client is idle from here: the numbers stand still, except the
	// clock and the process's file descriptors (the scrape's own socket).
	fams := scrape(t, srv.Server)
	mntr := map[string]string{}
	for _, line := range strings.Split(srv.FourLetterWord("mntr"), "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok {
			mntr[k] = v
		}
	}
	shared := 0
	for _, m := range server.MetricSpecs() {
		if !m.Exported || m.Type != dto.MetricType_GAUGE || m.Name == "uptime" || m.Name == "open_file_descriptor_count" {
			continue
		}
		text, ok := mntr["zk_"+m.Name]
		if !ok {
			continue
		}
		shared++
		want, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Errorf("mntr zk_%s=%q", m.Name, text)
			continue
		}
		if got, ok := value(fams, m.Name); !ok || got != want {
			t.Errorf("%s: /metrics %v (present %v), mntr %v", m.Name, got, ok, want)
		}
	}
	for _, k := range []string{"zkgo_raft_term", "zkgo_raft_applied"} {
		name := map[string]string{"zkgo_raft_term": "zkgo_raft_term", "zkgo_raft_applied": "zkgo_raft_applied_index"}[k]
		if got := mustValue(t, fams, name); fmt.Sprint(got) != mntr[k] {
			t.Errorf("%s %v, mntr %s %s", name, got, k, mntr[k])
		}
	}
	if shared < 15 {
		t.Errorf("only %d gauges shared with mntr", shared)
	}
	if mustValue(t, fams, "ephemerals_count") != 5 || mustValue(t, fams, "watch_count") != 1 || mustValue(t, fams, "global_sessions") != 1 {
		t.Errorf("ephemerals %v watches %v sessions %v", mustValue(t, fams, "ephemerals_count"),
			mustValue(t, fams, "watch_count"), mustValue(t, fams, "global_sessions"))
	}
}

// Scrapes and mntr while clients write, read and watch: nothing deadlocks
// (run with -race).
func TestMetricsScrapeUnderLoad(t *testing.T) {
	srv := zktest.Start(t, withMetrics())
	const clients, ops = 4, 150
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := dial(t, srv.Addr())
		wg.Go(func() {
			p := fmt.Sprintf("/load%d", i)
			if _, err := c.Call(proto.OpCreate, &proto.CreateRequest{Path: p, ACL: openACL}, &proto.CreateResponse{}); err != nil {
				errs <- err
				return
			}
			for j := range ops {
				var err error
				if j%2 == 0 {
					_, err = c.Call(proto.OpSetData, &proto.SetDataRequest{Path: p, Data: []byte{byte(j)}, Version: -1}, &proto.SetDataResponse{})
				} else {
					_, err = c.Call(proto.OpGetData, &proto.GetDataRequest{Path: p, Watch: true}, &proto.GetDataResponse{})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	var scrapes int
	go func() {
		defer close(done)
		for {
			select {
			case <-errs:
				return
			default:
			}
			resp, err := http.Get("http://" + srv.MetricsAddr().String() + "/metrics")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			srv.FourLetterWord("mntr")
			scrapes++
			if scrapes >= 20 {
				return
			}
		}
	}()
	wg.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fams := scrape(t, srv.Server)
	if got := mustValue(t, fams, "zkgo_request_duration_seconds", "op", "setData"); got != clients*ops/2 {
		t.Errorf("setData answered %v, want %v", got, clients*ops/2)
	}
	if mustValue(t, fams, "zkgo_watch_notifications_total") == 0 || mustValue(t, fams, "watch_bytes") == 0 {
		t.Error("no watch notification counted")
	}
}

// Without metricsProvider nothing listens; with it, the endpoint serves
// GET only and closes with the server.
func TestMetricsEndpointLifecycle(t *testing.T) {
	if a := zktest.Start(t).MetricsAddr(); a != nil {
		t.Fatalf("metrics endpoint %v without MetricsAddr", a)
	}
	srv, err := zktest.New(withMetrics())
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + srv.MetricsAddr().String()
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/metrics", http.StatusOK},
		{"HEAD", "/metrics", http.StatusOK},
		{"POST", "/metrics", http.StatusMethodNotAllowed},
		{"TRACE", "/metrics", http.StatusMethodNotAllowed},
		{"GET", "/", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tt.method, url+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
		}
	}
	// An oversized header is refused.
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 64<<10))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("64 KiB header: %s", resp.Status)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	srv.Close()
	if resp, err := http.Get(url + "/metrics"); err == nil {
		resp.Body.Close()
		t.Fatal("metrics endpoint still serves after Close")
	}
}

// A busy metrics port fails Start, as ZooKeeper fails to start when its
// provider cannot bind.
func TestMetricsPortInUse(t *testing.T) {
	first := zktest.Start(t, withMetrics())
	_, err := zktest.New(zktest.WithOptions(func(o *server.Options) { o.MetricsAddr = first.MetricsAddr().String() }))
	if err == nil || !strings.Contains(err.Error(), "metrics endpoint") {
		t.Fatalf("second server on the same metrics port: %v", err)
	}
}

// The leader exports ZooKeeper's leader gauges, every member the quorum's.
func TestMetricsEnsemble(t *testing.T) {
	c := zktest.StartCluster(t, 3, withMetrics())
	leader := c.Leader()
	deadline := time.Now().Add(30 * time.Second)
	for i := range 3 { // a request answered by each: the per-op histogram shows
		for {
			// A member refuses sessions until it knows the leader.
			cl, err := rawzk.Dial(c.Addr(i), rawzk.Options{Timeout: 2 * time.Second})
			if err == nil {
				_, err = cl.Call(proto.OpExists, &proto.ExistsRequest{Path: "/"}, &proto.ExistsResponse{})
				cl.Close()
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for {
		fams := scrape(t, c.Member(leader).Server)
		if v, _ := value(fams, "synced_followers"); v == 2 {
			checkTable(t, fams, true, true)
			if got := mustValue(t, fams, "learners"); got != 2 {
				t.Errorf("learners %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader never reported 2 synced followers")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 3 {
		fams := scrape(t, c.Member(i).Server)
		if i != leader {
			checkTable(t, fams, true, false)
		}
		if got := mustValue(t, fams, "quorum_size"); got != 3 {
			t.Errorf("member %d: quorum_size %v", i, got)
		}
		if got := mustValue(t, fams, "election_time"); got < 1 {
			t.Errorf("member %d: no election recorded", i)
		}
		if got := mustValue(t, fams, "zkgo_raft_leader_changes_total"); got < 1 {
			t.Errorf("member %d: no leader change recorded", i)
		}
	}
}

// The watch fan-out summaries count, per event type, the watchers each
// event fired; events that fire none are not counted (as ZooKeeper).
func TestMetricsWatchFanOut(t *testing.T) {
	srv := zktest.Start(t, withMetrics())
	w := dial(t, srv.Addr())
	c := dial(t, srv.Addr())
	c2 := dial(t, srv.Addr())
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/f", Data: []byte("a"), ACL: openACL}, &proto.CreateResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
	// Two data watches on /f, one child watch on /.
	for _, cl := range []*rawzk.Conn{w, c2} {
		if code := call(t, cl, proto.OpGetData, &proto.GetDataRequest{Path: "/f", Watch: true}, &proto.GetDataResponse{}); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	if code := call(t, w, proto.OpGetChildren, &proto.GetChildrenRequest{Path: "/", Watch: true}, &proto.GetChildrenResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
	if code := call(t, c, proto.OpSetData, &proto.SetDataRequest{Path: "/f", Data: []byte("b"), Version: -1}, &proto.SetDataResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
	// Fires the child watch; the data watches fired already (one-shot).
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/g", ACL: openACL}, &proto.CreateResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
	// Fires nothing.
	if code := call(t, c, proto.OpSetData, &proto.SetDataRequest{Path: "/f", Data: []byte("c"), Version: -1}, &proto.SetDataResponse{}); code != proto.ErrOk {
		t.Fatal(code)
	}
	fams := scrape(t, srv.Server)
	for _, tt := range []struct {
		name       string
		count, sum float64
	}{
		{"node_changed_watch_count", 1, 2},
		{"node_children_watch_count", 1, 1},
		{"node_created_watch_count", 0, 0},
		{"node_deleted_watch_count", 0, 0},
	} {
		f := fams[tt.name]
		if f == nil || len(f.Metric) != 1 || f.Metric[0].Summary == nil {
			t.Fatalf("%s: not a summary in the scrape", tt.name)
		}
		s := f.Metric[0].Summary
		if float64(s.GetSampleCount()) != tt.count || s.GetSampleSum() != tt.sum {
			t.Errorf("%s: %d events, %v watchers; want %v, %v", tt.name, s.GetSampleCount(), s.GetSampleSum(), tt.count, tt.sum)
		}
	}
}

// A session resumed on another member of an ensemble is revalidated
// there through the log: that member's revalidate_count goes up.
func TestMetricsRevalidate(t *testing.T) {
	c := zktest.StartCluster(t, 3, withMetrics())
	c.Leader()
	a := dialRetry(t, c.Addr(0), rawzk.Options{Timeout: time.Minute})
	before, _ := value(scrape(t, c.Member(1).Server), "revalidate_count")
	dialRetry(t, c.Addr(1), rawzk.Options{Timeout: time.Minute, SessionID: a.Session.SessionID, Passwd: a.Session.Passwd})
	// (A move lost in an election and tried again counts twice.)
	if got := mustValue(t, scrape(t, c.Member(1).Server), "revalidate_count") - before; got < 1 {
		t.Errorf("revalidate_count went up by %v on the member the session moved to, want 1", got)
	}
}

// A server restarted on its data directory reports how it loaded its
// state: one dbinittime and snapshot load, and the entries it replayed
// after the snapshot.
func TestMetricsStartupLoad(t *testing.T) {
	dir := t.TempDir()
	start := func() *server.Server {
		s, err := server.New(server.Options{
			Addr: "127.0.0.1:0", TickTime: 100 * time.Millisecond, DataDir: dir, SnapCount: 20, NoSync: true,
			MetricsAddr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	c := dial(t, s.Addr().String())
	const creates = 30 // a snapshot after 20 or more entries, then some (not 20 more)
	for i := range creates {
		if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: fmt.Sprintf("/s%d", i), ACL: openACL}, &proto.CreateResponse{}); code != proto.ErrOk {
			t.Fatal(code)
		}
	}
	var snapIndex, applied float64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		fams := scrape(t, s)
		snapIndex, applied = mustValue(t, fams, "zkgo_raft_snapshot_index"), mustValue(t, fams, "zkgo_raft_applied_index")
		if snapIndex > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no snapshot after 30 writes with snapCount 20")
		}
	}
	c.Close()
	s.Close()
	s = start()
	defer s.Close()
	fams := scrape(t, s)
	for _, name := range []string{"dbinittime", "startup_snap_load_time", "startup_txns_load_time", "startup_txns_loaded"} {
		if got := mustValue(t, fams, name); got != 1 {
			t.Errorf("%s: %v observations after one start, want 1", name, got)
		}
	}
	// The log after the newest snapshot was replayed (a snapshot may
	// have been written after the scrape above: at most applied-snap).
	loaded := fams["startup_txns_loaded"].Metric[0].Summary.GetSampleSum()
	if loaded < 1 || loaded > applied-snapIndex+1 {
		t.Errorf("replayed %v entries, but only %v followed the snapshot at %v", loaded, applied-snapIndex, snapIndex)
	}
}
