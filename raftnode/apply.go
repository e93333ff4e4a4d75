package raftnode

import (
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// applyQueue is how many Readies' committed entries may wait for the
// apply goroutine while the run goroutine persists the next ones.
const applyQueue = 4

// idleSnapAfter is how long nothing must be applied for a snapshot held
// back by its duty cycle (snapDuty) to be taken at once.
const idleSnapAfter = time.Second

// applyJob is the part of one Ready that the apply goroutine handles.
type applyJob struct {
	snap raftpb.Snapshot // a snapshot from the leader to restore first, if not empty
	ents []raftpb.Entry  // committed entries
	// done, when not nil, is closed once the job is applied: the run
	// goroutine waits for it before Advance.
	done chan struct{}
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
		if err := n.restore(snap); err != nil {
			return fmt.Errorf("restoring snapshot %d: %w", snap.Metadata.Index, err)
		}
		n.snapIndex = snap.Metadata.Index
		n.nextSnap = n.snapIndex + n.cfg.SnapCount
		n.sinceSnap = 0
		n.setApplied(snap.Metadata.Index)
		n.log.Info("raftnode: restored snapshot from leader", "index", snap.Metadata.Index)
	}
	if err := n.apply(job.ents); err != nil {
		return err
	}
	// Snapshot and compact when due. Once nothing was applied for
	// idleSnapAfter, the writes have stopped and a deferred snapshot need
	// not wait for its duty cycle: nobody's requests pay for it now, and
	// the log it compacts is given back (memory, replay time) at once.
	now := time.Now()
	if len(job.ents) > 0 {
		n.lastApplyAt = now
	}
	return n.maybeSnapshot(now.Sub(n.lastApplyAt) >= idleSnapAfter)
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
		n.sinceSnap += uint64(len(e.Data))
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
			cs, err := n.applyConfChange(cc)
			if err != nil {
				// Every member refuses it alike: it is a no-op.
				n.log.Error("raftnode: a configuration change in the log cannot be applied; ignored", "index", e.Index, "err", err)
				continue
			}
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

// applyConfChange applies cc to raft. raft panics on a change that does
// not fit the configuration (leaving a joint configuration it is not in,
// say) before it changes anything; no leader proposes one, but a log may
// hold one a peer forged: it is refused, the same way on every member.
func (n *Node) applyConfChange(cc raftpb.ConfChangeV2) (cs *raftpb.ConfState, err error) {
	n.rnMu.Lock()
	defer n.rnMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			cs, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return n.rn.ApplyConfChange(cc), nil
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

// fail stops the node after a fatal error of the apply goroutine or of a
// snapshot's commit: the run goroutine sees failc closed and stops.
func (n *Node) fail(err error) {
	n.failOnce.Do(func() {
		n.applyErr = err
		close(n.failc)
	})
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
