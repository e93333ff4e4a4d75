package raftnode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

// Node runs one member of a raft group: it owns a raft.RawNode, drives its
// clock and Ready loop (persist, send, apply, snapshot) on one goroutine,
// and offers proposals, linearizable read barriers and status to any
// goroutine.
//
// The RawNode is guarded by rnMu and called directly by whichever
// goroutine needs it (a proposer, the transport stepping a message, the
// run goroutine taking a Ready), each for a few microseconds; a call that
// may give raft work wakes the run goroutine. raft.Node would instead run
// raft on a goroutine of its own and reach it through channels: two more
// goroutine hand-offs per Ready (proposals in, Ready out, Advance back),
// which at one fsync per Ready were a large part of a write's latency.
//
// Lock order: rnMu before confMu and leadMu; readMu, appliedMu and
// leadWaitMu are leaves (never held together, nor while calling the
// transport or the state machine).
type Node struct {
	cfg Config
	id  uint64

	rnMu      sync.Mutex
	rn        *raft.RawNode
	rnStopped bool          // the run goroutine ended: raft is not driven any more
	wake      chan struct{} // capacity 1: raft may have a Ready for the run goroutine

	leadWaitMu sync.Mutex
	leadWait   chan struct{} // closed (and replaced) when the leader raft knows changes
	st         *storage.Storage
	sm         StateMachine
	tr         Transport
	log        *slog.Logger

	// Owned by the apply goroutine (confState is also read by the run
	// goroutine, under confMu).
	confMu    sync.Mutex
	confState raftpb.ConfState
	snapIndex uint64 // index of the newest snapshot
	nextSnap  uint64 // applied index at which the next snapshot is due
	// confSnap requests a snapshot after a configuration change, so that
	// the snapshot raft sends to a member that joins (or lags) carries a
	// configuration that contains it: raft refuses a snapshot whose
	// configuration does not name the receiver.
	confSnap bool
	batch    []raftpb.Entry

	// persisted is the index of the last entry in the log on disk (or of
	// the snapshot it starts from); run goroutine only.
	persisted uint64

	// The run goroutine hands committed work to the apply goroutine.
	applyc    chan applyJob
	applyDone chan struct{} // closed when the apply goroutine returns
	failc     chan struct{} // closed by the apply goroutine on a fatal error
	applyErr  error         // written before failc is closed
	failOnce  sync.Once     // closes failc
	// snapBusy: a snapshot is being committed (snapWG: its goroutine).
	snapBusy atomic.Bool
	// snapCost is how long writing the last snapshot took (nanoseconds),
	// snapStart when the apply goroutine started it: the next one waits
	// for snapDuty times that (see maybeSnapshot).
	snapCost  atomic.Int64
	snapStart time.Time
	// snapDeferred: a due snapshot waits for its time (see maybeSnapshot).
	snapDeferred atomic.Bool
	// confSnapRetry: a snapshot after a configuration change failed in
	// the background; the apply goroutine asks for another.
	confSnapRetry atomic.Bool
	snapWG        sync.WaitGroup

	applied atomic.Uint64 // last applied index (written by run)
	leader  atomic.Uint64 // leader id as of the last Ready (0: none known)
	term    atomic.Uint64 // current term as of the last Ready
	role    atomic.Int32  // Role as of the last Ready

	snapSends sync.WaitGroup // goroutines sending snapshots (withoutSnapshots)

	appliedMu sync.Mutex    // guards appliedCh
	appliedCh chan struct{} // closed (and replaced) whenever applied grows

	readMu    sync.Mutex             // guards reads and readSeq
	reads     map[string]chan uint64 // pending ReadIndex calls by request context
	readSeq   uint64
	readNonce [8]byte // distinguishes this incarnation's read requests from an earlier one's

	leaderCh chan LeaderChange // capacity 1, latest wins

	// A learner never campaigns, so raft keeps naming a leader that died
	// or was cut off. The node tracks when it last heard from it, in
	// ticks, and reports the leader lost after two election timeouts of
	// silence, and found again on its next message.
	tickCount atomic.Uint64 // ticks so far (written by run)
	contact   atomic.Uint64 // tickCount when the leader was last heard from
	raftLead  atomic.Uint64 // the leader as raft sees it
	leadMu    sync.Mutex    // serialises changes of leader and silent with their notifications
	silent    bool          // the learner reports its leader lost
	// notifiedTerm is the term of the last LeaderChange sent with a
	// leader (guarded by leadMu).
	notifiedTerm uint64

	stopc    chan struct{} // closed by Stop
	done     chan struct{} // closed when run returns
	stopOnce sync.Once
	stopped  chan struct{} // closed when Stop has finished
	err      error         // why run returned, if not Stop; written before done is closed
}

// LeaderChange is a change of leadership seen by this member.
type LeaderChange struct {
	// Leader is the new leader's id, 0 while none is known.
	Leader uint64
	// Term is the term in which it leads.
	Term uint64
	// IsSelf is true when this member became the leader: it now has the
	// authority ZooKeeper gives a leader (e.g. to expire sessions) and
	// should first refresh whatever deadlines it tracks.
	IsSelf bool
	// ProposalsLost is set when leadership did not change but a proposal
	// forwarded to the leader was lost on the way.
	ProposalsLost bool
}

// Status is a snapshot of the member's raft state.
type Status struct {
	ID     uint64
	Leader uint64 // 0 while none is known
	Term   uint64
	Role   Role
	// Commit is the highest index known to be committed; Applied the
	// highest applied to the state machine.
	Commit, Applied uint64
	// Voters and Learners are the current configuration (during a joint
	// change, Voters has both halves).
	Voters, Learners []uint64
	// Match holds, on the leader only, the highest index known to be
	// replicated on each member.
	Match map[uint64]uint64
}

// Start starts a member. With a fresh Storage it bootstraps the group
// from Config.Peers (unless Config.Join); otherwise it restores the state
// machine from the newest snapshot and lets raft replay the committed
// entries after it. A one-voter group campaigns at once instead of
// waiting for an election timeout.
func Start(cfg Config) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	st := cfg.Storage
	rec := st.Recovered()
	if err := checkMetadata(rec.Metadata, cfg.ID, cfg.ClusterID); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:       cfg,
		id:        cfg.ID,
		st:        st,
		sm:        cfg.StateMachine,
		tr:        cfg.Transport,
		log:       cfg.Logger.With("member", cfg.ID),
		appliedCh: make(chan struct{}),
		reads:     map[string]chan uint64{},
		leaderCh:  make(chan LeaderChange, 1),
		applyc:    make(chan applyJob, applyQueue),
		wake:      make(chan struct{}, 1),
		leadWait:  make(chan struct{}),
		applyDone: make(chan struct{}),
		failc:     make(chan struct{}),
		stopc:     make(chan struct{}),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	if _, err := rand.Read(n.readNonce[:]); err != nil {
		return nil, err
	}
	if isEmpty(st) && !cfg.Join {
		if err := bootstrap(st, cfg.Peers); err != nil {
			return nil, err
		}
	}

	snap, err := st.RaftStorage().Snapshot()
	if err != nil {
		return nil, err
	}
	if !raft.IsEmptySnap(snap) {
		// The MemoryStorage holds no snapshot data; the recovered
		// snapshot's is in Recovered (a bootstrap snapshot has none).
		var data []byte
		if r := st.Recovered(); r.Snapshot.Metadata.Index == snap.Metadata.Index {
			data = r.Snapshot.Data
		}
		if err := n.sm.Restore(data, snap.Metadata.Index); err != nil {
			return nil, fmt.Errorf("raftnode: restoring snapshot %d: %w", snap.Metadata.Index, err)
		}
		st.ReleaseRecovered()
	}
	n.confState = snap.Metadata.ConfState
	n.snapIndex = snap.Metadata.Index
	n.nextSnap = n.snapIndex + cfg.SnapCount
	n.applied.Store(snap.Metadata.Index)
	n.role.Store(int32(n.roleFor(raft.StateFollower)))

	rc := &raft.Config{
		ID:                        cfg.ID,
		ElectionTick:              cfg.ElectionTick,
		HeartbeatTick:             cfg.HeartbeatTick,
		Storage:                   st.RaftStorage(),
		Applied:                   snap.Metadata.Index,
		MaxSizePerMsg:             cfg.MaxSizePerMsg,
		MaxInflightMsgs:           cfg.MaxInflightMsgs,
		MaxUncommittedEntriesSize: cfg.MaxUncommittedBytes,
		// CheckQuorum makes a leader that lost touch with a quorum step
		// down, and lets followers ignore disruptive vote requests; PreVote
		// keeps a rejoining partitioned member from forcing an election.
		CheckQuorum:       true,
		PreVote:           true,
		ReadOnlyOption:    raft.ReadOnlySafe,
		StepDownOnRemoval: true,
		Logger:            raftLogger{n.log},
		// Followers forward proposals to the leader (the default); the
		// Node never disables it.
		DisableProposalForwarding: false,
	}
	// raft first: the transport may deliver messages as soon as it starts.
	rn, err := raft.NewRawNode(rc)
	if err != nil {
		return nil, fmt.Errorf("raftnode: %w", err)
	}
	n.rn = rn
	if err := n.tr.Start(n); err != nil {
		return nil, err
	}
	for _, p := range cfg.Peers {
		if p.ID != cfg.ID {
			n.tr.AddPeer(p.ID, p.Addr)
		}
	}
	alone := len(n.confState.Voters) == 1 && n.confState.Voters[0] == n.id && len(n.confState.VotersOutgoing) == 0
	hs, _, err := st.RaftStorage().InitialState()
	if err != nil {
		return nil, err
	}
	n.persisted, _ = st.RaftStorage().LastIndex()
	go n.applyLoop()
	go n.run()
	// Entries committed before a restart are applied before Start
	// returns, so the caller sees the state it left (the apply goroutine
	// would otherwise still be replaying them).
	if err := n.WaitApplied(context.Background(), hs.Commit); err != nil {
		n.Stop()
		return nil, fmt.Errorf("raftnode: replaying the log: %w", err)
	}
	if alone {
		// Alone: no need to wait for an election timeout.
		if err := n.withRaft(func(rn *raft.RawNode) error { return rn.Campaign() }); err != nil {
			n.log.Warn("raftnode: campaign", "err", err)
		}
	}
	return n, nil
}

// isEmpty reports whether st holds no raft state at all: a fresh directory
// that was not bootstrapped yet.
func isEmpty(st *storage.Storage) bool {
	ms := st.RaftStorage()
	snap, _ := ms.Snapshot()
	last, _ := ms.LastIndex()
	hs, _, _ := ms.InitialState()
	return raft.IsEmptySnap(snap) && last == 0 && raft.IsEmptyHardState(hs)
}

// bootstrap writes the initial configuration into fresh storage as a
// snapshot at index 1, term 1, with no state-machine data. Every member
// bootstrapped from the same Peers starts from the same log, learners
// included (which raft.StartNode cannot express).
func bootstrap(st *storage.Storage, peers []Peer) error {
	var cs raftpb.ConfState
	for _, p := range peers {
		if p.Learner {
			cs.Learners = append(cs.Learners, p.ID)
		} else {
			cs.Voters = append(cs.Voters, p.ID)
		}
	}
	slices.Sort(cs.Voters)
	slices.Sort(cs.Learners)
	if len(cs.Voters) == 0 {
		return fmt.Errorf("%w: no voters in Peers", ErrConfig)
	}
	snap := raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 1, Term: 1, ConfState: cs}}
	if err := st.SaveSnapshot(snap); err != nil {
		return fmt.Errorf("raftnode: bootstrap: %w", err)
	}
	if err := st.Save(raftpb.HardState{Term: 1, Commit: 1}, nil); err != nil {
		return fmt.Errorf("raftnode: bootstrap: %w", err)
	}
	return nil
}

// applyQueue is how many Readies' committed entries may wait for the
// apply goroutine while the run goroutine persists the next ones.
const applyQueue = 4

// applyJob is the part of one Ready that the apply goroutine handles.
type applyJob struct {
	snap raftpb.Snapshot // a snapshot from the leader to restore first, if not empty
	ents []raftpb.Entry  // committed entries
	// done, when not nil, is closed once the job is applied: the run
	// goroutine waits for it before Advance.
	done chan struct{}
}

// run is the only goroutine that calls Ready/Advance, writes the raft log
// and sends messages. It hands committed entries to the apply goroutine
// and goes on persisting the next Ready while they are applied, so that
// the fsync of one batch of writes overlaps the apply (and the replies)
// of the one before.
func (n *Node) run() {
	defer close(n.done)
	defer n.role.Store(int32(RoleStopped))
	defer func() {
		n.rnMu.Lock()
		n.rnStopped = true
		n.rnMu.Unlock()
	}()
	defer func() {
		// The apply goroutine finishes the job it is in (entries it has
		// not started are in the log and are applied after a restart).
		close(n.applyc)
		<-n.applyDone
		n.snapWG.Wait()
	}()
	// The wall clock, unless Config.Ticks replaces it (a nil channel
	// never fires).
	var wall <-chan time.Time
	if n.cfg.Ticks == nil {
		ticker := time.NewTicker(n.cfg.TickInterval)
		defer ticker.Stop()
		wall = ticker.C
	}
	for {
		// Every Ready raft has is handled before waiting: the Ready that
		// commits what the previous one persisted follows at once.
		n.rnMu.Lock()
		var rd raft.Ready
		ready := n.rn.HasReady()
		if ready {
			rd = n.rn.Ready()
		}
		n.rnMu.Unlock()
		if ready {
			if err := n.handleReady(rd); err != nil {
				if !errors.Is(err, errStopping) {
					n.err = err
					n.log.Error("raftnode: stopping after a fatal error", "err", err)
				}
				return
			}
			n.rnMu.Lock()
			n.rn.Advance(rd)
			n.rnMu.Unlock()
		}
		// Under load there is always a Ready: the clock, a failure and
		// Stop are still looked at between two (a closed channel in
		// place of wake makes the select return at once).
		wake := n.wake
		if ready {
			wake = closedChan
		}
		select {
		case <-wall:
			n.tick()
		case <-n.cfg.Ticks:
			n.tick()
		case <-wake:
		case <-n.failc:
			n.err = n.applyErr
			n.log.Error("raftnode: stopping after a fatal error", "err", n.err)
			return
		case <-n.stopc:
			return
		}
	}
}

// closedChan is always ready to receive from.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// withRaft calls fn with the RawNode under rnMu and wakes the run
// goroutine, which takes the Ready fn may have caused. It returns
// raft.ErrStopped once the run goroutine has ended.
func (n *Node) withRaft(fn func(rn *raft.RawNode) error) error {
	n.rnMu.Lock()
	if n.rnStopped {
		n.rnMu.Unlock()
		return raft.ErrStopped
	}
	err := fn(n.rn)
	n.rnMu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return err
}

// propose calls fn under rnMu once raft knows a leader, waiting
// for one until ctx is done, as raft.Node's proposals do.
func (n *Node) propose(ctx context.Context, fn func(rn *raft.RawNode) error) error {
	for {
		n.leadWaitMu.Lock()
		wait := n.leadWait
		n.leadWaitMu.Unlock()
		noLeader := false
		err := n.withRaft(func(rn *raft.RawNode) error {
			if rn.BasicStatus().Lead == raft.None {
				noLeader = true
				return nil
			}
			return fn(rn)
		})
		if !noLeader {
			return n.mapErr(err)
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			return n.stoppedErr()
		}
	}
}

// tick advances raft's clock and, on a learner, notices a silent leader.
func (n *Node) tick() {
	n.rnMu.Lock()
	n.rn.Tick()
	n.rnMu.Unlock()
	if n.snapDeferred.Load() {
		// An empty job makes the apply goroutine look again whether
		// the deferred snapshot is due (it may get no entries to apply).
		select {
		case n.applyc <- applyJob{}:
		default:
		}
	}
	now := n.tickCount.Add(1)
	if Role(n.role.Load()) != RoleLearner || n.raftLead.Load() == 0 {
		return
	}
	if now-n.contact.Load() <= 2*uint64(n.cfg.ElectionTick) {
		return
	}
	n.leadMu.Lock()
	defer n.leadMu.Unlock()
	if n.silent {
		return
	}
	n.silent = true
	n.leader.Store(0)
	n.notifyLeader(LeaderChange{Term: n.term.Load()})
	n.log.Warn("raftnode: no message from the leader for two election timeouts; reporting it lost", "leader", n.raftLead.Load())
}

// heard records a message from the leader (for a learner's silence check).
func (n *Node) heard(from uint64) {
	lead := n.raftLead.Load()
	if from == 0 || from != lead {
		return
	}
	n.contact.Store(n.tickCount.Load())
	n.leadMu.Lock()
	defer n.leadMu.Unlock()
	if !n.silent || n.raftLead.Load() != lead {
		return
	}
	n.silent = false
	n.leader.Store(lead)
	n.notifiedTerm = n.term.Load()
	n.notifyLeader(LeaderChange{Leader: lead, Term: n.notifiedTerm})
	n.log.Info("raftnode: the leader is heard from again", "leader", lead)
}

// errStopping ends the run loop quietly: Stop was called while it waited.
var errStopping = errors.New("stopping")

// handleReady processes one Ready in the order raft requires.
func (n *Node) handleReady(rd raft.Ready) error {
	if !raft.IsEmptyHardState(rd.HardState) {
		n.term.Store(rd.HardState.Term)
	}
	if rd.SoftState != nil {
		n.role.Store(int32(n.roleFor(rd.SoftState.RaftState)))
		lead := rd.SoftState.Lead
		if n.raftLead.Swap(lead) != lead {
			n.leadWaitMu.Lock()
			close(n.leadWait)
			n.leadWait = make(chan struct{})
			n.leadWaitMu.Unlock()
		}
		n.contact.Store(n.tickCount.Load())
		n.leadMu.Lock()
		n.silent = false
		if old := n.leader.Swap(lead); old != lead {
			n.notifiedTerm = n.term.Load()
			n.notifyLeader(LeaderChange{Leader: lead, Term: n.notifiedTerm, IsSelf: lead == n.id})
		}
		n.leadMu.Unlock()
	}
	// A new term under the same leader is a change of leadership too:
	// what was forwarded to the leader in the old term may be lost
	// without raft saying so (a learner or follower sees no SoftState
	// change when the same member wins again).
	n.leadMu.Lock()
	if t, lead := n.term.Load(), n.leader.Load(); t != n.notifiedTerm && lead != 0 {
		n.notifiedTerm = t
		n.notifyLeader(LeaderChange{Leader: lead, Term: t, IsSelf: lead == n.id})
	}
	n.leadMu.Unlock()
	for _, rs := range rd.ReadStates {
		n.deliverRead(rs)
	}

	// Committed entries that were persisted by an earlier Ready (always,
	// on a leader and in a group of one: it persists before it sends or
	// counts its own acknowledgement) go to the apply goroutine first,
	// so that they are applied and answered while this Ready's entries
	// are fsynced: a write then waits for one fsync, not for its own and
	// the next batch's. A follower may learn that entries are committed
	// in the same Ready that brings them (committed on a quorum without
	// it); those, and a snapshot from the leader, are applied after the
	// persist below, because the snapshots the apply goroutine takes
	// must not run ahead of this member's log on disk.
	var job applyJob
	hasWork := !raft.IsEmptySnap(rd.Snapshot) || len(rd.CommittedEntries) > 0
	if hasWork {
		job = applyJob{snap: rd.Snapshot, ents: rd.CommittedEntries}
		if !raft.IsEmptySnap(rd.Snapshot) || hasConfChange(rd.CommittedEntries) {
			// Applied before Advance: raft's next Readies build on the
			// restored state, and raft must know a new configuration
			// before it counts votes or acks again (etcd waits for the
			// same reasons).
			job.done = make(chan struct{})
		}
	}
	early := applyBeforePersist(rd, n.persisted)
	if early {
		if err := n.handOff(job); err != nil {
			return err
		}
		// The apply goroutine, just woken, would wait in this P's
		// run-next slot while this goroutine sits in the fsync below
		// holding the P, until sysmon takes the P back (20–40 µs, most
		// of an fsync; go tool trace: 40 µs average wait under set).
		// Yielding lets it start now; this goroutine goes on on
		// whichever P is free first. Measured with two servers under
		// load at once: +3–7 % set, p99 3.0–3.4 → 2.3–2.8 ms.
		runtime.Gosched()
	}

	// 1. Persist. A received snapshot goes first (file, WAL record) so
	// that the hard state and entries that follow it in the WAL can be
	// replayed from it; then the hard state and entries, fsynced.
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.st.SaveSnapshot(rd.Snapshot); err != nil {
			return fmt.Errorf("saving snapshot %d: %w", rd.Snapshot.Metadata.Index, err)
		}
		n.persisted = rd.Snapshot.Metadata.Index
	}
	if err := n.st.Save(rd.HardState, rd.Entries); err != nil {
		return fmt.Errorf("saving %d entries: %w", len(rd.Entries), err)
	}
	if len(rd.Entries) > 0 {
		// The log on disk now ends here (entries may also have replaced
		// a conflicting uncommitted tail).
		n.persisted = rd.Entries[len(rd.Entries)-1].Index
	}

	// 2. Send, only now that what the messages promise is durable: a vote,
	// an append acknowledgement, or (from a leader) entries it must not
	// lose. etcd lets a leader send before its own fsync (raft thesis
	// 10.2.1) to overlap it with the followers' fsync; we keep the plain
	// order, which costs the leader's fsync latency once per round trip
	// and needs no reasoning about which messages may go early.
	if len(rd.Messages) > 0 {
		n.tr.Send(n.withoutSnapshots(rd.Messages))
	}

	// 3. Apply, on the apply goroutine, if not handed over above.
	// Committed entries are durable on a quorum, and their order is
	// fixed, so they may be applied while the next Ready is persisted.
	if !hasWork {
		return nil
	}
	if !early {
		if err := n.handOff(job); err != nil {
			return err
		}
	}
	if job.done != nil {
		select {
		case <-job.done:
		case <-n.failc:
			return n.applyErr
		case <-n.stopc:
			return errStopping
		}
	}
	return nil
}

// applyBeforePersist reports whether rd's committed entries may go to the
// apply goroutine before rd is persisted: there are some, no snapshot
// comes with them, and all of them are in the log on disk, which ends at
// index persisted.
func applyBeforePersist(rd raft.Ready, persisted uint64) bool {
	return raft.IsEmptySnap(rd.Snapshot) && len(rd.CommittedEntries) > 0 &&
		rd.CommittedEntries[len(rd.CommittedEntries)-1].Index <= persisted
}

// handOff queues a job for the apply goroutine.
func (n *Node) handOff(job applyJob) error {
	select {
	case n.applyc <- job:
		return nil
	case <-n.failc:
		return n.applyErr
	case <-n.stopc:
		return errStopping
	}
}

// withoutSnapshots returns msgs minus the snapshots raft built from the
// MemoryStorage, which hold no data: each is sent by a goroutine once its
// data is read from the snapshot file, so the read does not stall the run
// loop. A snapshot whose file cannot be read is reported as failed (raft
// retries later); it is never sent without its data, which the follower
// would restore as an empty state.
func (n *Node) withoutSnapshots(msgs []raftpb.Message) []raftpb.Message {
	bare := false
	for i := range msgs {
		if msgs[i].Type == raftpb.MsgSnap && msgs[i].Snapshot != nil && len(msgs[i].Snapshot.Data) == 0 {
			bare = true
			break
		}
	}
	if !bare {
		return msgs // the usual case: nothing to fill in, no copy
	}
	out := msgs[:0:0]
	for i := range msgs {
		m := msgs[i]
		if m.Type != raftpb.MsgSnap || m.Snapshot == nil || len(m.Snapshot.Data) > 0 {
			out = append(out, m)
			continue
		}
		n.snapSends.Add(1)
		go func() {
			defer n.snapSends.Done()
			md := m.Snapshot.Metadata
			data, err := n.st.SnapshotData(md.Index, md.Term)
			if err != nil {
				n.log.Error("raftnode: reading a snapshot to send", "to", m.To, "index", md.Index, "err", err)
				n.ReportSnapshot(m.To, raft.SnapshotFailure)
				return
			}
			snap := *m.Snapshot
			snap.Data = data
			m.Snapshot = &snap
			select {
			case <-n.stopc:
				return
			default:
			}
			n.tr.Send([]raftpb.Message{m})
		}()
	}
	return out
}

func hasConfChange(ents []raftpb.Entry) bool {
	for i := range ents {
		if ents[i].Type == raftpb.EntryConfChange || ents[i].Type == raftpb.EntryConfChangeV2 {
			return true
		}
	}
	return false
}

// applyLoop is the only goroutine that calls the state machine and takes
// snapshots. A fatal error closes failc, which stops the run goroutine.
func (n *Node) applyLoop() {
	defer close(n.applyDone)
	for job := range n.applyc {
		select {
		case <-n.stopc:
			// Stopping: skip what is queued (it is in the log).
			if job.done != nil {
				close(job.done)
			}
			continue
		default:
		}
		err := n.applyJob(job)
		if job.done != nil {
			close(job.done)
		}
		if err != nil {
			n.fail(err)
			return
		}
	}
}

func (n *Node) applyJob(job applyJob) error {
	// A snapshot replaces the state, then committed entries follow.
	if !raft.IsEmptySnap(job.snap) {
		snap := job.snap
		n.confMu.Lock()
		n.confState = snap.Metadata.ConfState
		n.confMu.Unlock()
		n.refreshRole()
		if err := n.sm.Restore(snap.Data, snap.Metadata.Index); err != nil {
			return fmt.Errorf("restoring snapshot %d: %w", snap.Metadata.Index, err)
		}
		n.snapIndex = snap.Metadata.Index
		n.nextSnap = n.snapIndex + n.cfg.SnapCount
		n.setApplied(snap.Metadata.Index)
		n.log.Info("raftnode: restored snapshot from leader", "index", snap.Metadata.Index)
	}
	if err := n.apply(job.ents); err != nil {
		return err
	}
	// Snapshot and compact when due.
	return n.maybeSnapshot()
}

// apply passes committed normal entries to the state machine in batches
// and applies configuration changes to raft between them.
func (n *Node) apply(ents []raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	applied := n.applied.Load()
	batch := n.batch[:0]
	flush := func() {
		if len(batch) > 0 {
			n.sm.Apply(batch)
			clear(batch)
			batch = batch[:0]
		}
	}
	for _, e := range ents {
		if e.Index <= applied {
			continue // already in a snapshot we restored
		}
		switch e.Type {
		case raftpb.EntryNormal:
			if len(e.Data) > 0 {
				batch = append(batch, e)
			}
		case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
			flush()
			cc, err := decodeConfChange(e)
			if err != nil {
				return fmt.Errorf("entry %d: %w", e.Index, err)
			}
			n.rnMu.Lock()
			cs := n.rn.ApplyConfChange(cc)
			n.rnMu.Unlock()
			n.confMu.Lock()
			n.confState = *cs
			n.confMu.Unlock()
			n.refreshRole()
			n.log.Info("raftnode: configuration changed", "index", e.Index, "voters", cs.Voters, "learners", cs.Learners)
			n.confSnap = true
			if n.cfg.OnConfChange != nil {
				n.cfg.OnConfChange(e.Index, cc, *cs)
			}
		}
	}
	flush()
	n.batch = batch
	n.setApplied(ents[len(ents)-1].Index)
	return nil
}

func decodeConfChange(e raftpb.Entry) (raftpb.ConfChangeV2, error) {
	if e.Type == raftpb.EntryConfChange {
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			return raftpb.ConfChangeV2{}, err
		}
		return cc.AsV2(), nil
	}
	var cc raftpb.ConfChangeV2
	err := cc.Unmarshal(e.Data)
	return cc, err
}

// maybeSnapshot takes a snapshot when one is due. The state machine
// captures its state here, on the apply goroutine; writing it into the
// snapshot file, the file's fsync, the WAL snapshot record, the compaction
// and the purge follow on a goroutine of their own while applying goes on.
// One snapshot is in progress at a time: a snapshot due while the previous
// one is being written or committed waits for the next batch.
func (n *Node) maybeSnapshot() error {
	if n.confSnapRetry.Swap(false) {
		n.confSnap = true
	}
	applied := n.applied.Load()
	if (applied < n.nextSnap && !n.confSnap) || applied <= n.snapIndex {
		return nil
	}
	if n.snapBusy.Load() {
		n.snapDeferred.Store(true) // due once the one in progress is done
		return nil
	}
	if cost := time.Duration(n.snapCost.Load()); !n.confSnap && cost > snapCheap && time.Since(n.snapStart) < snapDuty*cost {
		// Writing a snapshot walks the whole tree: with a large tree
		// under heavy writes, one every SnapCount entries would take
		// most of a core (measured: a quarter of the server's CPU
		// under create, the tree growing to 1.5M znodes). Snapshots
		// then keep to about 1/snapDuty of the time; the log between
		// two grows instead (a longer replay after a restart). If the
		// writes stop, the run loop's clock brings the apply goroutine
		// back here (snapDeferred), so the log is compacted anyway.
		n.snapDeferred.Store(true)
		return nil
	}
	n.snapDeferred.Store(false)
	confSnap := n.confSnap
	n.confSnap = false
	write, err := n.sm.Snapshot()
	if err != nil {
		n.log.Error("raftnode: snapshot failed; retrying later", "index", applied, "err", err)
		n.nextSnap = applied + n.cfg.SnapCount
		n.confSnap = confSnap
		return nil
	}
	n.confMu.Lock()
	cs := n.confState
	n.confMu.Unlock()
	n.snapIndex = applied
	n.nextSnap = applied + n.cfg.SnapCount
	n.snapStart = time.Now()
	n.snapBusy.Store(true)
	n.snapWG.Add(1)
	// The state is written, fsynced and installed while applying goes on.
	go func() {
		defer n.snapWG.Done()
		defer n.snapBusy.Store(false)
		wrote := false
		start := time.Now()
		p, err := n.st.BeginSnapshot(applied, &cs, func(w io.Writer) error {
			wrote = true
			return write(w)
		})
		if !wrote {
			write(nil)
		}
		if err != nil {
			switch {
			case errors.Is(err, raft.ErrSnapOutOfDate):
				// A newer snapshot (from the leader) came first.
			case errors.Is(err, storage.ErrFailed) || errors.Is(err, storage.ErrClosed) || errors.Is(err, storage.ErrSnapshotIndex):
				n.fail(fmt.Errorf("creating snapshot at %d: %w", applied, err))
			default:
				// The state machine failed, the data is over the
				// limit, or the disk refused the file: nothing
				// changed; the next snapshot is due after SnapCount
				// more entries (or the next configuration change).
				n.log.Error("raftnode: snapshot failed; retrying later", "index", applied, "err", err)
				if confSnap {
					n.confSnapRetry.Store(true)
				}
			}
			return
		}
		written := time.Now()
		n.snapCost.Store(int64(written.Sub(start)))
		if err := p.Commit(); err != nil {
			if errors.Is(err, raft.ErrSnapOutOfDate) {
				return
			}
			n.fail(fmt.Errorf("committing snapshot at %d: %w", p.Index(), err))
			return
		}
		n.log.Info("raftnode: snapshot taken", "index", p.Index(), "bytes", p.Bytes(),
			"write", written.Sub(start).Round(time.Millisecond), "commit", time.Since(written).Round(time.Millisecond))
	}()
	return nil
}

// snapDuty bounds how often snapshots are written: the next one starts no
// earlier than snapDuty times the last one's writing time after the last
// one started, so snapshots take at most about 1/snapDuty of the time.
// Snapshots written in under snapCheap are not held back.
const (
	snapDuty  = 8
	snapCheap = 20 * time.Millisecond
)

// fail stops the node after a fatal error of the apply goroutine or of a
// snapshot's commit: the run goroutine sees failc closed and stops.
func (n *Node) fail(err error) {
	n.failOnce.Do(func() {
		n.applyErr = err
		close(n.failc)
	})
}

// roleFor maps raft's state to a Role; a follower that is a learner in the
// current configuration is a learner.
func (n *Node) roleFor(state raft.StateType) Role {
	switch state {
	case raft.StateLeader:
		return RoleLeader
	case raft.StateCandidate:
		return RoleCandidate
	case raft.StatePreCandidate:
		return RolePreCandidate
	}
	n.confMu.Lock()
	learner := slices.Contains(n.confState.Learners, n.id) || slices.Contains(n.confState.LearnersNext, n.id)
	n.confMu.Unlock()
	if learner {
		return RoleLearner
	}
	return RoleFollower
}

// refreshRole re-evaluates learnership after the configuration changed.
func (n *Node) refreshRole() {
	if r := Role(n.role.Load()); r == RoleFollower || r == RoleLearner {
		n.role.Store(int32(n.roleFor(raft.StateFollower)))
	}
}

func (n *Node) setApplied(i uint64) {
	if i <= n.applied.Load() {
		return
	}
	n.applied.Store(i)
	n.appliedMu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.appliedMu.Unlock()
}

func (n *Node) notifyLeader(lc LeaderChange) {
	for {
		select {
		case n.leaderCh <- lc:
			return
		default:
			select {
			case <-n.leaderCh: // replace the value nobody read yet
			default:
			}
		}
	}
}

// Propose submits data as a new log entry. It returns once raft has
// accepted it for replication — on a follower, once it was handed to the
// leader — not once it is committed: commitment is observed through
// StateMachine.Apply, where the caller recognises its entry by an id it
// put inside data. An accepted proposal can still be lost (a leader change
// before it is committed); callers that must know should time out and
// retry, making the retried entry recognisable as a duplicate.
//
// While no leader is known, Propose blocks until one is or ctx is done.
// Errors: ctx's error, ErrProposalDropped (retry later), ErrEmptyProposal,
// ErrStopped. It may be called from any goroutine, except from within the
// StateMachine's methods.
func (n *Node) Propose(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return ErrEmptyProposal
	}
	return n.propose(ctx, func(rn *raft.RawNode) error { return rn.Propose(data) })
}

// ProposeBatch proposes several entries as one raft message: they enter
// the log in the given order, next to each other, for the price of one
// hand-off to raft's goroutine. One entry is proposed as by Propose. A
// batch is not waited for: raft may drop it (ErrProposalDropped for
// Propose: a leadership transfer in progress, the uncommitted-size limit,
// or no leader to forward to) without an error here, so the caller must
// notice entries that never apply (a later proposal of the same caller
// applying first, or a leader change).
func (n *Node) ProposeBatch(ctx context.Context, datas [][]byte) error {
	if len(datas) == 1 {
		return n.Propose(ctx, datas[0])
	}
	ents := make([]raftpb.Entry, len(datas))
	for i, d := range datas {
		if len(d) == 0 {
			return ErrEmptyProposal
		}
		ents[i].Data = d
	}
	return n.propose(ctx, func(rn *raft.RawNode) error {
		return rn.Step(raftpb.Message{Type: raftpb.MsgProp, From: n.id, Entries: ents})
	})
}

// ProposeConfChange proposes a membership change: adding or removing
// voters and learners (ConfChangeAddNode, ConfChangeAddLearnerNode,
// ConfChangeRemoveNode, several at once for a joint change). Like Propose,
// it returns once raft accepted the proposal; the change takes effect when
// its entry is applied, which Config.OnConfChange reports on every member.
func (n *Node) ProposeConfChange(ctx context.Context, cc raftpb.ConfChangeV2) error {
	return n.propose(ctx, func(rn *raft.RawNode) error { return rn.ProposeConfChange(cc) })
}

// ReadIndex is a linearizable read barrier: it returns an index such that
// the state after applying it reflects every write committed before
// ReadIndex was called. The caller waits until AppliedIndex reaches it
// (WaitApplied) and then reads its local state. On a follower or learner
// the request goes to the leader, which confirms its leadership with a
// quorum round first (raft's ReadOnlySafe). Requests lost to a leader
// change are retried until ctx is done.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	rctx := make([]byte, 16)
	ch := make(chan uint64, 1)
	n.readMu.Lock()
	n.readSeq++
	copy(rctx, n.readNonce[:])
	binary.BigEndian.PutUint64(rctx[8:], n.readSeq)
	n.reads[string(rctx)] = ch
	n.readMu.Unlock()
	defer func() {
		n.readMu.Lock()
		delete(n.reads, string(rctx))
		n.readMu.Unlock()
	}()

	retry := time.NewTicker(n.readRetryInterval())
	defer retry.Stop()
	for {
		if err := n.withRaft(func(rn *raft.RawNode) error { rn.ReadIndex(rctx); return nil }); err != nil {
			return 0, n.mapErr(err)
		}
		select {
		case idx := <-ch:
			return idx, nil
		case <-retry.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-n.done:
			return 0, n.stoppedErr()
		}
	}
}

func (n *Node) readRetryInterval() time.Duration {
	return max(time.Duration(n.cfg.ElectionTick)*n.cfg.TickInterval/2, 2*time.Duration(n.cfg.HeartbeatTick)*n.cfg.TickInterval)
}

func (n *Node) deliverRead(rs raft.ReadState) {
	n.readMu.Lock()
	ch := n.reads[string(rs.RequestCtx)]
	n.readMu.Unlock()
	if ch != nil {
		select {
		case ch <- rs.Index:
		default: // an answer to a retry already arrived
		}
	}
}

// AppliedIndex returns the index of the last entry applied to the state
// machine (or of the snapshot it was restored from).
func (n *Node) AppliedIndex() uint64 { return n.applied.Load() }

// WaitApplied blocks until AppliedIndex ≥ index, ctx is done (its error)
// or the node stops (ErrStopped).
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for {
		n.appliedMu.Lock()
		ch := n.appliedCh
		n.appliedMu.Unlock()
		if n.applied.Load() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			if n.applied.Load() >= index {
				return nil
			}
			return n.stoppedErr()
		}
	}
}

// Leader returns the leader's id as of the last Ready (0 if none known).
// It is cheap; Status asks raft itself.
func (n *Node) Leader() uint64 { return n.leader.Load() }

// Role returns the member's role as of the last Ready. It is cheap;
// Status asks raft itself.
func (n *Node) Role() Role { return Role(n.role.Load()) }

// LeaderChanges returns a channel that receives the latest leadership
// change. It holds one value: a change not yet received is replaced by a
// newer one, so a slow reader sees the latest state, not every step.
// There is one channel per Node: with several readers, each change goes
// to one of them.
func (n *Node) LeaderChanges() <-chan LeaderChange { return n.leaderCh }

// Status returns the member's current raft state. On a stopped node it
// returns Role RoleStopped.
func (n *Node) Status() Status {
	s := Status{ID: n.id, Applied: n.applied.Load(), Role: RoleStopped}
	select {
	case <-n.done:
		return s
	default:
	}
	n.rnMu.Lock()
	if n.rnStopped {
		n.rnMu.Unlock()
		return s
	}
	rs := n.rn.Status()
	n.rnMu.Unlock()
	s.Leader, s.Term, s.Commit = rs.Lead, rs.Term, rs.Commit
	switch rs.RaftState {
	case raft.StateLeader:
		s.Role = RoleLeader
	case raft.StateCandidate:
		s.Role = RoleCandidate
	case raft.StatePreCandidate:
		s.Role = RolePreCandidate
	default:
		s.Role = RoleFollower
	}
	for id := range rs.Config.Voters.IDs() {
		s.Voters = append(s.Voters, id)
	}
	for id := range rs.Config.Learners {
		s.Learners = append(s.Learners, id)
	}
	for id := range rs.Config.LearnersNext {
		s.Learners = append(s.Learners, id)
	}
	slices.Sort(s.Voters)
	slices.Sort(s.Learners)
	if s.Role == RoleFollower && slices.Contains(s.Learners, n.id) {
		s.Role = RoleLearner
	}
	if rs.Progress != nil {
		s.Match = make(map[uint64]uint64, len(rs.Progress))
		for id, pr := range rs.Progress {
			s.Match[id] = pr.Match
		}
	}
	return s
}

// TransferLeadership asks the leader to hand leadership to transferee (a
// voter) and returns without waiting for the outcome, which LeaderChanges
// reports.
func (n *Node) TransferLeadership(ctx context.Context, transferee uint64) {
	n.withRaft(func(rn *raft.RawNode) error { rn.TransferLeader(transferee); return nil })
}

// Process implements Handler: it steps an inbound message into raft.
func (n *Node) Process(ctx context.Context, m raftpb.Message) error {
	err := n.mapErr(n.withRaft(func(rn *raft.RawNode) error { return rn.Step(m) }))
	if errors.Is(err, raft.ErrStepLocalMsg) || errors.Is(err, raft.ErrStepPeerNotFound) {
		// As raft.Node does: a local message from the network, or an
		// answer from a member no longer in the configuration, is dropped.
		return nil
	}
	if err == nil {
		n.heard(m.From)
	}
	return err
}

// ReportUnreachable implements Handler.
func (n *Node) ReportUnreachable(id uint64) {
	n.withRaft(func(rn *raft.RawNode) error { rn.ReportUnreachable(id); return nil })
}

// ReportProposalLost implements Handler: waiting proposers learn through
// LeaderChanges (the same leader and term again), as when a change of
// leader may have lost their proposals.
func (n *Node) ReportProposalLost(id uint64) {
	n.leadMu.Lock()
	defer n.leadMu.Unlock()
	lead := n.leader.Load()
	if lead == 0 || lead != id {
		return // not forwarded to the leader we report; a leader change follows anyway
	}
	n.notifyLeader(LeaderChange{Leader: lead, Term: n.term.Load(), IsSelf: lead == n.id, ProposalsLost: true})
	n.log.Info("raftnode: a proposal forwarded to the leader was lost", "leader", lead)
}

// ReportSnapshot implements Handler.
func (n *Node) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	n.withRaft(func(rn *raft.RawNode) error { rn.ReportSnapshot(id, status); return nil })
}

// Done is closed when the node stops running: after Stop, or after a
// fatal error (Err).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err returns the fatal error that stopped the node (a storage write
// failed, the state machine could not restore a snapshot), or nil.
func (n *Node) Err() error {
	select {
	case <-n.done:
		return n.err
	default:
		return nil
	}
}

// Stop stops the node: the run loop, raft, and the transport, and waits
// for their goroutines. Pending and later calls return ErrStopped. The
// Storage stays open (the caller closes it). Stop is idempotent and may be
// called from any goroutine except the StateMachine's methods.
func (n *Node) Stop() {
	first := false
	n.stopOnce.Do(func() {
		first = true
		close(n.stopc)
	})
	if !first {
		<-n.stopped
		return
	}
	<-n.done
	n.snapSends.Wait()
	n.tr.Stop()
	close(n.stopped)
}

func (n *Node) stoppedErr() error {
	if err := n.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return ErrStopped
}

func (n *Node) mapErr(err error) error {
	if errors.Is(err, raft.ErrStopped) {
		return n.stoppedErr()
	}
	return err
}
