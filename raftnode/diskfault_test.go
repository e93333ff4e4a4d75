package raftnode

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

var errDisk = errors.New("injected disk fault")

// sentLog is a Transport that records what its member sends.
type sentLog struct {
	Transport
	mu   sync.Mutex // guards sent
	sent []raftpb.Message
}

func (l *sentLog) Send(msgs []raftpb.Message) {
	l.mu.Lock()
	for _, m := range msgs {
		l.sent = append(l.sent, raftpb.Message{Type: m.Type, From: m.From, To: m.To, Index: m.Index, Reject: m.Reject})
	}
	l.mu.Unlock()
	l.Transport.Send(msgs)
}

// newLoggedCluster is a three-voter cluster that fsyncs and records what
// each member sends (logs, filled as members start).
func newLoggedCluster(t *testing.T) (*testCluster, map[uint64]*sentLog) {
	c := newCluster(t, voters(1, 2, 3))
	c.noSync = false
	logs := map[uint64]*sentLog{}
	c.trans = func(id uint64) Transport {
		l := &sentLog{Transport: c.net.Transport(id)}
		logs[id] = l
		return l
	}
	return c, logs
}

// acked returns the highest index the member acknowledged appending.
func (l *sentLog) acked() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var top uint64
	for _, m := range l.sent {
		if m.Type == raftpb.MsgAppResp && !m.Reject {
			top = max(top, m.Index)
		}
	}
	return top
}

// failDisk makes the storage steps op of member id's directory fail from
// now on, until the test ends or the returned function is called.
func (c *testCluster) failDisk(id uint64, op storage.FaultOp) (heal func()) {
	dir := c.dirs[id]
	storage.SetFaultHook(func(d string, o storage.FaultOp) error {
		if d == dir && o == op {
			return errDisk
		}
		return nil
	})
	heal = func() { storage.SetFaultHook(nil) }
	c.t.Cleanup(heal)
	return heal
}

// indexOf returns the index at which member id applied key (0: not).
func (c *testCluster) indexOf(id uint64, key string) uint64 {
	sm := c.sms[id]
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.keys[key]
}

// waitFailed waits until member id stopped on a storage failure, then
// closes it (without the error check of stop).
func (c *testCluster) waitFailed(id uint64) {
	c.t.Helper()
	n := c.nodes[id]
	select {
	case <-n.Done():
	case <-time.After(waitTimeout):
		c.t.Fatalf("member %d did not stop; status: %s", id, c.describe())
	}
	if err := n.Err(); !errors.Is(err, storage.ErrFailed) || !errors.Is(err, errDisk) {
		c.t.Fatalf("member %d stopped with %v, want the disk's error", id, err)
	}
	n.Stop()
	c.stores[id].Close()
	delete(c.nodes, id)
	delete(c.stores, id)
}

// A follower whose disk fails while entries arrive stops, and never
// acknowledged an entry it could not save: every append it acknowledged
// is in its log when it reopens. The others go on; once the disk is
// healed it restarts on its log and catches up.
func TestFollowerDiskFailureAcknowledgesNothing(t *testing.T) {
	c, logs := newLoggedCluster(t) // (syncing: the fsync is the step that fails)
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "before")
	f := lead%3 + 1
	heal := c.failDisk(f, storage.FaultWALSync)

	c.propose(lead, "during", others(f, 1, 2, 3)...)
	c.waitFailed(f)
	at := c.indexOf(lead, "during")

	st, err := storage.Open(c.dirs[f], storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	last := st.Recovered().LastIndex
	st.Close()
	if acked := logs[f].acked(); acked > last {
		t.Fatalf("member %d acknowledged index %d but its log ends at %d", f, acked, last)
	}
	if last >= at {
		t.Fatalf("member %d's log holds %d, the entry whose fsync failed", f, at)
	}

	heal()
	c.start(f, false)
	c.propose(lead, "after")
	c.waitKeys([]string{"before", "during", "after"}, 1, 2, 3)
}

// A leader whose disk fails stops without applying (so without
// acknowledging) the entry it could not save, and the others elect a
// leader and go on with every entry committed before. The entry may
// already be on the followers — the leader sends appends while its own
// fsync runs (raft thesis 10.2.1) — and then the next leader commits it,
// as ZooKeeper's followers do with a proposal of a failed leader: a write
// never acknowledged has an unknown outcome. Either way the survivors
// agree on it.
func TestLeaderDiskFailure(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.noSync = false
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "before")
	c.failDisk(lead, storage.FaultWALSync)
	if err := c.nodes[lead].Propose(t.Context(), []byte("lost")); err != nil {
		t.Fatal(err)
	}
	c.waitFailed(lead)

	next := c.waitLeader()
	c.propose(next, "after")
	c.waitKeys([]string{"before", "after"}, others(lead, 1, 2, 3)...)
	if c.sms[lead].has("lost") {
		t.Fatalf("member %d applied the entry it could not save", lead)
	}
	var applied []bool
	for _, id := range others(lead, 1, 2, 3) {
		applied = append(applied, c.sms[id].has("lost"))
	}
	if applied[0] != applied[1] {
		t.Fatalf("the survivors disagree on the unsaved entry: applied %v", applied)
	}
}

// A local snapshot whose file cannot be written or fsynced is abandoned
// and the member goes on with its log (and snapshots later); a failure
// once the snapshot is being installed stops it.
func TestSnapshotDiskFailure(t *testing.T) {
	for _, tt := range []struct {
		op    storage.FaultOp
		fatal bool
	}{
		{storage.FaultSnapWrite, false},
		{storage.FaultSnapSync, false},
		{storage.FaultSnapRename, true},
	} {
		t.Run(tt.op.String(), func(t *testing.T) {
			c := newCluster(t, voters(1))
			c.noSync = false
			c.mod = func(cfg *Config) { cfg.SnapCount = 4 }
			c.startAll()
			c.waitLeader()
			base := c.stores[1].SnapshotIndex()
			var mu sync.Mutex // guards refused
			refused := 0
			dir := c.dirs[1]
			storage.SetFaultHook(func(d string, op storage.FaultOp) error {
				mu.Lock()
				defer mu.Unlock()
				if d == dir && op == tt.op && refused == 0 {
					refused++
					return errDisk
				}
				return nil
			})
			t.Cleanup(func() { storage.SetFaultHook(nil) })
			n := c.nodes[1]
			for i := 0; ; i++ {
				if i == 100 {
					t.Fatalf("no snapshot after %d entries", i)
				}
				if tt.fatal {
					// Proposals fail once the node stopped.
					key := fmt.Sprint("k", i)
					n.Propose(t.Context(), []byte(key))
					c.waitForQuiet(time.Second, func() bool { return c.sms[1].has(key) })
					select {
					case <-n.Done():
						c.waitFailed(1)
						return
					default:
					}
					continue
				}
				c.propose(1, fmt.Sprint("k", i))
				if c.stores[1].SnapshotIndex() > base+4 {
					break // one snapshot failed, a later one was taken
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if refused != 1 {
				t.Fatalf("%v refused %d times", tt.op, refused)
			}
		})
	}
}

// others returns ids without id.
func others(id uint64, ids ...uint64) []uint64 {
	var out []uint64
	for _, i := range ids {
		if i != id {
			out = append(out, i)
		}
	}
	return out
}

// A leader sends new entries to its followers while its own fsync runs,
// but counts itself toward their quorum only once that fsync is done:
// with one follower cut off, an entry the other follower has persisted
// and acknowledged is not committed while the leader's fsync is held.
func TestLeaderCountsItselfOnlyOncePersisted(t *testing.T) {
	c, logs := newLoggedCluster(t) // (syncing: the leader's fsync is the step held)
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "before")
	before := c.indexOf(lead, "before")
	f1, f2 := others(lead, 1, 2, 3)[0], others(lead, 1, 2, 3)[1]
	c.net.Isolate(f2)

	release := make(chan struct{})
	var once sync.Once
	unhold := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unhold)
	dir := c.dirs[lead]
	storage.SetFaultHook(func(d string, o storage.FaultOp) error {
		if d == dir && o == storage.FaultWALSync {
			<-release
		}
		return nil
	})
	t.Cleanup(func() { storage.SetFaultHook(nil) })

	if err := c.nodes[lead].Propose(t.Context(), []byte("held")); err != nil {
		t.Fatal(err)
	}
	// The follower gets the entry and acknowledges it while the leader
	// is still in its fsync (which waits for release).
	deadline := time.Now().Add(waitTimeout)
	for logs[f1].acked() <= before {
		if time.Now().After(deadline) {
			unhold() // (the status would wait for the held Save)
			t.Fatalf("member %d never acknowledged the entry while the leader's fsync was held (acknowledged up to %d)", f1, logs[f1].acked())
		}
		time.Sleep(time.Millisecond)
	}
	// (Not Status: it reads the storage, whose lock the held Save has.)
	n := c.nodes[lead]
	n.rnMu.Lock()
	commit := n.rn.Status().Commit
	n.rnMu.Unlock()
	if commit > before {
		t.Fatalf("leader committed index %d (its own copy not yet persisted; %d acknowledged by member %d)", commit, logs[f1].acked(), f1)
	}
	unhold()
	c.net.Heal()
	c.waitKeys([]string{"before", "held"}, 1, 2, 3)
}
