package storage

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// A received snapshot can be read back before raft takes it, and
// discarded: its file goes, and raft can no longer take it.
func TestOpenAndDiscardReceived(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true})
	defer s.Close()
	meta := raftpb.SnapshotMetadata{Index: 40, Term: 3, ConfState: cs1}
	data := bytes.Repeat([]byte("snapshot data "), 5000)
	if _, err := s.ReceiveSnapshot(meta, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	rc, err := s.OpenReceived(meta)
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read back %d bytes, %v", len(back), err)
	}
	if _, err := s.OpenReceived(raftpb.SnapshotMetadata{Index: 41, Term: 3}); err == nil {
		t.Fatal("opened a snapshot that was not received")
	}
	s.DiscardReceived(meta)
	if err := s.SaveSnapshot(raftpb.Snapshot{Metadata: meta, Data: ReceivedMarker}); err == nil {
		t.Fatal("a discarded snapshot was installed")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, snapDirName))
	for _, e := range ents {
		t.Errorf("left in the snapshot directory: %s", e.Name())
	}
}

// A partial file of a stream that was never resumed is removed once
// nothing wrote to it for the given age; a fresh one stays.
func TestRemoveStalePartials(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true})
	defer s.Close()
	meta := raftpb.SnapshotMetadata{Index: 500, Term: 4, ConfState: cs1}
	data := make([]byte, 1<<20)
	if _, err := s.ReceiveSnapshot(meta, brokenAfter(data, 1<<19)); err == nil {
		t.Fatal("a broken stream was received")
	}
	if got := partialFiles(t, dir); len(got) != 1 {
		t.Fatalf("partial files after a broken stream: %v", got)
	}
	if err := s.RemoveStalePartials(time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := partialFiles(t, dir); len(got) != 1 {
		t.Fatalf("a fresh partial file was removed: %v", got)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, name := range partialFiles(t, dir) {
		if err := os.Chtimes(name, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RemoveStalePartials(time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := partialFiles(t, dir); len(got) != 0 {
		t.Fatalf("a stale partial file was kept: %v", got)
	}
	if n, _, err := s.HeldSnapshot(meta); n != 0 || err != nil {
		t.Fatalf("HeldSnapshot after the removal: %d, %v", n, err)
	}
}
