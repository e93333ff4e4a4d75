package raftnode

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/storage"
)

// slowSyncCluster is a one-member group whose WAL fsyncs take at least
// syncTime, counted in syncs, with commitDelay as Config.CommitDelay.
func slowSyncCluster(t *testing.T, syncTime, commitDelay time.Duration, syncs *atomic.Int64) *testCluster {
	return slowSyncClusterWith(t, syncTime, syncs, func(cfg *Config) { cfg.CommitDelay = commitDelay })
}

// slowSyncClusterWith is slowSyncCluster with mod adjusting the Config.
func slowSyncClusterWith(t *testing.T, syncTime time.Duration, syncs *atomic.Int64, mod func(*Config)) *testCluster {
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
	c.mod = mod
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

// fakeNotes is Config.Notifications for tests: notify marks a client as
// told of a change.
type fakeNotes struct {
	mu sync.Mutex
	at map[uint64]time.Time
}

func (f *fakeNotes) notify(src byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at == nil {
		f.at = map[uint64]time.Time{}
	}
	f.at[uint64(src)] = time.Now()
}

func (f *fakeNotes) Pending(src uint64, d time.Duration) (other, self bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, at := range f.at {
		if time.Since(at) > d {
			continue
		}
		if id == src {
			self = true
		} else {
			other = true
		}
	}
	return other, self
}

func (f *fakeNotes) Proposed(src uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.at, src)
}

// lateCluster is a slowSyncCluster (fsyncs of at least 2 ms, CommitDelay
// 40 ms: the late window is three mean fsyncs) whose entries' source is
// their first byte, with notes as its Notifications.
func lateCluster(t *testing.T, syncs *atomic.Int64, notes *fakeNotes) *testCluster {
	return slowSyncClusterWith(t, 2*time.Millisecond, syncs, func(cfg *Config) {
		cfg.CommitDelay = 40 * time.Millisecond
		cfg.ProposalSource = func(data []byte) (uint64, bool) { return uint64(data[0]), true }
		cfg.Notifications = notes
	})
}

// latePairs proposes rounds pairs: a (client 'a') and, 4.5 ms later —
// more than an fsync (2 ms and a little), less than three — b (client
// 'b'); before each pair it calls told, which may tell clients of a
// change (as a lock's next holder, b, is told when the releaser, a,
// deletes its node and then creates its next one). It returns the WAL
// fsyncs of the last measured pairs.
func latePairs(c *testCluster, syncs *atomic.Int64, rounds, measured int, told func()) int64 {
	var before int64
	for r := 0; r < rounds; r++ {
		if r == rounds-measured {
			before = syncs.Load()
		}
		a, b := fmt.Sprintf("a%d", r), fmt.Sprintf("b%d", r)
		told()
		c.proposeAsync(a)
		time.Sleep(4500 * time.Microsecond)
		c.proposeAsync(b)
		c.waitFor("the pair applied", func() bool { return c.sms[1].has(a) && c.sms[1].has(b) })
	}
	return syncs.Load() - before
}

// A second entry that comes from another client later than an fsync after
// the first, from a client just told of a change, still comes to share
// the first's fsync: the first is held for the late partner.
func TestGroupCommitWaitsForALateNotifiedClient(t *testing.T) {
	var syncs atomic.Int64
	notes := &fakeNotes{}
	c := lateCluster(t, &syncs, notes)
	const measured = 30
	got := latePairs(c, &syncs, 60, measured, func() { notes.notify('b') })
	st := c.nodes[1].Status()
	t.Logf("last %d pairs: %d WAL fsyncs; holds %d (late %d), joined %d", measured, got, st.CommitHolds, st.CommitLateHolds, st.CommitHoldsJoined)
	if got > measured*3/2 {
		t.Errorf("%d fsyncs for the last %d pairs; want about one per pair", got, measured)
	}
	if st.CommitLateHolds < measured/2 {
		t.Errorf("%d late holds; want most of the last %d pairs", st.CommitLateHolds, measured)
	}
}

// Pairs are not held for a late partner when nothing says a client is
// about to write (no client was told of a change), nor when the first
// entry is itself a told client's — the next holder's delete, when it
// comes first: others wait for it.
func TestGroupCommitNoLateHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		told []byte // the clients told of a change before each pair
	}{
		{"without a notification", nil},
		{"of the notified client", []byte{'a', 'b'}}, // a writes first
	} {
		t.Run(tc.name, func(t *testing.T) {
			var syncs atomic.Int64
			notes := &fakeNotes{}
			c := lateCluster(t, &syncs, notes)
			latePairs(c, &syncs, 40, 20, func() {
				for _, id := range tc.told {
					notes.notify(id)
				}
			})
			if st := c.nodes[1].Status(); st.CommitLateHolds != 0 {
				t.Errorf("%d late holds", st.CommitLateHolds)
			}
		})
	}
}

// One client writing alone, each write sent a little after the one
// before applied, while another client was told of a change (and never
// writes), is never held: its own next write is not a partner, however
// soon it comes.
func TestGroupCommitLateNeverHoldsALoneWriter(t *testing.T) {
	var syncs atomic.Int64
	notes := &fakeNotes{}
	c := lateCluster(t, &syncs, notes)
	for r := 0; r < 60; r++ {
		key := fmt.Sprintf("k%d", r)
		notes.notify('z')
		c.proposeAsync(key)
		c.waitFor("the write applied", func() bool { return c.sms[1].has(key) })
		time.Sleep(time.Millisecond)
	}
	if st := c.nodes[1].Status(); st.CommitHolds != 0 {
		t.Errorf("a lone writer's entries were held %d times (late %d)", st.CommitHolds, st.CommitLateHolds)
	}
}

// Once holds run out unjoined, their end is timed by the precise clock
// (holdclock.go): a Go timer that short may fire a millisecond late in an
// idle process, and a lone entry would wait that long. While holds are
// joined they keep the cheaper Go timer.
func TestGroupCommitRunOutHoldsUseThePreciseClock(t *testing.T) {
	var syncs atomic.Int64
	c := slowSyncCluster(t, 2*time.Millisecond, 4*time.Millisecond, &syncs)
	pair := func(r int, gap time.Duration) {
		a, b := fmt.Sprintf("a%d", r), fmt.Sprintf("b%d", r)
		c.proposeAsync(a)
		time.Sleep(gap)
		c.proposeAsync(b)
		c.waitFor("the pair applied", func() bool { return c.sms[1].has(a) && c.sms[1].has(b) })
	}
	// Pairs well within the window: holds are joined.
	for r := 0; r < 20; r++ {
		pair(r, 200*time.Microsecond)
	}
	st := c.nodes[1].Status()
	if st.CommitHoldsJoined == 0 {
		t.Fatalf("no hold joined in 20 close pairs (holds %d)", st.CommitHolds)
	}
	if st.CommitPreciseHolds != 0 {
		t.Errorf("%d holds on the precise clock while every hold was joined", st.CommitPreciseHolds)
	}
	// The second of each pair now comes well after the window: the
	// holds run out until the score stops holding.
	for r := 20; r < 40; r++ {
		pair(r, 20*time.Millisecond)
	}
	st = c.nodes[1].Status()
	t.Logf("holds %d, joined %d, on the precise clock %d", st.CommitHolds, st.CommitHoldsJoined, st.CommitPreciseHolds)
	if st.CommitPreciseHolds == 0 {
		t.Errorf("no hold on the precise clock after holds ran out")
	}
}
