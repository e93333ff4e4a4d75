package raftnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

func keys(prefix string, n int) []string {
	var ks []string
	for i := range n {
		ks = append(ks, fmt.Sprintf("%s%d", prefix, i))
	}
	return ks
}

// A standalone member commits, snapshots, and after a restart on the same
// directory rebuilds exactly the same state.
func TestSingleNodeRestart(t *testing.T) {
	c := newCluster(t, voters(1))
	c.noSync = false // this one is about durability
	c.mod = func(cfg *Config) { cfg.SnapCount = 16 }
	c.startAll()
	if got := c.waitLeader(); got != 1 {
		t.Fatalf("leader %d", got)
	}
	ks := keys("k", 40)
	for _, k := range ks {
		if err := c.nodes[1].Propose(context.Background(), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	c.waitKeys(ks, 1)
	before := c.sms[1].entries()
	applied := c.nodes[1].AppliedIndex()
	if c.stores[1].SnapshotIndex() == 0 {
		t.Fatal("no snapshot taken")
	}
	c.stop(1)

	c.start(1, false)
	c.waitFor("replay", func() bool { return c.nodes[1].AppliedIndex() >= applied })
	if after := c.sms[1].entries(); !slices.Equal(before, after) {
		t.Fatalf("state after restart differs:\nbefore %v\nafter  %v", before, after)
	}
	if c.sms[1].restoreCount() != 1 {
		t.Fatalf("restored %d times, want once (from the local snapshot)", c.sms[1].restoreCount())
	}
	c.waitLeader()
	c.propose(1, "after-restart")
	if st := c.nodes[1].Status(); st.Role != RoleLeader || st.Voters[0] != 1 || st.Commit < applied {
		t.Fatalf("status %+v", st)
	}
}

func TestStartChecksIdentity(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.Open(dir, storage.Options{NoSync: true, Metadata: Metadata(1, 9)})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = storage.Open(dir, storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Start(Config{ID: 2, ClusterID: 9, Peers: voters(2), Storage: st, StateMachine: newTestSM(nil), Transport: NewMemNetwork().Transport(2)})
	if !errors.Is(err, ErrIDMismatch) {
		t.Fatalf("Start: %v, want ErrIDMismatch", err)
	}
	fresh, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	_, err = Start(Config{ID: 3, Peers: voters(1, 2), Storage: fresh, StateMachine: newTestSM(nil), Transport: NewMemNetwork().Transport(3)})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("Start without self in Peers: %v, want ErrConfig", err)
	}
}

func TestThreeNodesReplicate(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.startAll()
	lead := c.waitLeader()
	ks := keys("k", 30)
	for _, k := range ks {
		if err := c.nodes[lead].Propose(context.Background(), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	c.waitKeys(ks, 1, 2, 3)
	leaders := 0
	for _, id := range c.ids() {
		st := c.nodes[id].Status()
		if st.Role == RoleLeader {
			leaders++
			if len(st.Match) != 3 {
				t.Errorf("leader progress %v", st.Match)
			}
		}
		if st.Leader != lead || !slices.Equal(st.Voters, []uint64{1, 2, 3}) {
			t.Errorf("member %d: %+v", id, st)
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders", leaders)
	}
}

func TestLeaderStopElectsNewLeader(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.startAll()
	old := c.waitLeader()
	c.propose(old, "before")
	c.stop(old)
	lead := c.waitLeader()
	if lead == old {
		t.Fatalf("stopped member %d still leads", old)
	}
	c.propose(lead, "during")
	// The old leader comes back as a follower and catches up.
	c.start(old, false)
	c.waitKeys([]string{"before", "during"}, old)
	c.propose(old, "after") // proposed via the old leader, now a follower
}

func TestFollowerProposalsCommit(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.startAll()
	lead := c.waitLeader()
	for _, id := range c.ids() {
		if id != lead {
			c.propose(id, fmt.Sprintf("via-%d", id))
		}
	}
}

func TestLearner(t *testing.T) {
	peers := append(voters(1, 2, 3), Peer{ID: 4, Learner: true})
	c := newCluster(t, peers)
	c.startAll()
	lead := c.waitLeader()
	ks := keys("k", 10)
	for _, k := range ks {
		c.propose(lead, k, 1, 2, 3, 4)
	}
	st := c.nodes[4].Status()
	if st.Role != RoleLearner || c.nodes[4].Role() != RoleLearner || !slices.Equal(st.Learners, []uint64{4}) || !slices.Equal(st.Voters, []uint64{1, 2, 3}) {
		t.Fatalf("learner status %+v", st)
	}
	// The learner proposes (forwarded) and serves linearizable reads.
	c.propose(4, "from-learner", 1, 2, 3, 4)
	idx, err := c.nodes[4].ReadIndex(context.Background())
	if err != nil || c.nodes[4].WaitApplied(context.Background(), idx) != nil {
		t.Fatalf("ReadIndex on learner: %v", err)
	}

	// Leadership moves, never to the learner.
	c.stop(lead)
	lead2 := c.waitLeader()
	c.propose(lead2, "after", 4)
	// With two of three voters gone the learner does not make a quorum.
	for _, id := range []uint64{1, 2, 3} {
		if id != lead && id != lead2 {
			c.stop(id)
		}
	}
	c.nodes[lead2].Propose(context.Background(), []byte("no-quorum"))
	ctx, cancel := context.WithTimeout(context.Background(), 40*testTick)
	defer cancel()
	if err := c.nodes[4].WaitApplied(ctx, c.nodes[4].AppliedIndex()+1); err == nil {
		t.Fatal("committed with one voter and one learner of three voters")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leadersSeen[4] {
		t.Fatal("the learner was reported as leader")
	}
}

func TestMinorityPartitionCannotCommit(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.startAll()
	old := c.waitLeader()
	c.propose(old, "before")
	var majority []uint64
	for _, id := range c.ids() {
		if id != old {
			majority = append(majority, id)
		}
	}
	c.net.Isolate(old)
	// The isolated leader may accept the proposal, but cannot commit it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*testTick)
	c.nodes[old].Propose(ctx, []byte("minority"))
	cancel()

	var lead uint64
	c.waitFor("a leader in the majority", func() bool {
		lead = c.nodes[majority[0]].Leader()
		return lead != 0 && lead != old && c.nodes[majority[1]].Leader() == lead && c.nodes[lead].Role() == RoleLeader
	})
	for _, k := range keys("maj", 5) {
		c.propose(lead, k, majority...)
	}
	if c.sms[old].has("minority") || c.sms[old].has("maj0") {
		t.Fatal("the isolated member applied entries without a quorum")
	}
	// The old leader learns the majority's log; its uncommitted entry is
	// discarded everywhere.
	c.net.Heal()
	c.waitKeys(keys("maj", 5), old)
	c.propose(lead, "healed")
	for _, id := range c.ids() {
		if c.sms[id].has("minority") {
			t.Fatalf("member %d applied the minority's entry", id)
		}
	}
}

func TestReadIndexOnFollower(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.startAll()
	lead := c.waitLeader()
	f := c.ids()[0]
	if f == lead {
		f = c.ids()[1]
	}
	// Committed on the leader only as far as the test knows: the read on
	// the follower must still see it.
	for i := range 20 {
		c.propose(lead, fmt.Sprint("w", i), lead)
		idx, err := c.nodes[f].ReadIndex(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.nodes[f].WaitApplied(context.Background(), idx); err != nil {
			t.Fatal(err)
		}
		if !c.sms[f].has(fmt.Sprint("w", i)) {
			t.Fatalf("read %d on follower after ReadIndex %d does not see the write", i, idx)
		}
	}
	// Cut off, the follower cannot confirm a read...
	c.net.Isolate(f)
	ctx, cancel := context.WithTimeout(context.Background(), 30*testTick)
	_, err := c.nodes[f].ReadIndex(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadIndex while isolated: %v", err)
	}
	// ...and can again once healed (the request is retried).
	c.net.Heal()
	ctx, cancel = context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := c.nodes[f].ReadIndex(ctx); err != nil {
		t.Fatalf("ReadIndex after heal: %v", err)
	}
}

// TestExpensiveSnapshotsSpacedOut: once writing a snapshot takes longer
// than snapCheap, the next one starts no earlier than snapDuty times that
// after it, however many entries are applied meanwhile.
func TestExpensiveSnapshotsSpacedOut(t *testing.T) {
	c := newCluster(t, voters(1))
	const delay = 2 * snapCheap
	c.snapDelay = delay
	c.mod = func(cfg *Config) { cfg.SnapCount = 10 }
	c.startAll()
	lead := c.waitLeader()
	calls := func() []time.Time { return c.snapCalls(lead) }
	deadline := time.Now().Add(waitTimeout)
	for i := 0; len(calls()) < 3; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d snapshots after %d proposals", len(calls()), i)
		}
		c.propose(lead, fmt.Sprintf("k%d", i))
	}
	ts := calls()
	for i := 1; i < len(ts); i++ {
		// Snapshot i-1 took at least delay to write.
		if gap := ts[i].Sub(ts[i-1]); gap < snapDuty*delay {
			t.Errorf("snapshot %d started %v after the previous one, want at least %v", i, gap, snapDuty*delay)
		}
	}
	// Once the writes stop, a deferred snapshot is still taken: the log
	// is compacted up to the last entry.
	for i := 0; i < 20; i++ {
		c.propose(lead, fmt.Sprintf("last%d", i))
	}
	last := c.nodes[lead].AppliedIndex()
	for c.stores[lead].SnapshotIndex() < last {
		if time.Now().After(deadline) {
			t.Fatalf("snapshot at %d, last entry %d: the deferred snapshot was not taken", c.stores[lead].SnapshotIndex(), last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLaggingFollowerCatchesUpBySnapshot(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.mod = func(cfg *Config) { cfg.SnapCount = 10 }
	c.stOpts = func(o *storage.Options) { o.CatchUpEntries = 5 }
	c.startAll()
	lead := c.waitLeader()
	var lag uint64
	var up []uint64
	for _, id := range c.ids() {
		if id != lead && lag == 0 {
			lag = id
		} else {
			up = append(up, id)
		}
	}
	c.net.Isolate(lag)
	ks := keys("k", 60)
	for _, k := range ks {
		c.propose(lead, k, up...)
	}
	// Snapshots are written in the background, one at a time: one that
	// falls due meanwhile waits for a later apply. Propose on until the
	// leader has snapshotted well past the lagging member.
	// A snapshot that was slow to write (a loaded machine) defers the
	// next by a time, which the clock catches up on once proposals stop.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; c.stores[lead].SnapshotIndex() < 50; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("leader snapshot at %d after %d more proposals and 30s", c.stores[lead].SnapshotIndex(), min(i, 200))
		}
		if i >= 200 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		k := fmt.Sprintf("pad%03d", i)
		c.propose(lead, k, up...)
		ks = append(ks, k)
	}
	if fi, _ := c.stores[lead].RaftStorage().FirstIndex(); fi <= c.nodes[lag].AppliedIndex()+1 {
		t.Fatalf("leader log not compacted past the lagging member (first index %d)", fi)
	}
	c.net.Heal()
	c.waitKeys(ks, lag)
	if c.sms[lag].restoreCount() < 2 { // once at start, once from the leader
		t.Fatalf("lagging member restored %d snapshots", c.sms[lag].restoreCount())
	}
	// It keeps following after the snapshot, and restarts from it.
	c.propose(lead, "after")
	c.stop(lag)
	c.start(lag, false)
	c.waitKeys(append(ks, "after"), lag)
}

func TestJoinAsLearnerThenPromote(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.mod = func(cfg *Config) { cfg.SnapCount = 8 }
	c.startAll()
	lead := c.waitLeader()
	for _, k := range keys("k", 20) {
		c.propose(lead, k)
	}
	c.start(4, true) // fresh directory, no bootstrap
	if err := c.nodes[lead].ProposeConfChange(context.Background(), raftpb.ConfChangeV2{
		Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddLearnerNode, NodeID: 4}},
	}); err != nil {
		t.Fatal(err)
	}
	c.waitKeys(keys("k", 20), 4)
	c.waitFor("member 4 a learner", func() bool { return c.nodes[4].Role() == RoleLearner })
	if err := c.nodes[lead].ProposeConfChange(context.Background(), raftpb.ConfChangeV2{
		Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode, NodeID: 4}},
	}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("member 4 a voter everywhere", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range []uint64{1, 2, 3, 4} {
			ccs := c.confChanges[id]
			if len(ccs) == 0 || !slices.Equal(ccs[len(ccs)-1].Voters, []uint64{1, 2, 3, 4}) {
				return false
			}
		}
		return true
	})
	if st := c.nodes[4].Status(); !slices.Equal(st.Voters, []uint64{1, 2, 3, 4}) || st.Role == RoleLearner {
		t.Fatalf("member 4 status %+v", st)
	}
	c.propose(4, "from-4")
}

func TestThreeNodesOverTCP(t *testing.T) {
	c, lns := newTCPCluster(t, 3)
	c.startAll()
	lead := c.waitLeader()
	for _, k := range keys("k", 30) {
		if err := c.nodes[lead].Propose(context.Background(), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	c.waitKeys(keys("k", 30), 1, 2, 3)
	for _, id := range c.ids() {
		if id != lead {
			c.propose(id, fmt.Sprint("via-", id))
		}
	}
	// A member restarts on a new listener at the same address? Ports were
	// random, so restart the leader with a listener on its old address.
	addr := lns[lead].Addr().String()
	c.stop(lead)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	lns[lead] = ln
	c.start(lead, false)
	c.propose(lead, "after-restart")
}

// Stop while proposals and reads are blocked returns them with ErrStopped.
func TestStopUnblocksCallers(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.start(1, false) // alone among three voters: no leader, ever
	n := c.nodes[1]
	errs := make(chan error, 2)
	go func() { errs <- n.Propose(context.Background(), []byte("x")) }()
	go func() {
		_, err := n.ReadIndex(context.Background())
		errs <- err
	}()
	waitErr := make(chan error, 1)
	go func() { waitErr <- n.WaitApplied(context.Background(), 100) }()
	c.stop(1)
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrStopped) {
			t.Fatalf("blocked call returned %v, want ErrStopped", err)
		}
	}
	if err := <-waitErr; !errors.Is(err, ErrStopped) {
		t.Fatalf("WaitApplied: %v", err)
	}
	if err := n.Propose(context.Background(), []byte("y")); !errors.Is(err, ErrStopped) {
		t.Fatalf("Propose after Stop: %v", err)
	}
	if st := n.Status(); st.Role != RoleStopped {
		t.Fatalf("status after stop %+v", st)
	}
	n.Stop() // idempotent
}

// A Node can be started again on the Storage a stopped Node used.
func TestRestartOnOpenStorage(t *testing.T) {
	st, err := storage.Open(t.TempDir(), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	nw := NewMemNetwork()
	var last uint64
	for round := range 2 {
		changed := make(chan struct{}, 1)
		sm := newTestSM(func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
		n, err := Start(Config{ID: 1, Peers: voters(1), Storage: st, StateMachine: sm, Transport: nw.Transport(1), TickInterval: testTick})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := n.WaitApplied(context.Background(), last); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprint("r", round)
		if err := n.Propose(context.Background(), []byte(key)); err != nil {
			t.Fatal(err)
		}
		for !sm.has(key) {
			select {
			case <-changed:
			case <-time.After(waitTimeout):
				t.Fatalf("round %d: %s not applied", round, key)
			}
		}
		for r := 0; r < round; r++ {
			if !sm.has(fmt.Sprint("r", r)) {
				t.Fatalf("round %d: r%d missing", round, r)
			}
		}
		last = n.AppliedIndex()
		n.Stop()
	}
}

// TestLearnerNoticesSilentLeader: a learner never campaigns, so raft keeps
// naming a leader it no longer hears from. The node reports the leader
// lost after two election timeouts of silence and found again when its
// messages return.
func TestLearnerNoticesSilentLeader(t *testing.T) {
	peers := append(voters(1, 2, 3), Peer{ID: 4, Learner: true})
	c := newCluster(t, peers)
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "k", 4)
	c.waitFor("the learner knows the leader", func() bool { return c.nodes[4].Leader() == lead })
	c.net.Isolate(4)
	c.waitFor("the learner reports no leader", func() bool { return c.nodes[4].Leader() == 0 })
	c.net.Heal()
	c.waitFor("the learner knows a leader again", func() bool { return c.nodes[4].Leader() != 0 })
	c.propose(c.waitLeader(), "after", 4)
}

// TestManualClock: with Config.Ticks a group elects a leader only when it
// is ticked, however long the wall clock runs.
func TestManualClock(t *testing.T) {
	ticks := map[uint64]chan struct{}{}
	for _, id := range []uint64{1, 2, 3} {
		ticks[id] = make(chan struct{})
	}
	c := newCluster(t, voters(1, 2, 3))
	c.mod = func(cfg *Config) { cfg.Ticks = ticks[cfg.ID] }
	c.startAll()
	if c.waitForQuiet(30*testTick, func() bool {
		for _, n := range c.nodes {
			if n.Leader() != 0 {
				return true
			}
		}
		return false
	}) {
		t.Fatal("a leader was elected without ticks")
	}
	stop := tickAll(ticks, 1, 2, 3)
	lead := c.waitLeader()
	c.propose(lead, "ticked")
	stop()
}

// A snapshot is due once the entries applied since the last one hold
// SnapBytes of data, long before SnapCount of them: the log held in
// memory between snapshots is bounded by its size.
func TestSnapshotDueBySize(t *testing.T) {
	c := newCluster(t, voters(1))
	c.mod = func(cfg *Config) { cfg.SnapCount, cfg.SnapBytes = 1_000_000, 8<<10 }
	c.startAll()
	lead := c.waitLeader()
	first := c.stores[lead].SnapshotIndex()
	big := strings.Repeat("v", 1000)
	for i := range 10 { // 10 KB: over SnapBytes
		c.propose(lead, fmt.Sprintf("k%d=%s", i, big))
	}
	deadline := time.Now().Add(waitTimeout)
	for c.stores[lead].SnapshotIndex() == first {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot after 10 KB of entries with SnapBytes 8 KiB (SnapCount 1000000)")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStatusHeard: Status.Heard lists the members heard from within an
// election timeout. The leader hears every member's answers to its
// heartbeats; a stopped member drops out after an election timeout (its
// match index stays where it was) and comes back when it restarts. A
// follower hears its leader.
func TestStatusHeard(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "k")
	var others []uint64
	for _, id := range c.ids() {
		if id != lead {
			others = append(others, id)
		}
	}
	heard := func(id uint64, want ...uint64) {
		t.Helper()
		deadline := time.Now().Add(waitTimeout)
		for !slices.Equal(c.nodes[id].Status().Heard, want) {
			if time.Now().After(deadline) {
				t.Fatalf("member %d heard from %v, want %v", id, c.nodes[id].Status().Heard, want)
			}
			time.Sleep(testTick)
		}
	}
	heard(lead, others...)
	for _, id := range others {
		if h := c.nodes[id].Status().Heard; !slices.Contains(h, lead) {
			t.Errorf("follower %d heard from %v, not from its leader %d", id, h, lead)
		}
	}
	c.stop(others[0])
	heard(lead, others[1])
	if l := c.nodes[lead].Status(); l.Role != RoleLeader || l.Match[others[0]] == 0 {
		t.Fatalf("leader's status after a follower stopped: %+v", l)
	}
	c.start(others[0], false)
	heard(lead, others...)
}

// Expensive snapshots are spaced out (snapDuty), but not past
// snapForceFactor × SnapBytes of log: then one is taken whatever it
// costs, so the in-memory log stays bounded.
func TestSnapshotForcedBySize(t *testing.T) {
	c := newCluster(t, voters(1))
	c.snapDelay = 2 * snapCheap
	c.mod = func(cfg *Config) { cfg.SnapCount, cfg.SnapBytes = 1_000_000, 1<<10 }
	c.startAll()
	lead := c.waitLeader()
	big := strings.Repeat("v", 1<<10)
	const entries = 60
	for i := range entries {
		c.propose(lead, fmt.Sprintf("k%d=%s", i, big))
		// A steady write rate: by the duty cycle alone, snapshots would
		// be snapDuty × snapDelay (320 ms, ~30 entries) apart.
		time.Sleep(10 * time.Millisecond)
	}
	sm := c.sms[lead]
	sm.mu.Lock()
	at := slices.Clone(sm.snapAt)
	sm.mu.Unlock()
	// Forced: a snapshot once 4 entries (4 KiB) wait, or as soon as the
	// one being written (snapDelay: ~4 entries at this rate) is done.
	const bound = 16
	for i := 1; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap > bound {
			t.Errorf("snapshots %d and %d are %d entries of 1 KiB apart with SnapBytes 1 KiB (want at most %d): %v", i-1, i, gap, bound, at)
		}
	}
	if len(at) < 3 {
		t.Errorf("%d snapshots for %d entries of 1 KiB with SnapBytes 1 KiB", len(at), entries)
	}
}

// Once the writes stop, a snapshot held back by the duty cycle is taken
// after idleSnapAfter, not snapDuty times the last one's cost after it.
func TestDeferredSnapshotTakenWhenIdle(t *testing.T) {
	c := newCluster(t, voters(1))
	// The duty cycle would hold the next snapshot back for 8 s.
	const delay = time.Second
	c.snapDelay = delay
	c.mod = func(cfg *Config) { cfg.SnapCount = 10 }
	c.startAll()
	lead := c.waitLeader()
	calls := func() []time.Time { return c.snapCalls(lead) }
	// A snapshot at 10; the one due at 20 waits for the first to be
	// written, then for the duty cycle or for the writes to stop.
	for i := 0; i < 25; i++ {
		c.propose(lead, fmt.Sprintf("k%d", i))
	}
	last := c.nodes[lead].AppliedIndex()
	deadline := time.Now().Add(waitTimeout)
	for len(calls()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d snapshots", len(calls()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts := calls()
	if gap := ts[1].Sub(ts[0]); gap >= snapDuty*delay {
		t.Fatalf("the deferred snapshot started %v after the first, as the duty cycle alone would (want about %v)", gap, idleSnapAfter+delay)
	}
	for c.stores[lead].SnapshotIndex() < last {
		if time.Now().After(deadline) {
			t.Fatalf("snapshot at %d, last entry %d", c.stores[lead].SnapshotIndex(), last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// snapCalls returns when member id's state machine was asked for each
// snapshot so far.
func (c *testCluster) snapCalls(id uint64) []time.Time {
	sm := c.sms[id]
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return slices.Clone(sm.snapCalls)
}

// A restarted member reports its leader once, with the term it follows
// it in: the term is the recovered one from the start. (It reported the
// leader with term 0 first, then the same leader again once a Ready
// carried the term — a "new term" the server took for a change of
// leadership, aborting the writes in flight.)
func TestRestartReportsTheLeaderOnce(t *testing.T) {
	c := newCluster(t, voters(1, 2, 3))
	c.startAll()
	lead := c.waitLeader()
	c.propose(lead, "a")
	follower := uint64(1)
	if follower == lead {
		follower = 2
	}
	c.stop(follower)
	c.propose(lead, "b", lead)
	c.start(follower, false)
	c.waitKeys([]string{"a", "b"}, follower)
	c.propose(lead, "c")
	c.waitKeys([]string{"c"}, follower)
	c.mu.Lock()
	changes := slices.Clone(c.leaderChanges[follower])
	c.mu.Unlock()
	var withLeader []LeaderChange
	for _, lc := range changes {
		if lc.Leader != 0 && !lc.ProposalsLost {
			withLeader = append(withLeader, lc)
		}
	}
	if len(withLeader) != 1 || withLeader[0].Term == 0 {
		t.Fatalf("after a restart the member reported %+v, want its leader once with its term", changes)
	}
}
