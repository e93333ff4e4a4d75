package storage

// Snapshots taken locally by the state machine: written to their file
// beside the write path (BeginSnapshot), then made durable and installed
// (PendingSnapshot.Commit), and the in-memory log compacted behind them.

import (
	"errors"
	"fmt"
	"io"
	"math"

	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// CreateSnapshot records a snapshot taken locally by the state machine at
// index (which must be applied, hence committed) with the configuration
// cs: BeginSnapshot with data, then Commit.
//
// It returns raft.ErrSnapOutOfDate if index is not above the newest
// snapshot, ErrSnapshotIndex if index is not in the log,
// ErrSnapshotTooLarge for oversized data, and ErrSnapshotNotTaken if the
// file could not be written or fsynced; none of these change anything.
// An error wrapping ErrFailed means the storage is unusable (see Commit).
func (s *Storage) CreateSnapshot(index uint64, cs *raftpb.ConfState, data []byte) error {
	p, err := s.BeginSnapshot(index, cs, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return p.Commit()
}

// PendingSnapshot is a local snapshot whose file is written but not yet
// durable or installed (BeginSnapshot); Commit finishes it, Abort drops it.
type PendingSnapshot struct {
	s     *Storage
	meta  raftpb.SnapshotMetadata
	file  *snapTemp
	bytes int64
	// A memory Storage's snapshot: the data, and whether it is pending.
	data  []byte
	inMem bool
}

// BeginSnapshot starts a snapshot taken locally at index (which must be
// applied, hence committed) with the configuration cs: it writes the data
// that write produces into a temporary file, without fsync and without
// holding the lock that Save needs, so the WAL goes on being written
// meanwhile. The state machine streams its state through write (bounded
// by Options.MaxSnapshotBytes), so no copy of it is held in memory; the
// caller keeps the state unchanged until write returns, then may go on
// applying while Commit, typically on another goroutine, does the slow
// part. If the file cannot be created, write is not called.
//
// Errors as for CreateSnapshot (an error of write, or of the disk, is
// ErrSnapshotNotTaken); on error nothing is left behind.
func (s *Storage) BeginSnapshot(index uint64, cs *raftpb.ConfState, write func(io.Writer) error) (*PendingSnapshot, error) {
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if index <= s.snapIndex {
		s.mu.Unlock()
		return nil, raft.ErrSnapOutOfDate
	}
	last, _ := s.ms.LastIndex()
	if index > last {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %d is above the last index %d", ErrSnapshotIndex, index, last)
	}
	term, err := s.ms.Term(index)
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %d: %w", ErrSnapshotIndex, index, err)
	}
	meta := raftpb.SnapshotMetadata{Index: index, Term: term, ConfState: *cs}
	if s.mem {
		return s.memBeginSnapshot(meta, write)
	}
	err = s.fault(FaultSnapWrite)
	var f *snapTemp
	if err == nil {
		f, err = createSnapFile(s.snapDir, meta, s.opts.MaxSnapshotBytes, write)
	}
	if err != nil {
		if errors.Is(err, ErrSnapshotTooLarge) {
			return nil, err
		}
		// The state machine's own error, or the disk's: the snapshot
		// is not taken; the storage stays usable (nothing was changed).
		return nil, fmt.Errorf("%w: writing the snapshot file: %w", ErrSnapshotNotTaken, err)
	}
	return &PendingSnapshot{s: s, meta: meta, file: f, bytes: f.size}, nil
}

// Index returns the snapshot's index.
func (p *PendingSnapshot) Index() uint64 { return p.meta.Index }

// Bytes returns the size of the snapshot's data.
func (p *PendingSnapshot) Bytes() int64 { return p.bytes }

// Abort deletes the snapshot's file.
func (p *PendingSnapshot) Abort() {
	p.data, p.inMem = nil, false
	if p.file != nil {
		p.file.abort()
		p.file = nil
	}
}

// Commit makes the snapshot durable and installs it: the file is fsynced
// (without the lock), renamed and its directory fsynced; then the WAL
// snapshot record is written (fsynced, which also makes the hard state
// that committed the index durable), the MemoryStorage installs it and is
// compacted up to index-CatchUpEntries, and snapshot files beyond
// SnapRetain and the WAL segments only they needed are deleted.
//
// It returns raft.ErrSnapOutOfDate (and deletes the file) if a newer
// snapshot was installed meanwhile (one sent by the leader), and
// ErrSnapshotNotTaken (and deletes the file) if the file's fsync failed:
// the storage goes on without this snapshot, on its WAL. Any other error
// wraps ErrFailed: the disk failed once the snapshot directory or the WAL
// was being changed, and the storage is unusable.
func (p *PendingSnapshot) Commit() error {
	s := p.s
	if p.inMem {
		return p.memCommit()
	}
	f := p.file
	if f == nil {
		return errors.New("storage: snapshot already committed or aborted")
	}
	p.file = nil
	if err := f.sync(s.fileSteps()); err != nil {
		// Nothing is installed: the temporary file is deleted, and the
		// WAL, whose own fsyncs decide what of it is durable, still
		// holds every entry since the previous snapshot. The storage
		// goes on without this snapshot. (A failed fsync must not be
		// retried on the same file, as its dirty pages may have been
		// dropped; nothing here ever reads the file again.)
		f.abort()
		return fmt.Errorf("%w: fsyncing the snapshot file: %w", ErrSnapshotNotTaken, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		f.abort()
		return err
	}
	index := p.meta.Index
	if index <= s.snapIndex {
		f.abort()
		return raft.ErrSnapOutOfDate
	}
	if err := f.install(s.fileSteps()); err != nil {
		// From the rename on the snapshot directory is changed: what
		// it holds after a crash is not known for sure. (Recovery
		// would delete a renamed file that has no WAL record, but a
		// failing disk is not trusted to go on.)
		return s.fail(fmt.Errorf("installing snapshot file: %w", err))
	}
	ws := walpb.Snapshot{Index: index, Term: p.meta.Term, ConfState: &p.meta.ConfState}
	if err := s.saveWALSnapshot(ws); err != nil {
		return s.fail(fmt.Errorf("WAL snapshot record: %w", err))
	}
	if !s.opts.NoSync {
		// Durability boundary: wal.SaveSnapshot fsyncs; the snapshot
		// file is now usable by recovery.
		s.synced(PointWALSnapshot)
	}
	cs := p.meta.ConfState
	if _, err := s.ms.CreateSnapshot(index, &cs, nil); err != nil { // data: SnapshotData
		return s.fail(err)
	}
	s.snapIndex = index
	if err := s.compactBehind(index); err != nil {
		return s.fail(err)
	}
	s.purge()
	return nil
}

// compactBehind compacts the MemoryStorage after a snapshot at index,
// keeping at most CatchUpEntries entries up to index, and of those only
// as many of the newest as hold at most CatchUpBytes of data. s.mu is
// held.
func (s *Storage) compactBehind(index uint64) error {
	first, err := s.ms.FirstIndex()
	if err != nil {
		return err
	}
	to := first - 1
	if index > s.opts.CatchUpEntries {
		to = max(to, index-s.opts.CatchUpEntries)
	}
	if to < index {
		// The entries (to, index] that would stay: keep the newest that
		// fit in CatchUpBytes. (Entries returns the MemoryStorage's own
		// slice: nothing is copied.)
		ents, err := s.ms.Entries(to+1, index+1, math.MaxUint64)
		if err != nil && !errors.Is(err, raft.ErrCompacted) {
			return err
		}
		var kept uint64
		for i := len(ents) - 1; i >= 0; i-- {
			kept += uint64(ents[i].Size())
			if kept > s.opts.CatchUpBytes {
				to = ents[i].Index
				break
			}
		}
	}
	if to < first {
		return nil
	}
	if err := s.ms.Compact(to); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return err
	}
	return nil
}
