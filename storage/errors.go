package storage

import "errors"

// Errors returned by Open. Compare with errors.Is; the returned error wraps
// the cause with %w.
var (
	// ErrLocked means another Storage (in this or another process) holds
	// the data directory.
	ErrLocked = errors.New("storage: data directory is locked by another process")
	// ErrCorrupt means the directory cannot be recovered without losing
	// data that may have been acknowledged: a WAL record fails its CRC
	// before the last segment's tail, no usable snapshot matches the WAL,
	// or snapshot files exist without a WAL. A torn tail (a record cut
	// short by a crash) is not corruption: Open repairs it.
	ErrCorrupt = errors.New("storage: data directory is corrupt")
	// ErrMetadataMismatch means Options.Metadata differs from the metadata
	// recorded when the directory was created: the directory belongs to
	// another member or cluster.
	ErrMetadataMismatch = errors.New("storage: metadata mismatch")
)

// Errors returned by Save, SaveSnapshot and CreateSnapshot.
var (
	// ErrClosed means Close was called.
	ErrClosed = errors.New("storage: closed")
	// ErrFailed wraps the first write or fsync error. After it, every
	// write method returns ErrFailed: what reached the disk is unknown, so
	// the caller must stop raft, Close and re-Open (which recovers the
	// durable prefix).
	ErrFailed = errors.New("storage: failed")
	// ErrSnapshotTooLarge means the snapshot data is larger than
	// Options.MaxSnapshotBytes; nothing was written. Open also reports a
	// snapshot file declaring more as unreadable (and falls back to an
	// older snapshot).
	ErrSnapshotTooLarge = errors.New("storage: snapshot too large")
	// ErrSnapshotIndex means CreateSnapshot was asked for an index that is
	// not in the log (above the last index, or already compacted). Nothing
	// was written. A CreateSnapshot at or below the newest snapshot's index
	// returns raft.ErrSnapOutOfDate instead.
	ErrSnapshotIndex = errors.New("storage: snapshot index not in log")
	// ErrSnapshotNotTaken means a locally taken snapshot was abandoned
	// before anything of it was installed (BeginSnapshot, Commit): its
	// file could not be written or fsynced, or the state machine's writer
	// failed. The temporary file is deleted and the storage stays usable:
	// the WAL still holds every entry since the previous snapshot, so the
	// caller goes on without this snapshot and may try again later.
	ErrSnapshotNotTaken = errors.New("storage: snapshot not taken")
)
