package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// OpenMemory returns a Storage that keeps everything in memory: raft's
// MemoryStorage for the log and hard state, and the newest snapshot's data
// as bytes. Nothing is written to disk, nothing is fsynced and nothing
// survives the process. A server without a data directory runs raft on it,
// so that it takes exactly the write path of a durable one (snapshots and
// log compaction included); only the durability steps are missing.
//
// The returned Storage is fresh (Recovered().Fresh) and honours the same
// contract as one from Open; Options.NoSync, NoPrefill, Metadata,
// SnapRetain and SyncHook have no effect.
func OpenMemory(opts Options) *Storage {
	opts = opts.withDefaults()
	opts.NoSync = true
	s := &Storage{
		opts: opts,
		log:  opts.Logger.With("dir", "(memory)"),
		ms:   raft.NewMemoryStorage(),
		mem:  true,
	}
	s.rec = State{Fresh: true, Metadata: bytes.Clone(opts.Metadata)}
	s.log.Info("storage: in memory; nothing survives a restart")
	return s
}

// Memory reports whether the Storage keeps nothing on disk (OpenMemory).
func (s *Storage) Memory() bool { return s.mem }

// memSaveSnapshot is SaveSnapshot for a memory Storage; s.mu is held.
func (s *Storage) memSaveSnapshot(snap raftpb.Snapshot) error {
	msSnap := snap
	msSnap.Data = nil
	if err := s.ms.ApplySnapshot(msSnap); err != nil {
		return s.fail(err)
	}
	s.memSnap = snap.Data
	s.memSnapMeta = snap.Metadata
	s.snapIndex = snap.Metadata.Index
	return nil
}

// memBeginSnapshot is the part of BeginSnapshot that writes the data, for
// a memory Storage: into a buffer, bounded by MaxSnapshotBytes.
func (s *Storage) memBeginSnapshot(meta raftpb.SnapshotMetadata, write func(io.Writer) error) (*PendingSnapshot, error) {
	var buf bytes.Buffer
	dw := &snapDataWriter{w: &buf, limit: s.opts.MaxSnapshotBytes}
	if err := write(dw); err != nil {
		if errors.Is(err, ErrSnapshotTooLarge) {
			return nil, fmt.Errorf("writing snapshot: %w", err)
		}
		return nil, fmt.Errorf("%w: writing snapshot: %w", ErrSnapshotNotTaken, err)
	}
	return &PendingSnapshot{s: s, meta: meta, data: buf.Bytes(), bytes: dw.n, inMem: true}, nil
}

// memCommit is Commit for a memory Storage.
func (p *PendingSnapshot) memCommit() error {
	s := p.s
	data := p.data
	p.data, p.inMem = nil, false
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	index := p.meta.Index
	if index <= s.snapIndex {
		return raft.ErrSnapOutOfDate
	}
	cs := p.meta.ConfState
	if _, err := s.ms.CreateSnapshot(index, &cs, nil); err != nil {
		return s.fail(err)
	}
	s.memSnap = data
	s.memSnapMeta = p.meta
	s.snapIndex = index
	if err := s.compactBehind(index); err != nil {
		return s.fail(err)
	}
	return nil
}

// memSnapshotData is SnapshotData for a memory Storage.
func (s *Storage) memSnapshotData(index, term uint64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.memSnapMeta.Index != index || s.memSnapMeta.Term != term {
		return nil, fmt.Errorf("%w: no snapshot %d/%d in memory (have %d/%d)", ErrCorrupt, index, term, s.memSnapMeta.Index, s.memSnapMeta.Term)
	}
	return s.memSnap, nil
}
