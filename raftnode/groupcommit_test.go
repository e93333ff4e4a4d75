package raftnode

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/storage"
)

// slowSyncCluster is a one-member group whose WAL fsyncs take at least
// syncTime, counted in syncs, with commitDelay as Config.CommitDelay.
func slowSyncCluster(t *testing.T, syncTime, commitDelay time.Duration, syncs *atomic.Int64) *testCluster {
	c := newCluster(t, voters(1))
	c.noSync = false
	c.stOpts = func(o *storage.Options) {
		o.NoPrefill = true
		o.SyncHook = func(_ string, p storage.SyncPoint) {
			if p == storage.PointWALSynced {
				time.Sleep(syncTime)
				syncs.Add(1)
			}
		}
	}
	c.mod = func(cfg *Config) { cfg.CommitDelay = commitDelay }
	c.startAll()
	c.waitLeader()
	return c
}

func (c *testCluster) proposeAsync(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := c.nodes[1].Propose(ctx, []byte(key)); err != nil {
		c.t.Errorf("Propose(%q): %v", key, err)
	}
}

// Writes that come in pairs — the second a little after the first, as a
// lock's next holder deletes its node just after the releaser creates its
// next one — come to share one fsync: the leader learns that a lone entry
// is followed within the window and holds it for the second.
func TestGroupCommitPairsShareAnFsync(t *testing.T) {
	var syncs atomic.Int64
	c := slowSyncCluster(t, 5*time.Millisecond, 4*time.Millisecond, &syncs)
	const rounds, measured = 60, 30
	var before int64
	for r := 0; r < rounds; r++ {
		if r == rounds-measured {
			before = syncs.Load()
		}
		a, b := fmt.Sprintf("a%d", r), fmt.Sprintf("b%d", r)
		c.proposeAsync(a)
		time.Sleep(time.Millisecond)
		c.proposeAsync(b)
		c.waitFor("the pair applied", func() bool { return c.sms[1].has(a) && c.sms[1].has(b) })
	}
	got := syncs.Load() - before
	st := c.nodes[1].Status()
	t.Logf("last %d pairs: %d WAL fsyncs; holds %d, joined %d", measured, got, st.CommitHolds, st.CommitHoldsJoined)
	// Two fsyncs per pair without group commit; one when the pair shares
	// it. A few may miss the window on a busy machine.
	if got > measured*3/2 {
		t.Errorf("%d fsyncs for the last %d pairs; want about one per pair", got, measured)
	}
	if st.CommitHoldsJoined < measured/2 {
		t.Errorf("%d holds joined by a second entry (of %d); want most of the last %d pairs", st.CommitHoldsJoined, st.CommitHolds, measured)
	}
}

// A lone writer — each write waits for the one before to apply — is never
// held: nothing ever follows its entries within the window.
func TestGroupCommitNeverHoldsALoneWriter(t *testing.T) {
	var syncs atomic.Int64
	c := slowSyncCluster(t, 2*time.Millisecond, 4*time.Millisecond, &syncs)
	for r := 0; r < 60; r++ {
		key := fmt.Sprintf("k%d", r)
		c.proposeAsync(key)
		c.waitFor("the write applied", func() bool { return c.sms[1].has(key) })
	}
	if st := c.nodes[1].Status(); st.CommitHolds != 0 {
		t.Errorf("a lone writer's entries were held %d times", st.CommitHolds)
	}
}

// With group commit off, no entry is ever held, pairs or not.
func TestGroupCommitOff(t *testing.T) {
	var syncs atomic.Int64
	c := slowSyncCluster(t, 5*time.Millisecond, -1, &syncs)
	for r := 0; r < 20; r++ {
		a, b := fmt.Sprintf("a%d", r), fmt.Sprintf("b%d", r)
		c.proposeAsync(a)
		time.Sleep(time.Millisecond)
		c.proposeAsync(b)
		c.waitFor("the pair applied", func() bool { return c.sms[1].has(a) && c.sms[1].has(b) })
	}
	if st := c.nodes[1].Status(); st.CommitHolds != 0 {
		t.Errorf("group commit off, but entries were held %d times", st.CommitHolds)
	}
}
