package main

// The etcd column: etcd 3.4 (Debian's etcd-server) with its own recipes,
// the concurrency package's Mutex and Election, beside both ZooKeeper
// servers for the lock handoff and the leader handover. It is what users
// would pick instead of ZooKeeper for those two jobs. etcd runs standalone
// beside the standalone servers and as a 3-member cluster beside the
// ensembles, all members on loopback with their own data directory and
// etcd's default durability (the WAL is fsynced before an entry commits).
//
// The loads mirror tools/bench's lock and latch: every contender (or
// participant) has its own client connection and session (a lease with
// the bench's 30 s session timeout as TTL), contender i on member i mod n;
// the same warm-up and measured window, latencies in the same kind of
// HDR histogram (1 µs to 2 min, 3 significant digits).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/zkgo/zkgo/tools/bench"
)

// etcdSessionTTL is each etcd session's lease TTL in seconds, the bench's
// default ZooKeeper session timeout.
const etcdSessionTTL = 30

// etcdFlags are the flags given to every etcd member besides its name,
// data directory, URLs and initial cluster: logs at warn through zap,
// everything else (snapshot count, heartbeat, election timeout, backend
// quota, no auto-compaction) etcd's default.
var etcdFlags = []string{"--logger", "zap", "--log-level", "warn", "--log-outputs", "stderr"}

// findEtcd returns the etcd binary on PATH and its version ("" when there
// is none).
func findEtcd() (bin, version string) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return "", ""
	}
	out, _ := exec.Command(bin, "--version").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "etcd Version: "); ok {
			return bin, strings.TrimSpace(v)
		}
	}
	return bin, "unknown"
}

// etcdSpec reports whether the workload of sp has an etcd counterpart:
// lock with zkgo's recipe (the etcd figure stands beside the go-zookeeper
// and Curator rows too) and the latch handover.
func etcdSpec(sp spec) bool {
	switch sp.cfg.Workload {
	case "lock":
		return sp.cfg.Client == "" || sp.cfg.Client == "zk"
	case "latch":
		return true
	}
	return false
}

// etcdCluster is a standalone etcd (one member) or a cluster.
type etcdCluster struct {
	dir     string
	members // port: the client port
	version string
	// settle, if positive, is a pause between the rejoin and the next
	// Resign in the handover (-etcd-settle, a diagnostic: the waiting
	// Campaign's watch starts at a past revision, and etcd catches such
	// watches up every 100 ms).
	settle time.Duration
}

// newEtcdCluster prepares n etcd members in a new directory under root.
func newEtcdCluster(bin, root string, n int) (*etcdCluster, error) {
	dir, err := os.MkdirTemp(root, "etcd-")
	if err != nil {
		return nil, err
	}
	ports, err := distinctPorts(2 * n)
	if err != nil {
		return nil, err
	}
	var initial []string
	for i := 0; i < n; i++ {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	var token [4]byte
	rand.Read(token[:])
	c := &etcdCluster{dir: dir}
	for i := 0; i < n; i++ {
		mdir := filepath.Join(dir, strconv.Itoa(i+1))
		// etcd wants its data directory private.
		if err := os.MkdirAll(filepath.Join(mdir, "data"), 0o700); err != nil {
			return nil, err
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		argv := append([]string{bin,
			"--name", fmt.Sprintf("m%d", i+1),
			"--data-dir", filepath.Join(mdir, "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "zkgo-compare-" + hex.EncodeToString(token[:]),
		}, etcdFlags...)
		name := "etcd"
		if n > 1 {
			name = fmt.Sprintf("etcd member %d", i+1)
		}
		c.members = append(c.members, &server{name: name, dir: mdir, port: ports[2*i], argv: argv})
	}
	return c, nil
}

func (c *etcdCluster) endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = "http://" + m.addr()
	}
	return out
}

func (c *etcdCluster) pids() []int {
	p := make([]int, len(c.members))
	for i, m := range c.members {
		if m.cmd != nil {
			p[i] = m.pid()
		}
	}
	return p
}

func etcdClient(endpoint string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
}

// start launches the members and waits until every one reports the same
// leader and answers a (linearizable) read. It returns the time from
// launching until then and the leader's index (0-based).
func (c *etcdCluster) start(ctx context.Context, timeout time.Duration) (time.Duration, int, error) {
	t0 := time.Now()
	for _, m := range c.members {
		if err := m.launch(); err != nil {
			c.kill()
			return 0, -1, err
		}
	}
	var clients []*clientv3.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for _, ep := range c.endpoints() {
		cl, err := etcdClient(ep)
		if err != nil {
			c.kill()
			return 0, -1, err
		}
		clients = append(clients, cl)
	}
	deadline := t0.Add(timeout)
	var last error
	for {
		for _, m := range c.members {
			if !m.alive() {
				c.kill()
				return 0, -1, fmt.Errorf("%s exited during startup:\n%s", m.name, m.logTail())
			}
		}
		lead, err := c.leader(ctx, clients)
		if err == nil {
			for _, cl := range clients {
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				_, err = cl.Get(rctx, "/zkgo-compare-ready")
				cancel()
				if err != nil {
					break
				}
			}
		}
		if err == nil {
			return time.Since(t0), lead, nil
		}
		last = err
		if ctx.Err() != nil {
			c.kill()
			return 0, -1, ctx.Err()
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, m := range c.members {
				fmt.Fprintf(&b, "=== %s\n%s", m.name, m.logTail())
			}
			c.kill()
			return 0, -1, fmt.Errorf("etcd did not serve within %v (%v):\n%s", timeout, last, b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leader returns the index of the member every member names as leader
// (Maintenance.Status), and records the server's version.
func (c *etcdCluster) leader(ctx context.Context, clients []*clientv3.Client) (int, error) {
	lead := uint64(0)
	idx := -1
	for i, cl := range clients {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cl.Status(sctx, c.endpoints()[i])
		cancel()
		if err != nil {
			return -1, err
		}
		if st.Leader == 0 || (lead != 0 && st.Leader != lead) {
			return -1, errors.New("no agreed leader yet")
		}
		lead = st.Leader
		if st.Header.MemberId == st.Leader {
			idx = i
		}
		c.version = st.Version
	}
	if idx < 0 {
		return -1, errors.New("the leader is not a member")
	}
	return idx, nil
}

// currentLeader opens clients for one look at the leader.
func (c *etcdCluster) currentLeader(ctx context.Context) (int, error) {
	var clients []*clientv3.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for _, ep := range c.endpoints() {
		cl, err := etcdClient(ep)
		if err != nil {
			return -1, err
		}
		clients = append(clients, cl)
	}
	return c.leader(ctx, clients)
}

// warmUp runs the lock with 16 contenders and the handover for 2 s each.
func (c *etcdCluster) warmUp(ctx context.Context) error {
	for _, cfg := range []bench.Config{
		{Workload: "lock", Contenders: 16, Duration: 2 * time.Second},
		{Workload: "latch", Duration: 2 * time.Second},
	} {
		if _, err := c.run(ctx, cfg); err != nil {
			return fmt.Errorf("warm-up of etcd, %s: %w", cfg.Workload, err)
		}
	}
	return nil
}

// window is the measured window of one etcd run: what completes during
// the warm-up or after the end is dropped, as in tools/bench.
type window struct {
	mu         sync.Mutex
	h          *hdrhistogram.Histogram
	measuring  bool
	start, end time.Time
}

func (w *window) record(d time.Duration) {
	v := min(max(int64(d), int64(time.Microsecond)), int64(2*time.Minute))
	w.mu.Lock()
	if w.measuring {
		w.h.RecordValue(v)
	}
	w.mu.Unlock()
}

func (w *window) begin() {
	w.mu.Lock()
	w.measuring, w.start = true, time.Now()
	w.mu.Unlock()
}

func (w *window) stop() {
	w.mu.Lock()
	if w.measuring {
		w.end = time.Now()
	} else {
		w.start, w.end = time.Now(), time.Now()
	}
	w.measuring = false
	w.mu.Unlock()
}

// etcdConn is one contender's client connection and session.
type etcdConn struct {
	cli  *clientv3.Client
	sess *concurrency.Session
}

func (c *etcdCluster) connect(n int) ([]etcdConn, error) {
	eps := c.endpoints()
	var out []etcdConn
	for i := 0; i < n; i++ {
		cli, err := etcdClient(eps[i%len(eps)])
		if err == nil {
			var sess *concurrency.Session
			sess, err = concurrency.NewSession(cli, concurrency.WithTTL(etcdSessionTTL))
			if err == nil {
				out = append(out, etcdConn{cli, sess})
				continue
			}
			cli.Close()
		}
		closeEtcd(out)
		return nil, err
	}
	return out, nil
}

func closeEtcd(cs []etcdConn) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.sess.Close() // revokes the lease
			c.cli.Close()
		}()
	}
	wg.Wait()
}

// run runs cfg's lock or latch load (Contenders, Duration, Warmup) on
// etcd's concurrency package and returns it as a tools/bench result.
func (c *etcdCluster) run(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	cfg.Defaults()
	n := cfg.Contenders
	if cfg.Workload == "latch" {
		n = 2
	}
	conns, err := c.connect(n)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: connect: %w", cfg.Workload, err)
	}
	var suffix [4]byte
	rand.Read(suffix[:])
	prefix := "/zkgo-bench/" + cfg.Workload + "-" + hex.EncodeToString(suffix[:]) + "/"
	defer func() {
		closeEtcd(conns)
		if cl, err := etcdClient(c.endpoints()[0]); err == nil {
			dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			cl.Delete(dctx, prefix, clientv3.WithPrefix())
			cancel()
			cl.Close()
		}
	}()
	w := &window{h: hdrhistogram.New(int64(time.Microsecond), int64(2*time.Minute), 3)}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		if cfg.Workload == "latch" {
			done <- etcdHandover(runCtx, conns, prefix, w, c.settle)
		} else {
			done <- etcdLock(runCtx, conns, prefix, w)
		}
	}()
	finished, runErr := bench.Phases(ctx, done, cfg.Warmup, cfg.Duration, w.begin, w.stop)
	cancel()
	if !finished {
		select {
		case runErr = <-done:
		case <-time.After(30 * time.Second):
			runErr = errors.New("the workload did not stop within 30 s of the end")
		}
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return nil, fmt.Errorf("etcd %s: %w", cfg.Workload, runErr)
	}
	res := &bench.Result{Workload: cfg.Workload, Server: strings.Join(c.endpoints(), ","), Client: "etcd-concurrency",
		WarmupSec: cfg.Warmup.Seconds(), DurationSec: w.end.Sub(w.start).Seconds(), Ops: w.h.TotalCount()}
	for _, wi := range bench.Workloads() {
		if wi.Name == cfg.Workload {
			res.Unit, res.LatencyOf = wi.Unit, wi.LatencyOf
		}
	}
	if cfg.Workload == "latch" {
		res.Params = map[string]any{"participants": 2}
		res.LatencyOf = "Resign → other's Campaign returns"
		if c.settle > 0 {
			res.Params["settle"] = c.settle.String()
		}
	} else {
		res.Params = map[string]any{"contenders": cfg.Contenders, "hold": cfg.Hold.String()}
	}
	if res.DurationSec > 0 {
		res.OpsPerSec = float64(res.Ops) / res.DurationSec
	}
	if res.Ops > 0 {
		msf := func(v int64) float64 { return float64(v) / 1e6 }
		res.Latency = bench.Latency{P50: msf(w.h.ValueAtQuantile(50)), P90: msf(w.h.ValueAtQuantile(90)),
			P99: msf(w.h.ValueAtQuantile(99)), P999: msf(w.h.ValueAtQuantile(99.9)), Max: msf(w.h.Max()), Mean: w.h.Mean() / 1e6}
	}
	return res, nil
}

// etcdLock: every contender loops Lock, Unlock on one concurrency.Mutex
// prefix; the latency is the wait for the lock (Lock's call to its
// return), as in tools/bench's lock.
func etcdLock(ctx context.Context, conns []etcdConn, prefix string, w *window) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	for _, c := range conns {
		m := concurrency.NewMutex(c.sess, prefix)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				if err := m.Lock(ctx); err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("Lock: %w", err))
					}
					return
				}
				w.record(time.Since(t0))
				uctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := m.Unlock(uctx)
				cancel()
				if err != nil {
					fail(fmt.Errorf("Unlock: %w", err))
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// etcdHandover: two participants campaign on one concurrency.Election;
// the leader resigns (graceful handover) and the time from the Resign call
// until the other one's Campaign returns is measured; the one that
// resigned then campaigns again (a new Election, as the ZooKeeper load
// starts a new latch) and the next handover waits until it is queued
// behind the new leader, as tools/bench's latch does.
func etcdHandover(ctx context.Context, conns []etcdConn, prefix string, w *window, settle time.Duration) error {
	bg, stopCampaigns := context.WithCancel(context.Background())
	defer stopCampaigns()
	cli := conns[0].cli
	// participants waits until n keys are queued under the prefix.
	participants := func(n int64) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return err
			}
			if r.Count >= n {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("election: %d participants after 30 s, want %d", r.Count, n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	elections := []*concurrency.Election{concurrency.NewElection(conns[0].sess, prefix), concurrency.NewElection(conns[1].sess, prefix)}
	won := []chan error{make(chan error, 1), make(chan error, 1)}
	campaign := func(i int, val string) {
		go func() { won[i] <- elections[i].Campaign(bg, val) }()
	}
	campaign(0, "a")
	select {
	case err := <-won[0]:
		if err != nil {
			return err
		}
	case <-time.After(30 * time.Second):
		return errors.New("the first Campaign did not win within 30 s")
	case <-ctx.Done():
		return nil
	}
	campaign(1, "b")
	if err := participants(2); err != nil {
		return err
	}
	lead := 0
	for i := 0; ctx.Err() == nil; i++ {
		other := 1 - lead
		if settle > 0 {
			time.Sleep(settle)
		}
		t0 := time.Now()
		rctx, cancel := context.WithTimeout(bg, 30*time.Second)
		err := elections[lead].Resign(rctx)
		cancel()
		if err != nil {
			return fmt.Errorf("Resign: %w", err)
		}
		select {
		case err := <-won[other]:
			if err != nil {
				return fmt.Errorf("Campaign: %w", err)
			}
		case <-time.After(30 * time.Second):
			return errors.New("no new leader within 30 s of Resign")
		}
		w.record(time.Since(t0))
		elections[lead] = concurrency.NewElection(conns[lead].sess, prefix)
		campaign(lead, strconv.Itoa(i))
		if err := participants(2); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		lead = other
	}
	return nil
}
