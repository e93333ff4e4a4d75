package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	m := newMemberProcs(t, cfgs)
	procs, start := m.procs, m.start
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m.startHealthy(ctx, servers, "/w")

	load := startLoad(ctx, servers, "/w", 3)
	for i := range n {
		before := load.count()
		procs[i].kill()
		what := fmt.Sprintf("restarting member %d", i+1)
		if i == 1 {
			if err := os.RemoveAll(filepath.Join(filepath.Dir(cfgs[i]), "zkgo")); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("replacing member %d's disk", i+1)
		}
		start(i)
		waitHealthy(ctx, t, servers, what)
		// Writes went on: at least some were acknowledged since.
		load.waitWrites(ctx, t, before+50, what)
	}
	acked := load.finish(t)
	// Every acknowledged create is on every member.
	for i := range n {
		checkHeld(ctx, t, procs[i].addr, "/w", acked)
	}
	t.Logf("%d acknowledged creates survived a rolling restart and a disk replacement", len(acked))
}
