package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// loadWriters is a steady write load for the ensemble tests: sessions
// connected to servers create parent/<writer>-<seq> one after the other,
// retrying a create whose connection was lost (finding its node means it
// took effect). Any other error is a failure.
type loadWriters struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex // guards acked, failures
	acked    []string
	failures []error
}

func startLoad(ctx context.Context, servers []string, parent string, writers int) *loadWriters {
	l := &loadWriters{stop: make(chan struct{})}
	fail := func(err error) {
		l.mu.Lock()
		l.failures = append(l.failures, err)
		l.mu.Unlock()
	}
	for g := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c, err := zk.Connect(ctx, servers, zk.WithSessionTimeout(10*time.Second))
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			for seq := 0; ; seq++ {
				select {
				case <-l.stop:
					return
				default:
				}
				p := fmt.Sprintf("%s/%d-%06d", parent, g, seq)
				if err := retryLoss(ctx, func() error {
					_, err := c.Create(ctx, p, []byte("v"), zk.OpenACLUnsafe, zk.ModePersistent)
					if errors.Is(err, zk.ErrNodeExists) {
						return nil
					}
					return err
				}); err != nil {
					fail(fmt.Errorf("create %s: %w", p, err))
					return
				}
				l.mu.Lock()
				l.acked = append(l.acked, p)
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// count is the number of acknowledged creates so far.
func (l *loadWriters) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// finish stops the writers and returns what they acknowledged, failing
// the test if a writer failed.
func (l *loadWriters) finish(t *testing.T) []string {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if len(l.failures) > 0 {
		t.Fatalf("writers failed: %v", l.failures)
	}
	return l.acked
}

// checkHeld fails the test unless the member at addr holds every path in
// acked under parent (after a sync: they are another session's writes).
func checkHeld(ctx context.Context, t *testing.T, addr, parent string, acked []string) {
	t.Helper()
	c, err := zk.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := retryLoss(ctx, func() error { _, err := c.Sync(ctx, parent); return err }); err != nil {
		t.Fatal(err)
	}
	kids, _, err := c.Children(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	have := make(map[string]bool, len(kids))
	for _, k := range kids {
		have[parent+"/"+k] = true
	}
	for _, p := range acked {
		if !have[p] {
			t.Fatalf("%s lost acknowledged %s (%d acknowledged, %d present)", addr, p, len(acked), len(kids))
		}
	}
}

// retryLoss calls fn until it returns anything but a connection loss (a
// change of leader drops the members' clients; they retry).
func retryLoss(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mntrKey returns key's value in the mntr of the server at addr ("" if
// it cannot be read).
func mntrKey(ctx context.Context, addr, key string) string {
	out, err := zk.FourLetterWord(ctx, addr, "mntr")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "\t"); ok && k == key {
			return v
		}
	}
	return ""
}

// waitHealthy waits until one of the members at addrs leads with every
// other member a synced voter (mntr; needs 4lw.commands.whitelist), and
// fails the test if ctx ends first.
func waitHealthy(ctx context.Context, t *testing.T, addrs []string, what string) {
	t.Helper()
	n := fmt.Sprint(len(addrs))
	healthy := func() bool {
		for _, a := range addrs {
			if mntrKey(ctx, a, "zk_server_state") == "leader" {
				return mntrKey(ctx, a, "zk_synced_followers") == fmt.Sprint(len(addrs)-1) && mntrKey(ctx, a, "zkgo_raft_voters") == n
			}
		}
		return false
	}
	for !healthy() {
		if ctx.Err() != nil {
			t.Fatalf("the ensemble did not become healthy after %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitWrites waits until the load has acknowledged more than n writes.
func (l *loadWriters) waitWrites(ctx context.Context, t *testing.T, n int, what string) {
	t.Helper()
	for l.count() <= n {
		if ctx.Err() != nil {
			t.Fatalf("writes stopped after %s (%d acknowledged)", what, l.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// memberProc is a `zkgo server zoo.cfg` process of an ensemble test.
type memberProc struct {
	pid  int
	addr string // client address
	kill func() // SIGKILL, then wait for the exit (the data dir is free again)
	log  *syncBuf
}

// memberProcs runs the members of an ensemble test from their zoo.cfg
// files; start (re)starts member i.
type memberProcs struct {
	t     *testing.T
	cfgs  []string
	procs []memberProc
}

func newMemberProcs(t *testing.T, cfgs []string) *memberProcs {
	m := &memberProcs{t: t, cfgs: cfgs, procs: make([]memberProc, len(cfgs))}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, p := range m.procs {
			if p.log != nil {
				t.Logf("member %d's log (since its last start), its end:\n%s", i+1, lastLines(p.log.String(), 80))
			}
		}
	})
	return m
}

// startHealthy starts every member, waits until the ensemble is healthy
// (servers are their client addresses) and creates the persistent znode
// parent.
func (m *memberProcs) startHealthy(ctx context.Context, servers []string, parent string) {
	m.t.Helper()
	for i := range m.procs {
		m.start(i)
	}
	waitHealthy(ctx, m.t, servers, "starting")
	// A new ensemble is formed once every member recorded the formation
	// its first leader chose: the tests start from there. (A member killed
	// before it got that entry, with another rebuilt from an empty disk,
	// would leave one holder of the formation among three voters: no
	// majority to learn it from, so the ensemble could not elect again.)
	for {
		var f []string
		for _, a := range servers {
			f = append(f, mntrKey(ctx, a, "zkgo_ensemble_formation"))
		}
		if f[0] != "" && f[0] != "pending" && f[0] != "none" && !slices.ContainsFunc(f, func(x string) bool { return x != f[0] }) {
			break
		}
		if ctx.Err() != nil {
			m.t.Fatalf("the members did not all record the ensemble's formation: %v", f)
		}
		time.Sleep(20 * time.Millisecond)
	}
	setup, err := zk.Connect(ctx, servers)
	if err != nil {
		m.t.Fatal(err)
	}
	defer setup.Close()
	if _, err := setup.Create(ctx, parent, nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		m.t.Fatal(err)
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (m *memberProcs) start(i int) {
	m.t.Helper()
	cmd, addr, log := startServerLog(m.t, m.cfgs[i])
	m.procs[i] = memberProc{cmd.Process.Pid, addr, func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }, log}
}
