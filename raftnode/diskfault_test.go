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
	c := newCluster(t, voters(1, 2, 3))
	c.noSync = false // the fsync is the step that fails
	logs := map[uint64]*sentLog{}
	c.trans = func(id uint64) Transport {
		l := &sentLog{Transport: c.net.Transport(id)}
		logs[id] = l
		return l
	}
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

// A leader whose disk fails stops without sending what it could not
// save: that entry is applied nowhere, and the others elect a leader and
// go on with every entry committed before.
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
	for _, id := range others(lead, 1, 2, 3) {
		if c.sms[id].has("lost") {
			t.Fatalf("member %d applied the entry the leader could not save", id)
		}
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
