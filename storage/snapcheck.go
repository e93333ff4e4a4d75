package storage

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// Checking a received snapshot before raft takes it. A snapshot a peer
// streams is stored first (ReceiveSnapshot, ResumeSnapshot) and only then
// stepped into raft, whose Ready installs it. Between the two, the
// receiver reads it back (OpenReceived) to check that its state machine
// can load it, and drops it (DiscardReceived) if not: a snapshot that
// cannot be loaded is never installed, so it cannot stop the member at
// every restart.

// OpenReceived opens the data of the snapshot meta that was received and
// not yet taken by raft. The reader checks lengths and the CRC, as
// OpenSnapshotData's does. Close it when done.
func (s *Storage) OpenReceived(meta raftpb.SnapshotMetadata) (io.ReadCloser, error) {
	s.mu.Lock()
	rs := s.received
	s.mu.Unlock()
	if rs == nil || rs.meta.Index != meta.Index || rs.meta.Term != meta.Term {
		return nil, fmt.Errorf("storage: snapshot %d/%d was not received", meta.Index, meta.Term)
	}
	if rs.file == nil {
		return io.NopCloser(bytes.NewReader(rs.data)), nil
	}
	return openSnapData(rs.file.tmp, s.opts.MaxSnapshotBytes)
}

// DiscardReceived deletes the snapshot meta that was received and not
// yet taken by raft (its file is removed).
func (s *Storage) DiscardReceived(meta raftpb.SnapshotMetadata) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.received
	if rs == nil || rs.meta.Index != meta.Index || rs.meta.Term != meta.Term {
		return
	}
	s.received = nil
	if rs.file != nil {
		rs.file.abort()
	}
}

// RemoveStalePartials deletes the partial snapshot files (snappartial.go)
// nothing wrote to for age: a stream that broke and was never resumed —
// the leader moved on, or whoever sent it was not a leader at all — must
// not hold its disk space for good. A stream being received writes its
// file continuously, so its file is never stale.
func (s *Storage) RemoveStalePartials(age time.Duration) error {
	if s.mem {
		return nil
	}
	now := time.Now()
	ents, err := os.ReadDir(s.snapDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), partialSuffix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < age {
			continue
		}
		if err := os.Remove(filepath.Join(s.snapDir, e.Name())); err != nil && !os.IsNotExist(err) {
			return err
		}
		s.log.Warn("storage: removed a partial snapshot nothing wrote to", "file", e.Name(), "age", now.Sub(fi.ModTime()).Round(time.Second))
	}
	return nil
}
