package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TestRollingRestartUnderLoad: three zoo.cfg processes under a steady
// write load from three sessions (each connected to every member); each
// member in turn is killed with SIGKILL and started again — the second one
// on an emptied data directory, as after a disk replacement — and the next
// one only once it is a voter again and caught up. No acknowledged write
// is lost, and the writers see no error other than connection losses,
// which they retry (a retried create that finds its node took effect).
func TestRollingRestartUnderLoad(t *testing.T) {
	const n = 3
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nsnapCount=500\n")
	var servers []string
	for _, l := range lines {
		_, client, _ := strings.Cut(l, ";")
		servers = append(servers, client)
	}
	type proc struct {
		kill func()
		addr string
	}
	procs := make([]proc, n)
	start := func(i int) {
		cmd, addr := startServer(t, cfgs[i])
		procs[i] = proc{func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }, addr}
	}
	for i := range n {
		start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mntr := func(i int, key string) string {
		out, err := zk.FourLetterWord(ctx, procs[i].addr, "mntr")
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
	// healthy: a leader whose two followers are synced voters.
	healthy := func() bool {
		for i := range n {
			if mntr(i, "zk_server_state") == "leader" {
				return mntr(i, "zk_synced_followers") == "2" && mntr(i, "zkgo_raft_voters") == "3"
			}
		}
		return false
	}
	waitHealthy := func(what string) {
		for !healthy() {
			if ctx.Err() != nil {
				t.Fatalf("the ensemble did not recover after %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitHealthy("starting")
	setup, err := zk.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Create(ctx, "/w", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	setup.Close()

	stop := make(chan struct{})
	var mu sync.Mutex // guards acked, failures
	var acked []string
	var failures []error
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := zk.Connect(ctx, servers, zk.WithSessionTimeout(10*time.Second))
			if err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
				return
			}
			defer c.Close()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/w/%d-%06d", g, seq)
				for {
					_, err := c.Create(ctx, p, []byte("v"), zk.OpenACLUnsafe, zk.ModePersistent)
					if err == nil || errors.Is(err, zk.ErrNodeExists) {
						break
					}
					if !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
						mu.Lock()
						failures = append(failures, fmt.Errorf("create %s: %w", p, err))
						mu.Unlock()
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
				mu.Lock()
				acked = append(acked, p)
				mu.Unlock()
			}
		}()
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	for i := range n {
		before := count()
		procs[i].kill()
		what := fmt.Sprintf("restarting member %d", i+1)
		if i == 1 {
			if err := os.RemoveAll(filepath.Join(filepath.Dir(cfgs[i]), "zkgo")); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("replacing member %d's disk", i+1)
		}
		start(i)
		waitHealthy(what)
		// Writes went on: at least some were acknowledged since.
		for count() < before+50 {
			if ctx.Err() != nil {
				t.Fatalf("writes stopped after %s (%d acknowledged)", what, count())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("writers failed: %v", failures)
	}
	// Every acknowledged create is on every member.
	for i := range n {
		c, err := zk.Connect(ctx, procs[i].addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Sync(ctx, "/w"); err != nil {
			t.Fatal(err)
		}
		kids, _, err := c.Children(ctx, "/w")
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		have := make(map[string]bool, len(kids))
		for _, k := range kids {
			have["/w/"+k] = true
		}
		for _, p := range acked {
			if !have[p] {
				t.Fatalf("member %d lost acknowledged %s (%d acknowledged, %d present)", i+1, p, len(acked), len(kids))
			}
		}
	}
	t.Logf("%d acknowledged creates survived a rolling restart and a disk replacement", len(acked))
}
