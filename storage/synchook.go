package storage

import (
	"strconv"
	"sync/atomic"
)

// SyncPoint names a durability boundary of a Storage: the moment right
// after one step of making data durable has completed. Storage reports
// them to a SyncHook, which is how the fault tests (package storagetest)
// know what a machine crash at that moment would have left on disk.
type SyncPoint uint8

// The points, in the order they occur in a Storage's life. Each is
// reported only if the step really happened: with Options.NoSync nothing
// is fsynced, so only PointCreated, PointOpened and PointPurged are
// reported.
const (
	// PointCreated: a fresh directory's first WAL segment was written,
	// fsynced and renamed into place, and the parent directory fsynced
	// (wal.Create).
	PointCreated SyncPoint = iota + 1
	// PointOpened: Open finished recovering an existing directory (a torn
	// WAL tail, if any, was truncated and fsynced).
	PointOpened
	// PointWALSynced: the WAL was fsynced with everything appended so far
	// (a Save that had to sync: new entries, term or vote; or the explicit
	// sync before old segments are released). Everything a Save that
	// returned before this point appended is durable, including records
	// of earlier Saves that did not sync (commit-only hard states).
	PointWALSynced
	// PointSnapTempSynced: a snapshot was written to its temporary file
	// and the file fsynced; it is not yet renamed to its final name.
	PointSnapTempSynced
	// PointSnapRenamed: the temporary file was renamed to its final name
	// but the directory is not fsynced yet, so after a crash the rename
	// may or may not be there. Not a durability boundary: a failpoint.
	PointSnapRenamed
	// PointSnapSynced: the snapshot directory was fsynced after the
	// rename: the snapshot file is durable under its final name (and
	// earlier deletions in that directory are durable too).
	PointSnapSynced
	// PointWALSnapshot: the WAL snapshot record that makes the snapshot
	// file usable for recovery was appended and fsynced.
	PointWALSnapshot
	// PointPurged: snapshot files beyond SnapRetain and the WAL segments
	// only they needed were deleted (maybe none). The deletions are not
	// fsynced yet: after a crash any of the files may still be there,
	// which recovery must tolerate. A failpoint.
	PointPurged
	// PointPurgeSynced: the directories were fsynced after deletions:
	// they are durable. Not reported when nothing was deleted.
	PointPurgeSynced
)

var syncPointNames = [...]string{
	PointCreated:        "created",
	PointOpened:         "opened",
	PointWALSynced:      "wal-synced",
	PointSnapTempSynced: "snap-temp-synced",
	PointSnapRenamed:    "snap-renamed",
	PointSnapSynced:     "snap-synced",
	PointWALSnapshot:    "wal-snapshot",
	PointPurged:         "purged",
	PointPurgeSynced:    "purge-synced",
}

func (p SyncPoint) String() string {
	if int(p) < len(syncPointNames) && syncPointNames[p] != "" {
		return syncPointNames[p]
	}
	return "SyncPoint(" + strconv.Itoa(int(p)) + ")"
}

// SyncHook is called synchronously, on the goroutine that did the write,
// right after a durability step completed; dir is the Storage's Dir. The
// Storage's lock is held: the hook must not call the Storage. Because all
// of a Storage's writes are serialised, its files do not change while the
// hook runs. For tests; a nil hook costs one comparison per fsync.
type SyncHook func(dir string, p SyncPoint)

// processSyncHook is the hook set by SetSyncHook.
var processSyncHook atomic.Pointer[SyncHook]

// SetSyncHook installs h (nil removes it) for every Storage of the process,
// in addition to each one's Options.SyncHook, and returns the previous
// one. It is for tests that cannot reach the Options, because the Storage
// is opened by the code under test (the server): they filter on dir.
func SetSyncHook(h SyncHook) (prev SyncHook) {
	var p *SyncHook
	if h != nil {
		p = &h
	}
	if old := processSyncHook.Swap(p); old != nil {
		return *old
	}
	return nil
}

// synced reports a durability boundary to the hooks, if any.
func (s *Storage) synced(p SyncPoint) {
	if h := s.opts.SyncHook; h != nil {
		h(s.dir, p)
	}
	if h := processSyncHook.Load(); h != nil {
		(*h)(s.dir, p)
	}
}
