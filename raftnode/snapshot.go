package raftnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

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
			if ss, ok := n.tr.(SnapshotStreamer); ok {
				rc, size, err := n.st.OpenSnapshotData(md.Index, md.Term)
				if err != nil {
					n.log.Error("raftnode: opening a snapshot to send", "to", m.To, "index", md.Index, "err", err)
					n.ReportSnapshot(m.To, raft.SnapshotFailure)
					return
				}
				n.log.Info("raftnode: sending snapshot", "to", m.To, "index", md.Index, "bytes", size)
				ss.SendSnapshot(m, rc, size)
				return
			}
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

// maybeSnapshot takes a snapshot when one is due. The state machine
// captures its state here, on the apply goroutine; writing it into the
// snapshot file, the file's fsync, the WAL snapshot record, the compaction
// and the purge follow on a goroutine of their own while applying goes on.
// One snapshot is in progress at a time: a snapshot due while the previous
// one is being written or committed waits for the next batch. idle: no
// entry was applied for idleSnapAfter; the duty cycle does not apply.
func (n *Node) maybeSnapshot(idle bool) error {
	if n.confSnapRetry.Swap(false) {
		n.confSnap = true
	}
	applied := n.applied.Load()
	due := applied >= n.nextSnap || n.sinceSnap >= n.cfg.SnapBytes
	if (!due && !n.confSnap) || applied <= n.snapIndex {
		return nil
	}
	if n.snapBusy.Load() {
		n.snapDeferred.Store(true) // due once the one in progress is done
		return nil
	}
	if cost := time.Duration(n.snapCost.Load()); !n.confSnap && !idle && cost > snapCheap && time.Since(n.snapStart) < snapDuty*cost &&
		n.sinceSnap/snapForceFactor < n.cfg.SnapBytes {
		// Writing a snapshot walks the whole tree: with a large tree
		// under heavy writes, one every SnapCount entries would take
		// most of a core (measured: a quarter of the server's CPU
		// under create, the tree growing to 1.5M znodes). Snapshots
		// then keep to about 1/snapDuty of the time; the log between
		// two grows instead (a longer replay after a restart). If the
		// writes stop, the run loop's clock brings the apply goroutine
		// back here (snapDeferred), and once nothing was applied for
		// idleSnapAfter the snapshot is taken whatever its cost.
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
		n.sinceSnap = 0
		n.confSnap = confSnap
		return nil
	}
	n.confMu.Lock()
	cs := n.confState
	n.confMu.Unlock()
	n.snapIndex = applied
	n.nextSnap = applied + n.cfg.SnapCount
	released := n.sinceSnap
	n.sinceSnap = 0
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
				// limit, or the disk refused the file
				// (storage.ErrSnapshotNotTaken): nothing changed;
				// the next snapshot is due after SnapCount more
				// entries (or the next configuration change).
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
			switch {
			case errors.Is(err, raft.ErrSnapOutOfDate):
			case errors.Is(err, storage.ErrSnapshotNotTaken):
				// The file's fsync failed before anything was
				// installed: the log stays whole on disk, so the
				// member goes on without this snapshot, its log
				// growing until one succeeds. (A disk that fails
				// the WAL's writes too stops the member there.)
				n.log.Error("raftnode: snapshot failed; retrying later", "index", applied, "err", err)
				if confSnap {
					n.confSnapRetry.Store(true)
				}
			default:
				// Installing it had begun: the storage failed.
				n.fail(fmt.Errorf("committing snapshot at %d: %w", p.Index(), err))
			}
			return
		}
		if n.cfg.OnSnapshot != nil {
			n.cfg.OnSnapshot(p.Bytes(), time.Since(start))
		}
		if n.cfg.OnLogCompacted != nil {
			n.cfg.OnLogCompacted(released)
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
	// snapForceFactor: once the log since the last snapshot holds this
	// many times SnapBytes, a snapshot is taken whatever its cost — the
	// in-memory log stays bounded even when snapshots are slow.
	snapForceFactor = 4
)

// restore hands a snapshot from the leader to the state machine: its data
// is read from the file the storage received it into (ReceivedMarker), or
// from the message itself (transports that do not stream).
func (n *Node) restore(snap raftpb.Snapshot) error {
	var r io.Reader
	switch {
	case storage.IsReceived(snap.Data):
		rc, _, err := n.st.OpenSnapshotData(snap.Metadata.Index, snap.Metadata.Term)
		if err != nil {
			return err
		}
		defer rc.Close()
		r = rc
	case len(snap.Data) > 0:
		r = bytes.NewReader(snap.Data)
	}
	return n.sm.Restore(r, snap.Metadata.Index)
}

// ProcessSnapshot implements Handler: the snapshot's data goes into a
// file of the storage as it arrives, then the snapshot is stepped into
// raft with storage.ReceivedMarker as its data (SaveSnapshot installs the
// file, restore reads it).
func (n *Node) ProcessSnapshot(ctx context.Context, m raftpb.Message, data io.Reader) error {
	return n.ResumeSnapshot(ctx, m, 0, data)
}

// HeldSnapshot implements SnapshotResumer: what a broken stream of m's
// snapshot left in the storage's partial file.
func (n *Node) HeldSnapshot(m raftpb.Message) (int64, uint32, error) {
	if m.Type != raftpb.MsgSnap || m.Snapshot == nil {
		return 0, 0, nil
	}
	return n.st.HeldSnapshot(m.Snapshot.Metadata)
}

// ResumeSnapshot implements SnapshotResumer: ProcessSnapshot for a stream
// whose data starts after the off bytes HeldSnapshot reported.
func (n *Node) ResumeSnapshot(ctx context.Context, m raftpb.Message, off int64, data io.Reader) error {
	if m.Type != raftpb.MsgSnap || m.Snapshot == nil {
		return fmt.Errorf("raftnode: a snapshot stream carried a %v", m.Type)
	}
	if err := n.fromLeader(&m); err != nil {
		return err
	}
	start := time.Now()
	size, err := n.st.ResumeSnapshot(m.Snapshot.Metadata, off, data)
	if errors.Is(err, raft.ErrSnapOutOfDate) {
		// Newer state is here already: nothing to take; the leader
		// learns it from the answer to its next message.
		_, err = io.Copy(io.Discard, data)
		return err
	}
	if err != nil {
		n.log.Warn("raftnode: receiving a snapshot failed", "from", m.From, "index", m.Snapshot.Metadata.Index,
			"resumed_at", off, "err", err)
		return err
	}
	n.log.Info("raftnode: received snapshot", "from", m.From, "index", m.Snapshot.Metadata.Index, "bytes", size,
		"resumed_at", off, "took", time.Since(start).Round(time.Millisecond))
	if err := n.checkReceived(m.Snapshot.Metadata); err != nil {
		n.st.DiscardReceived(m.Snapshot.Metadata)
		n.log.Warn("raftnode: refused a received snapshot that cannot be loaded; deleted it", "from", m.From,
			"index", m.Snapshot.Metadata.Index, "err", err)
		return err
	}
	snap := *m.Snapshot
	snap.Data = storage.ReceivedMarker
	m.Snapshot = &snap
	return n.step(m, true)
}

// stalePartialAge is how long a partial snapshot file nothing writes to
// is kept for a resume.
const stalePartialAge = 10 * time.Minute

// fromLeader refuses a snapshot stream that is not from the leader raft
// follows at its term: only the leader sends snapshots, and a stream is
// stored on disk before raft could judge its message.
func (n *Node) fromLeader(m *raftpb.Message) error {
	var st raft.BasicStatus
	if err := n.withRaft(func(rn *raft.RawNode) error { st = rn.BasicStatus(); return nil }); err != nil {
		return n.mapErr(err)
	}
	if m.Term < st.Term || st.Lead != m.From || m.Term > st.Term && n.inLease(st.Lead) {
		n.dropped(m, "a snapshot not from the leader", fmt.Errorf("snapshot from %x at term %d; this member follows %x at term %d", m.From, m.Term, st.Lead, st.Term))
		return fmt.Errorf("raftnode: a snapshot from %x at term %d, not from this member's leader (%x at term %d)", m.From, m.Term, st.Lead, st.Term)
	}
	return nil
}

// checkReceived has the state machine, if it is a SnapshotChecker, load
// the received snapshot meta before raft takes it.
func (n *Node) checkReceived(meta raftpb.SnapshotMetadata) error {
	sc, ok := n.sm.(SnapshotChecker)
	if !ok {
		return nil
	}
	rc, err := n.st.OpenReceived(meta)
	if err != nil {
		return err
	}
	defer rc.Close()
	return sc.CheckSnapshot(rc, meta.Index)
}
