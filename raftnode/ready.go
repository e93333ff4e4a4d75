package raftnode

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

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
		if n.gc.clock != nil {
			n.gc.clock.stop()
		}
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
		// A lone new entry may wait for a second one to share its fsync
		// (groupcommit.go).
		held := n.maybeHold()
		// Every Ready raft has is handled before waiting: the Ready that
		// commits what the previous one persisted follows at once.
		n.rnMu.Lock()
		var rd raft.Ready
		ready := !n.rnStopped && n.rn.HasReady()
		if ready {
			n.gc.tookReady(held)
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
			if !n.rnStopped {
				n.rn.Advance(rd)
			}
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
	err := n.callRaft(fn)
	n.rnMu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return err
}

// callRaft calls fn with rnMu held. raft panics when a peer's message
// contradicts this member's durable state — typically a leader that
// remembers this member holding entries its log no longer has, because
// the member's data directory was restored from an old backup or
// replaced. Such a member must not go on (it could vote or acknowledge on
// a log it does not hold), but neither may it crash the process: the
// panic becomes a fatal error that stops the node (Err says why), and raft
// is not called again.
func (n *Node) callRaft(fn func(rn *raft.RawNode) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			n.rnStopped = true
			n.fail(fmt.Errorf("%w: raft refused to go on: %v", ErrLogBehind, p))
			err = raft.ErrStopped
		}
	}()
	return fn(n.rn)
}

// tick advances raft's clock and, on a follower or learner, notices a
// silent leader.
func (n *Node) tick() {
	n.rnMu.Lock()
	if !n.rnStopped {
		n.callRaft(func(rn *raft.RawNode) error { rn.Tick(); return nil })
	}
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
	if every := uint64(time.Minute / n.cfg.TickInterval); every > 0 && now%every == 0 {
		// A partial snapshot file of a stream that never resumed is
		// given up (the storage keeps at most one).
		if err := n.st.RemoveStalePartials(stalePartialAge); err != nil {
			n.log.Warn("raftnode: removing stale partial snapshots", "err", err)
		}
	}
	role := Role(n.role.Load())
	if role != RoleLearner && role != RoleFollower || n.raftLead.Load() == 0 {
		return
	}
	limit := uint64(n.cfg.ElectionTick)
	if role == RoleLearner {
		limit *= 2
	}
	if now-n.contact.Load() <= limit {
		return
	}
	n.leadMu.Lock()
	defer n.leadMu.Unlock()
	if n.silent {
		return
	}
	n.silent = true
	n.leader.Store(0)
	n.notifyLeader(LeaderChange{Term: n.term.Load(), Silent: true})
	n.log.Warn("raftnode: no message from the leader for an election timeout; reporting it lost", "leader", n.raftLead.Load(), "role", role.String())
}

// heard records a message from member from (Status.Heard) and, from the
// leader, for the silence check.
func (n *Node) heard(from uint64) {
	if from != 0 && from != n.id {
		at, ok := n.heardAt.Load(from)
		if !ok {
			at, _ = n.heardAt.LoadOrStore(from, new(atomic.Uint64))
		}
		at.(*atomic.Uint64).Store(n.tickCount.Load())
	}
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

	// Messages that promise nothing about this member's disk (a leader's
	// appends and heartbeats, a candidate's vote requests) go before the
	// persist, so that the followers' fsyncs overlap the leader's (raft
	// thesis 10.2.1; etcd's server does the same). The leader counts its
	// own acknowledgement of new entries only once they are persisted:
	// go.etcd.io/raft ≥ 3.6 queues that self-acknowledgement, like every
	// vote and append response, until Advance (raft.go, msgsAfterAppend),
	// and those responses are the messages that wait (sendFirst).
	msgs := rd.Messages
	if first, rest := sendFirst(msgs); len(first) > 0 {
		n.tr.Send(first)
		msgs = rest
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
	saveStart := time.Now()
	if err := n.st.Save(rd.HardState, rd.Entries); err != nil {
		return fmt.Errorf("saving %d entries: %w", len(rd.Entries), err)
	}
	if len(rd.Entries) > 0 {
		n.gc.synced(time.Since(saveStart))
		// The log on disk now ends here (entries may also have replaced
		// a conflicting uncommitted tail).
		n.persisted = rd.Entries[len(rd.Entries)-1].Index
	}

	// 2. Send the rest, now that what they promise is durable: a vote or
	// an append acknowledgement (and, when a snapshot goes out, every
	// message of the Ready, in raft's order).
	if len(msgs) > 0 {
		n.tr.Send(n.withoutSnapshots(msgs))
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

// sendFirst splits a Ready's messages into those that may be sent before
// its entries and hard state are persisted and the rest, keeping raft's
// order within each. Only vote and append responses (MsgVoteResp,
// MsgPreVoteResp, MsgAppResp) promise something about this member's
// disk; raft puts them after all other messages of a Ready. A Ready with
// a snapshot to send keeps every message for after the persist, as
// before, so that nothing overtakes the snapshot.
func sendFirst(msgs []raftpb.Message) (first, rest []raftpb.Message) {
	cut := len(msgs)
	for i := range msgs {
		switch msgs[i].Type {
		case raftpb.MsgSnap:
			return nil, msgs
		case raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp:
			if i < cut {
				cut = i
			}
		}
	}
	// Nothing after the first response may go early either: raft's order
	// to one peer is kept.
	return msgs[:cut], msgs[cut:]
}

// applyBeforePersist reports whether rd's committed entries may go to the
// apply goroutine before rd is persisted: there are some, no snapshot
// comes with them, and all of them are in the log on disk, which ends at
// index persisted.
func applyBeforePersist(rd raft.Ready, persisted uint64) bool {
	return raft.IsEmptySnap(rd.Snapshot) && len(rd.CommittedEntries) > 0 &&
		rd.CommittedEntries[len(rd.CommittedEntries)-1].Index <= persisted
}

func hasConfChange(ents []raftpb.Entry) bool {
	for i := range ents {
		if ents[i].Type == raftpb.EntryConfChange || ents[i].Type == raftpb.EntryConfChangeV2 {
			return true
		}
	}
	return false
}
