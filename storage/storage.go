package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxSnapshotBytes = 4 << 30
	DefaultSnapRetain       = 3
	DefaultCatchUpEntries   = 5000
	// DefaultCatchUpBytes bounds the data of the entries kept behind a
	// snapshot (CatchUpEntries of 1 MiB each would be 5 GiB).
	DefaultCatchUpBytes = 64 << 20
)

// Names inside the data directory; see doc.go.
const (
	walDirName  = "wal"
	snapDirName = "snap"
	lockName    = "LOCK"
)

// Options configure Open. The zero value is the durable default.
type Options struct {
	// NoSync skips every fsync (WAL appends, snapshot files, directory
	// entries). A crash of the process is still survived (the data is in
	// the page cache) but a crash of the machine may lose acknowledged
	// writes. Only for tests and benchmarks that are not about durability.
	NoSync bool
	// NoPrefill turns off writing zeros into the WAL's preallocated space
	// ahead of the log (see prefill.go); it has no effect with NoSync,
	// which never prefills.
	NoPrefill bool
	// Logger receives recovery and repair messages; nil discards them.
	Logger *slog.Logger
	// Metadata is recorded at the head of every WAL segment when the
	// directory is created (raftnode stores the member and cluster ids
	// there). When reopening, a non-nil Metadata must equal the recorded
	// one, or Open fails with ErrMetadataMismatch.
	Metadata []byte
	// MaxSnapshotBytes bounds the state-machine data of one snapshot, both
	// when writing and when reading a snapshot file. Default 4 GiB.
	MaxSnapshotBytes int64
	// SnapRetain is how many snapshot files are kept (ZooKeeper's
	// autopurge.snapRetainCount); older ones are deleted together with the
	// WAL segments only they needed. Default 3, minimum 1.
	SnapRetain int
	// CatchUpEntries is how many entries before a locally taken snapshot
	// stay in memory after it, so that a slightly lagging follower is sent
	// entries rather than a whole snapshot (etcd's
	// SnapshotCatchUpEntries). Default 5000.
	CatchUpEntries uint64
	// CatchUpBytes bounds the data of those entries: fewer are kept when
	// they are large. Default DefaultCatchUpBytes.
	CatchUpBytes uint64
	// SyncHook, if set, is called after each durability step (see
	// SyncPoint); tests use it to compute what a machine crash would
	// leave on disk. SetSyncHook sets one for every Storage.
	SyncHook SyncHook
	// OnWALSync, if set, is told of each Save that fsyncs the WAL: how
	// many entries it made durable (0 for a hard state alone) and how
	// long etcd's wal.Save took, which writes and fsyncs in one call. It
	// is for metrics: called on Save's goroutine (raftnode's run loop)
	// with the Storage's lock held, so it must return at once and must
	// not call the Storage. Never called with NoSync or in memory.
	OnWALSync func(entries int, d time.Duration)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxSnapshotBytes <= 0 {
		o.MaxSnapshotBytes = DefaultMaxSnapshotBytes
	}
	if o.SnapRetain <= 0 {
		o.SnapRetain = DefaultSnapRetain
	}
	if o.CatchUpEntries == 0 {
		o.CatchUpEntries = DefaultCatchUpEntries
	}
	if o.CatchUpBytes == 0 {
		o.CatchUpBytes = DefaultCatchUpBytes
	}
	return o
}

// State is what Open found in the directory.
type State struct {
	// Fresh is true when the directory held no WAL: the member has no
	// raft state and must be bootstrapped (or join an existing group).
	Fresh bool
	// Snapshot is the newest usable snapshot (Metadata.Index == 0 when
	// there is none), its metadata only: its data stays in its file,
	// read with OpenSnapshotData (checked whole by Open, which falls back
	// to an older file if it is damaged).
	Snapshot raftpb.Snapshot
	// HardState is the last hard state recorded in the WAL.
	HardState raftpb.HardState
	// Metadata is the metadata recorded when the directory was created.
	Metadata []byte
	// FirstIndex and LastIndex delimit the entries recovered from the WAL
	// (LastIndex == Snapshot.Metadata.Index when there are none).
	FirstIndex, LastIndex uint64
	// Repaired is true when a torn WAL tail was truncated. The records
	// before the tear were kept; the torn one was never acknowledged.
	Repaired bool
}

// Storage is raft's durable storage in one data directory: etcd's WAL for
// hard state and entries, snapshot files for state-machine snapshots, and a
// raft.MemoryStorage holding the same log for raft to read.
//
// Write methods (Save, SaveSnapshot, CreateSnapshot) are meant to be called
// from one goroutine, the one running raft's Ready loop; they are
// nonetheless serialised by a mutex, so Close may be called from anywhere.
// raft reads the MemoryStorage concurrently from its own goroutine, which
// MemoryStorage's own lock allows.
type Storage struct {
	dir     string
	snapDir string
	walDir  string
	opts    Options
	log     *slog.Logger
	zlog    *zap.Logger
	dirLock *fileutil.LockedFile
	ms      *raft.MemoryStorage
	rec     State

	mu sync.Mutex // guards the fields below and serialises writes to the WAL and snapshot files
	w  *wal.WAL
	// snapIndex is the index of the newest durable snapshot.
	snapIndex uint64
	// purgeAt, when non-zero, is the index of a snapshot received from the
	// leader whose older files are released only once a hard state with
	// commit ≥ purgeAt is durable.
	purgeAt uint64
	failed  error // first write error; sticky
	closed  bool

	del *deleter // unlinks purged WAL segments

	syncs   atomic.Uint64 // Saves that appended entries (each is one WAL fsync unless NoSync)
	entries atomic.Uint64 // entries appended

	pf        *prefiller // nil when not prefilling
	closeOnce sync.Once
	prefilled atomic.Uint64 // bytes of zeros written ahead of the WAL

	// mem: a memory Storage (OpenMemory): no directory, WAL, lock,
	// deleter or prefiller; the newest snapshot's data is memSnap (with
	// memSnapMeta), guarded by mu.
	mem         bool
	memSnap     []byte
	memSnapMeta raftpb.SnapshotMetadata

	// received is a snapshot ReceiveSnapshot stored that SaveSnapshot
	// has not installed yet (guarded by mu).
	received *receivedSnap
	// held is the partial file HeldSnapshot last read, for the
	// ResumeSnapshot that follows it (guarded by mu). Callers run one
	// receive at a time.
	held *heldPartial
}

// SetWALSegmentSize sets the size at which WAL segment files are cut and
// to which new ones are preallocated (etcd's default is 64 MB). It is a
// process-wide setting of etcd's wal package: call it before opening any
// Storage (for example from TestMain), never concurrently with Open.
func SetWALSegmentSize(bytes int64) { wal.SegmentSizeBytes = bytes }

// Exists reports whether dir holds a storage created by Open (its WAL),
// without opening or locking it.
func Exists(dir string) bool { return wal.Exist(filepath.Join(dir, walDirName)) }

// Open opens the data directory dir, creating it if needed, and recovers
// its state: the newest valid snapshot whose index the WAL still covers,
// then the WAL records after it. A torn WAL tail (a record cut short by a
// crash) is truncated. The returned Storage holds an exclusive lock on dir
// until Close.
func Open(dir string, opts Options) (*Storage, error) {
	opts = opts.withDefaults()
	s := &Storage{
		dir:     dir,
		snapDir: filepath.Join(dir, snapDirName),
		walDir:  filepath.Join(dir, walDirName),
		opts:    opts,
		log:     opts.Logger.With("dir", dir),
	}
	s.del = newDeleter(s)
	s.zlog = newZapLogger(s.log)
	if err := os.MkdirAll(s.snapDir, 0o750); err != nil {
		return nil, err
	}
	lf, err := fileutil.TryLockFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, fileutil.ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, err
	}
	s.dirLock = lf
	if err := s.recover(); err != nil {
		lf.Close()
		return nil, err
	}
	s.startPrefill()
	return s, nil
}

func (s *Storage) recover() error {
	if !s.opts.NoSync {
		// Make the directories' entries durable before files go into them.
		if err := syncDir(filepath.Dir(filepath.Clean(s.dir))); err != nil {
			return err
		}
		if err := syncDir(s.dir); err != nil {
			return err
		}
	}
	if err := removeWithSuffix(s.snapDir, tmpSuffix); err != nil {
		return err
	}
	if !wal.Exist(s.walDir) {
		return s.create()
	}

	if err := removeWithSuffix(s.walDir, purgedSuffix); err != nil {
		return err
	}
	if err := s.removeStaleSegments(); err != nil {
		return err
	}
	walSnaps, err := wal.ValidSnapshotEntries(s.zlog, s.walDir)
	if err != nil {
		return fmt.Errorf("%w: scanning WAL snapshot records: %w", ErrCorrupt, err)
	}
	snap, err := s.loadSnapshot(walSnaps)
	if err != nil {
		return err
	}
	walsnap := walpb.Snapshot{}
	if snap != nil {
		walsnap = walpb.Snapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term, ConfState: &snap.Metadata.ConfState}
	}

	var (
		w        *wal.WAL
		md       []byte
		hs       raftpb.HardState
		ents     []raftpb.Entry
		repaired bool
	)
	for {
		w, err = wal.Open(s.zlog, s.walDir, walsnap)
		if err != nil {
			if errors.Is(err, fileutil.ErrLocked) {
				return fmt.Errorf("%w: %s: %w", ErrLocked, s.walDir, err)
			}
			return fmt.Errorf("%w: opening WAL at snapshot index %d: %w", ErrCorrupt, walsnap.Index, err)
		}
		md, hs, ents, err = w.ReadAll()
		if err == nil {
			break
		}
		w.Close()
		if errors.Is(err, io.ErrUnexpectedEOF) && !repaired {
			s.log.Warn("storage: WAL has a torn tail; truncating it", "err", err)
			if !wal.Repair(s.zlog, s.walDir) {
				return fmt.Errorf("%w: torn WAL tail could not be repaired: %w", ErrCorrupt, err)
			}
			repaired = true
			continue
		}
		return fmt.Errorf("%w: reading WAL: %w", ErrCorrupt, err)
	}
	if s.opts.Metadata != nil && !bytes.Equal(md, s.opts.Metadata) {
		w.Close()
		return fmt.Errorf("%w: directory has %x, want %x", ErrMetadataMismatch, md, s.opts.Metadata)
	}
	if s.opts.NoSync {
		w.SetUnsafeNoFsync()
	}

	ms := raft.NewMemoryStorage()
	st := State{Metadata: md, Repaired: repaired}
	if snap != nil {
		// The snapshot's data (the whole state, as large as the tree)
		// stays in its file: the state machine restores from it as a
		// stream (OpenSnapshotData), and a follower that needs it is sent
		// it from there. Recovered and the MemoryStorage hold the
		// metadata only.
		msSnap := *snap
		msSnap.Data = nil
		if err := ms.ApplySnapshot(msSnap); err != nil {
			w.Close()
			return err
		}
		st.Snapshot = *snap
		s.snapIndex = snap.Metadata.Index
		if hs.Commit < snap.Metadata.Index {
			// A snapshot only ever covers committed entries.
			hs.Commit = snap.Metadata.Index
		}
	}
	if err := ms.Append(ents); err != nil {
		w.Close()
		return err
	}
	st.FirstIndex, _ = ms.FirstIndex()
	st.LastIndex, _ = ms.LastIndex()
	if hs.Commit > st.LastIndex {
		w.Close()
		return fmt.Errorf("%w: hard state commit %d is beyond the last entry %d", ErrCorrupt, hs.Commit, st.LastIndex)
	}
	if err := ms.SetHardState(hs); err != nil {
		w.Close()
		return err
	}
	st.HardState = hs
	s.w, s.ms, s.rec = w, ms, st
	// Durability boundary: what recovery left (a repaired tail is
	// fsynced by wal.Repair) is the starting state from now on.
	s.synced(PointOpened)
	s.log.Info("storage: recovered", "snapshot", s.snapIndex, "first", st.FirstIndex,
		"last", st.LastIndex, "term", hs.Term, "commit", hs.Commit, "repaired", repaired)
	return nil
}

// create initialises a fresh directory.
func (s *Storage) create() error {
	files, err := listSnapFiles(s.snapDir)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return fmt.Errorf("%w: %d snapshot files but no WAL", ErrCorrupt, len(files))
	}
	// wal.Create writes the first segment in a temporary directory, fsyncs
	// it and renames it into place, so a crash leaves no WAL or a whole one.
	w, err := wal.Create(s.zlog, s.walDir, s.opts.Metadata)
	if err != nil {
		return err
	}
	if s.opts.NoSync {
		w.SetUnsafeNoFsync()
	}
	s.w = w
	s.ms = raft.NewMemoryStorage()
	s.rec = State{Fresh: true, Metadata: bytes.Clone(s.opts.Metadata)}
	// Durability boundary: wal.Create fsynced the first segment and its
	// directory entry (always, even with NoSync, which is set after).
	s.synced(PointCreated)
	s.log.Info("storage: created")
	return nil
}

// loadSnapshot returns the newest readable snapshot file whose (index,
// term) has a WAL snapshot record covered by a durable commit, or nil.
// Unreadable files are renamed to *.broken; files newer than every usable
// snapshot but unknown to the WAL are orphans of a crash between writing
// the file and its WAL record, and are deleted.
func (s *Storage) loadSnapshot(walSnaps []walpb.Snapshot) (*raftpb.Snapshot, error) {
	files, err := listSnapFiles(s.snapDir)
	if err != nil {
		return nil, err
	}
	known := make(map[[2]uint64]bool, len(walSnaps))
	for _, ws := range walSnaps {
		known[[2]uint64{ws.Index, ws.Term}] = true
	}
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		path := filepath.Join(s.snapDir, f.name)
		if !known[[2]uint64{f.index, f.term}] {
			s.log.Warn("storage: deleting snapshot file without a durable WAL record", "file", f.name)
			if err := os.Remove(path); err != nil {
				return nil, err
			}
			continue
		}
		snap, err := checkSnapFile(path, s.opts.MaxSnapshotBytes)
		if err == nil {
			return snap, nil
		}
		if !errors.Is(err, errBadSnapshot) {
			return nil, err
		}
		s.log.Error("storage: snapshot file is unusable; falling back to an older one", "file", f.name, "err", err)
		if err := os.Rename(path, path+brokenSuffix); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// RaftStorage returns the in-memory copy of the log for raft.Config.Storage.
// Only Storage's methods may modify it.
func (s *Storage) RaftStorage() *raft.MemoryStorage { return s.ms }

// SnapshotData reads the data of the snapshot (index, term) from its
// file. The MemoryStorage holds snapshots without their data, so a leader
// that sends one to a lagging follower fills it in from here.
func (s *Storage) SnapshotData(index, term uint64) ([]byte, error) {
	if s.mem {
		return s.memSnapshotData(index, term)
	}
	snap, err := readSnapFile(filepath.Join(s.snapDir, snapFileName(index, term)), s.opts.MaxSnapshotBytes)
	if err != nil {
		return nil, err
	}
	if snap.Metadata.Index != index || snap.Metadata.Term != term {
		return nil, fmt.Errorf("%w: snapshot file for %d/%d holds %d/%d", ErrCorrupt, index, term, snap.Metadata.Index, snap.Metadata.Term)
	}
	return snap.Data, nil
}

// ReleaseRecovered drops the recovered snapshot's data from Recovered
// once the state machine has restored it.
func (s *Storage) ReleaseRecovered() {
	s.mu.Lock()
	s.rec.Snapshot.Data = nil
	s.mu.Unlock()
}

// Recovered returns what Open found.
func (s *Storage) Recovered() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// Dir returns the data directory.
func (s *Storage) Dir() string { return s.dir }

// SnapshotIndex returns the index of the newest durable snapshot (0 if
// none).
func (s *Storage) SnapshotIndex() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapIndex
}

// LastSnapshot returns the index of the newest durable snapshot and when
// its file was last written (the zero time in memory, without one, or if
// the file cannot be read). It reads the snapshot directory: for the
// AdminServer's last_snapshot, not for hot paths.
func (s *Storage) LastSnapshot() (index uint64, written time.Time) {
	index = s.SnapshotIndex()
	if index == 0 || s.mem {
		return index, time.Time{}
	}
	files, err := listSnapFiles(s.snapDir)
	if err != nil {
		return index, time.Time{}
	}
	for _, f := range files {
		if f.index != index {
			continue
		}
		if fi, err := os.Stat(filepath.Join(s.snapDir, f.name)); err == nil {
			written = fi.ModTime()
		}
	}
	return index, written
}

// PrefilledBytes returns how many bytes of zeros the prefiller has
// written into the WAL's preallocated space (see Options.NoPrefill).
func (s *Storage) PrefilledBytes() uint64 { return s.prefilled.Load() }

// Counters returns how many Saves appended entries (each one fsync of the
// WAL, unless NoSync) and how many entries they appended: entries/syncs is
// the group-commit factor.

func (s *Storage) Counters() (syncs, entries uint64) {
	return s.syncs.Load(), s.entries.Load()
}

// Save appends ents and hs (either may be empty) to the WAL and, when raft
// requires it (new entries, or a new term or vote), fsyncs before
// returning; then it appends ents to the MemoryStorage. When Save returns
// nil the records are durable (unless NoSync): this is what makes it safe
// to send raft's messages and acknowledge writes afterwards. ents must
// follow the log (raft guarantees it); the slice is not retained beyond
// MemoryStorage's copy of its elements.
func (s *Storage) Save(hs raftpb.HardState, ents []raftpb.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	// etcd's WAL fsyncs exactly when raft.MustSync says so, comparing with
	// the last hard state it saved, which the MemoryStorage holds too.
	prev, _, _ := s.ms.InitialState()
	mustSync := raft.MustSync(hs, prev, len(ents)) && (len(ents) > 0 || !raft.IsEmptyHardState(hs))
	if s.mem {
		mustSync = false
	} else {
		if len(ents) > 0 || !raft.IsEmptyHardState(hs) {
			// Asked before the call that writes (and fsyncs), so that a
			// refused step never reaches the WAL: the storage fails
			// with nothing of this Save on disk.
			if err := s.fault(FaultWALWrite); err != nil {
				return s.fail(fmt.Errorf("WAL save: %w", err))
			}
			if mustSync && !s.opts.NoSync {
				if err := s.fault(FaultWALSync); err != nil {
					return s.fail(fmt.Errorf("WAL sync: %w", err))
				}
			}
		}
		timed := mustSync && !s.opts.NoSync && s.opts.OnWALSync != nil
		var start time.Time
		if timed {
			start = time.Now()
		}
		if err := s.w.Save(hs, ents); err != nil {
			return s.fail(fmt.Errorf("WAL save: %w", err))
		}
		if timed {
			s.opts.OnWALSync(len(ents), time.Since(start))
		}
	}
	if mustSync && !s.opts.NoSync {
		// Durability boundary: these entries and hard state, and every
		// record appended before them, are fsynced. Only after this
		// point may raft send messages and the server acknowledge.
		s.synced(PointWALSynced)
	}
	if len(ents) > 0 {
		if err := s.ms.Append(ents); err != nil {
			return s.fail(err)
		}
		s.syncs.Add(1)
		s.entries.Add(uint64(len(ents)))
		s.pf.poke()
	}
	if !raft.IsEmptyHardState(hs) {
		if err := s.ms.SetHardState(hs); err != nil {
			return s.fail(err)
		}
		if s.purgeAt != 0 && hs.Commit >= s.purgeAt && !s.mem {
			// Old WAL segments may go only once the hard state that
			// validates the received snapshot is durable (etcd issue
			// 10219): Save does not fsync a commit-only change.
			err := s.fault(FaultWALSync)
			if err == nil {
				err = s.w.Sync()
			}
			if err != nil {
				return s.fail(fmt.Errorf("WAL sync: %w", err))
			}
			if !s.opts.NoSync {
				// Durability boundary: the hard state committing the
				// snapshot is durable, so the WAL before it may go.
				s.synced(PointWALSynced)
			}
			s.purgeAt = 0
			s.purge()
		}
	}
	return nil
}

// SaveSnapshot persists a snapshot received from the leader (raft's
// Ready.Snapshot) and installs it in the MemoryStorage. Call it before
// Save of the same Ready. The order of the steps is etcd's:
//
//  1. the snapshot file, so that a WAL snapshot record never refers to a
//     missing file (a crash after this step leaves an orphan file, which
//     Open deletes);
//  2. the WAL snapshot record, fsynced, before the hard state and entries
//     that follow the snapshot, so that on restart the WAL can be opened
//     at the snapshot and replays exactly what comes after it;
//  3. MemoryStorage.ApplySnapshot, once both are on disk.
//
// Old snapshot files and WAL segments are released later, by the first
// Save whose hard state commits the snapshot's index.
func (s *Storage) SaveSnapshot(snap raftpb.Snapshot) error {
	if raft.IsEmptySnap(snap) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if int64(len(snap.Data)) > s.opts.MaxSnapshotBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrSnapshotTooLarge, len(snap.Data), s.opts.MaxSnapshotBytes)
	}
	if snap.Metadata.Index <= s.snapIndex {
		return raft.ErrSnapOutOfDate
	}
	var received *receivedSnap
	if IsReceived(snap.Data) {
		rs, err := s.takeReceived(snap.Metadata)
		if err != nil {
			return err
		}
		received = rs
	}
	if s.mem {
		if received != nil {
			snap.Data = received.data
		}
		return s.memSaveSnapshot(snap)
	}
	if received != nil {
		// Received and fsynced already: only the rename and the
		// directory's fsync are left.
		if err := received.file.install(s.fileSteps()); err != nil {
			return s.fail(fmt.Errorf("installing the received snapshot file: %w", err))
		}
	} else if err := writeSnapFile(s.snapDir, &snap, s.fileSteps()); err != nil {
		return s.fail(fmt.Errorf("writing snapshot file: %w", err))
	}
	ws := walpb.Snapshot{Index: snap.Metadata.Index, Term: snap.Metadata.Term, ConfState: &snap.Metadata.ConfState}
	if err := s.saveWALSnapshot(ws); err != nil {
		return s.fail(fmt.Errorf("WAL snapshot record: %w", err))
	}
	if !s.opts.NoSync {
		// Durability boundary: wal.SaveSnapshot fsyncs; the snapshot
		// file is now usable by recovery.
		s.synced(PointWALSnapshot)
	}
	if err := s.removeOutdatedPartials(snap.Metadata.Index); err != nil {
		s.log.Warn("storage: removing outdated partial snapshot files", "err", err)
	}
	msSnap := snap
	msSnap.Data = nil // read from the file when needed (SnapshotData)
	if err := s.ms.ApplySnapshot(msSnap); err != nil {
		return s.fail(err)
	}
	s.snapIndex = snap.Metadata.Index
	s.purgeAt = snap.Metadata.Index
	return nil
}

// saveWALSnapshot appends the WAL record of a snapshot whose file is
// durable, and fsyncs it (etcd's wal.SaveSnapshot does both in one call).
// s.mu is held.
func (s *Storage) saveWALSnapshot(ws walpb.Snapshot) error {
	if err := s.fault(FaultWALWrite); err != nil {
		return err
	}
	if !s.opts.NoSync {
		if err := s.fault(FaultWALSync); err != nil {
			return err
		}
	}
	return s.w.SaveSnapshot(ws)
}

// Close syncs and closes the WAL and releases the directory lock. The
// MemoryStorage stays readable. Close is idempotent.
func (s *Storage) Close() error {
	s.closeOnce.Do(func() {
		s.pf.halt()
		if s.del != nil {
			s.del.halt()
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if rs := s.received; rs != nil && rs.file != nil {
		rs.file.abort()
	}
	s.received = nil
	if s.mem {
		s.memSnap = nil
		return nil
	}
	err := s.w.Close()
	if cerr := s.dirLock.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *Storage) usable() error {
	if s.closed {
		return ErrClosed
	}
	if s.failed != nil {
		return fmt.Errorf("%w: %w", ErrFailed, s.failed)
	}
	return nil
}

func (s *Storage) fail(err error) error {
	s.failed = err
	s.log.Error("storage: write failed; storage is now unusable", "err", err)
	return fmt.Errorf("%w: %w", ErrFailed, err)
}
