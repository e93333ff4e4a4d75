// Purging old snapshot files and WAL segments.

package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// purge deletes snapshot files beyond SnapRetain and the WAL segments that
// hold only entries before the oldest kept snapshot, so that every kept
// snapshot stays usable for recovery. Failures are logged, not returned:
// leftover files cost space, not correctness.
//
// The deletions are made durable with an fsync of each directory. A crash
// before that may bring back any subset of the deleted files, including an
// older WAL segment without the next one; Open deletes such leftovers (see
// removeStaleSegments).
//
// A purge the fault hook refuses is skipped (and logged), like one that
// fails: the files wait for the next purge.
func (s *Storage) purge() {
	if err := s.fault(FaultPurge); err != nil {
		s.log.Warn("storage: purge of old snapshots and WAL segments skipped", "err", err)
		return
	}
	snaps, segs := s.removeOld()
	// Failpoint: the files are gone, but not durably.
	s.synced(PointPurged)
	if s.opts.NoSync || snaps+segs == 0 {
		return
	}
	if snaps > 0 {
		if err := syncDir(s.snapDir); err != nil {
			s.log.Warn("storage: syncing the snapshot directory after deletions", "err", err)
			return
		}
	}
	if segs > 0 {
		if err := syncDir(s.walDir); err != nil {
			s.log.Warn("storage: syncing the WAL directory after deletions", "err", err)
			return
		}
	}
	// Durability boundary: the deletions are durable.
	s.synced(PointPurgeSynced)
}

// removeOld deletes what purge deletes and returns how many snapshot files
// and WAL segments it deleted.
func (s *Storage) removeOld() (snaps, segs int) {
	files, err := listSnapFiles(s.snapDir)
	if err != nil {
		s.log.Warn("storage: listing snapshots", "err", err)
		return
	}
	for len(files) > s.opts.SnapRetain {
		if err := os.Remove(filepath.Join(s.snapDir, files[0].name)); err != nil && !os.IsNotExist(err) {
			s.log.Warn("storage: deleting old snapshot", "file", files[0].name, "err", err)
			return
		}
		snaps++
		files = files[1:]
	}
	if len(files) == 0 {
		return
	}
	keep := files[0].index
	if err := s.w.ReleaseLockTo(keep); err != nil {
		s.log.Warn("storage: releasing WAL segments", "err", err)
		return
	}
	names, err := listWALFiles(s.walDir)
	if err != nil {
		s.log.Warn("storage: listing WAL segments", "err", err)
		return
	}
	// Segment j holds entries from its start index up to the start index
	// of segment j+1; it is needed while that is ≥ keep.
	//
	// A segment is renamed out of the WAL's namespace here, which is
	// quick, and unlinked later by the deleter (deleter.go), when the WAL
	// is quiet: freeing a 64 MB file's blocks can take tens of
	// milliseconds, during which no write could be persisted. Open
	// deletes renamed segments a crash left behind.
	var renamed []string
	defer func() { s.del.add(renamed) }()
	for j := 0; j+1 < len(names) && names[j+1].index < keep; j++ {
		from := filepath.Join(s.walDir, names[j].name)
		if err := os.Rename(from, from+purgedSuffix); err != nil && !os.IsNotExist(err) {
			s.log.Warn("storage: deleting WAL segment", "file", names[j].name, "err", err)
			return
		}
		segs++
		renamed = append(renamed, from+purgedSuffix)
		s.log.Debug("storage: deleted WAL segment", "file", names[j].name)
	}
	return
}

// purgedSuffix marks a WAL segment that purge took out of the WAL, to be
// unlinked.
const purgedSuffix = ".purged"

// removeStaleSegments deletes the WAL segments before a gap in the segment
// sequence numbers. Segments are cut with consecutive numbers and purge
// deletes the oldest first, so a gap means a crash during a purge brought
// back a deleted segment whose successor stayed deleted (a file system may
// persist unsynced deletions in any order). Those segments were being
// deleted and cannot be read anyway: etcd's CRC chain breaks at the gap,
// which would make every Open fail.
func (s *Storage) removeStaleSegments() error {
	names, err := listWALFiles(s.walDir)
	if err != nil {
		return err
	}
	gap := 0
	for i := 1; i < len(names); i++ {
		if names[i].seq != names[i-1].seq+1 {
			gap = i
		}
	}
	if gap == 0 {
		return nil
	}
	for _, n := range names[:gap] {
		s.log.Warn("storage: deleting a WAL segment left over from an interrupted purge", "file", n.name, "next", names[gap].name)
		if err := os.Remove(filepath.Join(s.walDir, n.name)); err != nil {
			return err
		}
	}
	if s.opts.NoSync {
		return nil
	}
	return syncDir(s.walDir)
}

// walFile is a WAL segment file name: etcd names them seq-index.wal, where
// index is the raft index of the first entry the segment may hold.
type walFile struct {
	name       string
	seq, index uint64
}

func listWALFiles(dir string) ([]walFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []walFile
	for _, e := range ents {
		var seq, index uint64
		if _, err := fmt.Sscanf(e.Name(), "%016x-%016x.wal", &seq, &index); err == nil && strings.HasSuffix(e.Name(), ".wal") {
			out = append(out, walFile{name: e.Name(), seq: seq, index: index})
		}
	}
	slices.SortFunc(out, func(a, b walFile) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return out, nil
}

// removeWithSuffix deletes the files of dir whose names end in suffix:
// snapshot files whose atomic write was cut short (tmpSuffix), WAL segments
// a purge renamed and a crash kept from being unlinked (purgedSuffix).
func removeWithSuffix(dir, suffix string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}
