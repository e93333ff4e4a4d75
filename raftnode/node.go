package raftnode

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	// load is how Start loaded the state (set before Start returns,
	// read-only after).
	load StartupLoad

	rnMu      sync.Mutex // guards rn and rnStopped
	rn        *raft.RawNode
	rnStopped bool          // the run goroutine ended: raft is not driven any more
	wake      chan struct{} // capacity 1: raft may have a Ready for the run goroutine
	gc        groupCommit   // holding a lone entry for a second (groupcommit.go)

	leadWaitMu sync.Mutex    // guards leadWait
	leadWait   chan struct{} // closed (and replaced) when the leader raft knows changes
	st         *storage.Storage
	sm         StateMachine
	tr         Transport
	log        *slog.Logger

	// Owned by the apply goroutine (confState is also read by the run
	// goroutine, under confMu).
	confMu    sync.Mutex // guards confState
	confState raftpb.ConfState
	snapIndex uint64 // index of the newest snapshot
	nextSnap  uint64 // applied index at which the next snapshot is due
	// sinceSnap is the data size of the entries applied since the last
	// snapshot (Config.SnapBytes).
	sinceSnap uint64
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
	// lastApplyAt (apply goroutine only): when entries were last applied
	// (see applyJob, idleSnapAfter).
	lastApplyAt time.Time
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
	// or was cut off; a follower names it until its (randomized) election
	// timeout runs out. The node tracks when it last heard from the
	// leader, in ticks, and reports it lost after one election timeout of
	// silence on a follower (two on a learner), and found again on its
	// next message: nobody trusts a leader it has not heard from for
	// longer, as a ZooKeeper follower drops its leader after syncLimit.
	tickCount atomic.Uint64 // ticks so far (written by run)
	contact   atomic.Uint64 // tickCount when the leader was last heard from
	raftLead  atomic.Uint64 // the leader as raft sees it
	leadMu    sync.Mutex    // serialises changes of leader and silent with their notifications
	silent    bool          // the learner reports its leader lost
	// notifiedTerm is the term of the last LeaderChange sent with a
	// leader (guarded by leadMu).
	notifiedTerm uint64
	// heardAt holds, by member id, the tickCount when a message from
	// that member was last stepped (*atomic.Uint64): Status.Heard.
	heardAt sync.Map

	screened atomic.Uint64 // peers' messages dropped by screen: Status.Screened
	// fastElections counts campaigns started because the leader's process
	// was found gone (peerdown.go): Status.FastElections.
	fastElections atomic.Uint64
	screenLog     screenLog

	stopc    chan struct{} // closed by Stop
	done     chan struct{} // closed when run returns
	stopOnce sync.Once
	stopped  chan struct{} // closed when Stop has finished
	err      error         // why run returned, if not Stop; written before done is closed
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
	// Snapshot is the index of the newest snapshot in the storage (what
	// a lagging member is sent).
	Snapshot uint64
	// Heard lists, in increasing order, the other members a message was
	// received from within the last election timeout (ElectionTick
	// ticks). Every member answers the leader's heartbeats, so on the
	// leader these are the members up and reachable; a follower hears
	// from the leader and from candidates only.
	Heard []uint64
	// Screened counts the peers' messages dropped since start because no
	// correct member sends them (screen.go); each reason is logged.
	Screened uint64
	// CommitHolds counts the lone entries this member held back for a
	// second one as leader (group commit), CommitHoldsJoined those a
	// second one joined before the window ended.
	CommitHolds, CommitHoldsJoined uint64
	// CommitLateHolds: of CommitHolds, those that waited longer than an
	// fsync for another client's entry, one Config.Notifications named
	// as about to write.
	CommitLateHolds uint64
	// CommitPreciseHolds: of CommitHolds, those whose end was timed by
	// the kernel rather than a Go timer (holds then often ran out).
	CommitPreciseHolds uint64
	// FastElections counts the campaigns this member started because its
	// leader's peer port refused connections (its process gone), without
	// waiting for an election timeout (peerdown.go).
	FastElections uint64
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
	n.gc.max = cfg.CommitDelay
	n.gc.notes, n.gc.source = cfg.Notifications, cfg.ProposalSource
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
		// The snapshot's data is read from its file as a stream, never
		// held whole in memory.
		rc, _, err := st.OpenSnapshotData(snap.Metadata.Index, snap.Metadata.Term)
		if err != nil {
			return nil, fmt.Errorf("raftnode: opening snapshot %d: %w", snap.Metadata.Index, err)
		}
		restoreStart := time.Now()
		err = n.sm.Restore(rc, snap.Metadata.Index)
		n.load.Snapshot = time.Since(restoreStart)
		rc.Close()
		if err != nil {
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
	// The term raft starts in is the recovered one: a Ready carries a
	// hard state only when it changes, so without this a restarted
	// member would report its first leader with term 0, and the same
	// leader again as soon as the term showed in a Ready — a "new term"
	// whose LeaderChange makes the server abort the writes in flight
	// (kazoo's suite lost a request so).
	n.term.Store(hs.Term)
	n.notifiedTerm = hs.Term
	go n.applyLoop()
	go n.run()
	// Entries committed before a restart are applied before Start
	// returns, so the caller sees the state it left (the apply goroutine
	// would otherwise still be replaying them).
	replayStart := time.Now()
	if err := n.WaitApplied(context.Background(), hs.Commit); err != nil {
		n.Stop()
		return nil, fmt.Errorf("raftnode: replaying the log: %w", err)
	}
	n.load.Replay = time.Since(replayStart)
	if hs.Commit > snap.Metadata.Index {
		n.load.Entries = hs.Commit - snap.Metadata.Index
	}
	if alone {
		// Alone: no need to wait for an election timeout.
		if err := n.withRaft(func(rn *raft.RawNode) error { return rn.Campaign() }); err != nil {
			n.log.Warn("raftnode: campaign", "err", err)
		}
	}
	return n, nil
}

// StartupLoad is how Start loaded the state machine: the snapshot's
// restore, and the replay of the committed log entries after it (what
// ZooKeeper's startup_snap_load_time, startup_txns_loaded and
// startup_txns_load_time report).
type StartupLoad struct {
	Snapshot time.Duration // restoring the snapshot (0: none)
	Entries  uint64        // committed entries replayed after the snapshot
	Replay   time.Duration // applying them
}

// StartupLoad returns how Start loaded the state machine.
func (n *Node) StartupLoad() StartupLoad { return n.load }

// HasState reports whether st holds raft state: false for a fresh
// directory that was not bootstrapped or joined to a group yet.
func HasState(st *storage.Storage) bool { return !isEmpty(st) }

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
	return seed(st, peers, 1, nil)
}

// Seed bootstraps fresh storage as Start would from peers, but with data
// — the state machine's snapshot format, read from r until io.EOF and
// checked by nothing here — as the initial snapshot's data, at index
// (at least 1; term 1): Start then restores the state machine from it,
// and the group's first entry is index+1. Members seeded with the same
// peers, index and bytes start from the same log and state, as
// bootstrapped ones do. The storage must hold no raft state yet. It is
// how a state made elsewhere (an imported Apache ZooKeeper data
// directory, a backup) becomes a group's starting point; the index lets
// a state machine that numbers its state by log index (zkgo's zxids)
// continue above the state's own numbers.
func Seed(st *storage.Storage, peers []Peer, index uint64, r io.Reader) error {
	if !isEmpty(st) {
		return fmt.Errorf("%w: seeding storage that holds raft state already", ErrConfig)
	}
	if r == nil {
		return fmt.Errorf("%w: seeding without data", ErrConfig)
	}
	return seed(st, peers, max(index, 1), r)
}

// seed writes the initial configuration as a snapshot at index, with
// the snapshot data from r (none if nil).
func seed(st *storage.Storage, peers []Peer, index uint64, r io.Reader) error {
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
	snap := raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: index, Term: 1, ConfState: cs}}
	if r != nil {
		if _, err := st.ReceiveSnapshot(snap.Metadata, r); err != nil {
			return fmt.Errorf("raftnode: seed: %w", err)
		}
		snap.Data = storage.ReceivedMarker
	}
	if err := st.SaveSnapshot(snap); err != nil {
		return fmt.Errorf("raftnode: bootstrap: %w", err)
	}
	if err := st.Save(raftpb.HardState{Term: 1, Commit: index}, nil); err != nil {
		return fmt.Errorf("raftnode: bootstrap: %w", err)
	}
	return nil
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
	return n.propose(ctx, func(rn *raft.RawNode) error {
		err := rn.Propose(data)
		if err == nil {
			n.gc.proposed(1, func(int) []byte { return data })
		}
		return err
	})
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
		err := rn.Step(raftpb.Message{Type: raftpb.MsgProp, From: n.id, Entries: ents})
		if err == nil {
			n.gc.proposed(len(ents), func(i int) []byte { return ents[i].Data })
		}
		return err
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

// Status returns the member's current raft state. On a stopped node it
// returns Role RoleStopped.
func (n *Node) Status() Status {
	s := Status{ID: n.id, Applied: n.applied.Load(), Role: RoleStopped, Snapshot: n.st.SnapshotIndex()}
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
	now := n.tickCount.Load()
	n.heardAt.Range(func(id, at any) bool {
		// at may be one tick ahead of now: heard raced with a tick.
		if t := at.(*atomic.Uint64).Load(); now < t || now-t <= uint64(n.cfg.ElectionTick) {
			s.Heard = append(s.Heard, id.(uint64))
		}
		return true
	})
	slices.Sort(s.Heard)
	s.Screened = n.screened.Load()
	s.CommitHolds, s.CommitHoldsJoined, s.CommitLateHolds = n.gc.holds.Load(), n.gc.joined.Load(), n.gc.lateHolds.Load()
	s.CommitPreciseHolds = n.gc.preciseHolds.Load()
	s.FastElections = n.fastElections.Load()
	return s
}

// Process implements Handler: it steps an inbound message into raft.
func (n *Node) Process(ctx context.Context, m raftpb.Message) error {
	return n.step(m, false)
}

// step screens m (screen.go) and steps it into raft; received is set by
// ResumeSnapshot for a snapshot it received into a file and checked.
func (n *Node) step(m raftpb.Message, received bool) error {
	var why string
	var bad error
	err := n.mapErr(n.withRaft(func(rn *raft.RawNode) error {
		if why, bad = n.screen(rn, &m, received); bad != nil {
			return nil
		}
		err := rn.Step(m)
		if err == nil && m.Type == raftpb.MsgProp {
			// A follower's proposal forwarded to this leader.
			n.gc.proposed(len(m.Entries), func(i int) []byte { return m.Entries[i].Data })
		}
		return err
	}))
	if bad != nil {
		n.dropped(&m, why, bad)
		return nil
	}
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
