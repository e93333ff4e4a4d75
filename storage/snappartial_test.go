package storage

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"go.etcd.io/raft/v3/raftpb"
)

// brokenAfter yields data[:n] and then fails as a reset connection does.
func brokenAfter(data []byte, n int) io.Reader {
	return io.MultiReader(bytes.NewReader(data[:n]), iotest.ErrReader(errors.New("connection reset by peer")))
}

// A stream cut in the middle leaves its data in a partial file; the next
// stream of the same snapshot resumes after it, also after a restart, and
// the installed snapshot is byte for byte the sender's.
func TestResumeSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true})
	data := make([]byte, 3<<20+777)
	for i := range data {
		data[i] = byte(i*31 + i>>13)
	}
	meta := raftpb.SnapshotMetadata{Index: 500, Term: 4, ConfState: cs1}
	if n, crc, err := s.HeldSnapshot(meta); n != 0 || crc != 0 || err != nil {
		t.Fatalf("HeldSnapshot before any stream: %d %x %v", n, crc, err)
	}
	cut := 1<<20 + 12345
	if _, err := s.ReceiveSnapshot(meta, brokenAfter(data, cut)); err == nil {
		t.Fatal("a broken stream was received")
	}
	// A restart in between: the partial file survives it.
	s.Close()
	s = openT(t, dir, Options{NoSync: true})
	defer func() { s.Close() }()
	n, crc, err := s.HeldSnapshot(meta)
	if err != nil || n != int64(cut) || crc != crc32.Checksum(data[:cut], crcTable) {
		t.Fatalf("HeldSnapshot: %d bytes crc %x, %v; want %d bytes crc %x", n, crc, err, cut, crc32.Checksum(data[:cut], crcTable))
	}
	// A second break further on, then the rest.
	cut2 := 2<<20 + 1
	if _, err := s.ResumeSnapshot(meta, n, brokenAfter(data[n:], cut2-cut)); err == nil {
		t.Fatal("a broken stream was received")
	}
	if n, _, _ = s.HeldSnapshot(meta); n != int64(cut2) {
		t.Fatalf("held %d bytes after the second break, want %d", n, cut2)
	}
	got, err := s.ResumeSnapshot(meta, n, bytes.NewReader(data[n:]))
	if err != nil || got != int64(len(data)) {
		t.Fatalf("ResumeSnapshot: %d, %v", got, err)
	}
	if err := s.SaveSnapshot(raftpb.Snapshot{Metadata: meta, Data: ReceivedMarker}); err != nil {
		t.Fatal(err)
	}
	rc, size, err := s.OpenSnapshotData(500, 4)
	if err != nil || size != int64(len(data)) {
		t.Fatalf("OpenSnapshotData: %d, %v", size, err)
	}
	back, err := io.ReadAll(rc) // checks the file's CRC at its end
	rc.Close()
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read back %d bytes, %v", len(back), err)
	}
	if ents := partialFiles(t, dir); len(ents) != 0 {
		t.Fatalf("partial files left after the install: %v", ents)
	}
}

// What is held is never trusted blindly: a partial file of another
// snapshot, with a damaged header, or of an outdated snapshot is dropped;
// a resume without HeldSnapshot is refused; a stream whose checksum fails
// deletes the partial file.
func TestHeldSnapshotDropsWhatDoesNotMatch(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true})
	defer s.Close()
	data := bytes.Repeat([]byte("abcdefgh"), 1<<16)
	metaA := raftpb.SnapshotMetadata{Index: 50, Term: 2, ConfState: cs1}
	metaB := raftpb.SnapshotMetadata{Index: 60, Term: 2, ConfState: cs1}
	s.ReceiveSnapshot(metaA, brokenAfter(data, 1000))
	if n, _, _ := s.HeldSnapshot(metaB); n != 0 {
		t.Fatalf("held %d bytes of another snapshot", n)
	}
	if ents := partialFiles(t, dir); len(ents) != 0 {
		t.Fatalf("the other snapshot's partial file was kept: %v", ents)
	}
	// Resuming at an offset HeldSnapshot did not report is refused.
	if _, err := s.ResumeSnapshot(metaB, 1000, bytes.NewReader(data[1000:])); err == nil {
		t.Fatal("resumed without a held partial file")
	}
	// A damaged header.
	s.ReceiveSnapshot(metaB, brokenAfter(data, 5000))
	path := filepath.Join(dir, snapDirName, snapFileName(60, 2)+partialSuffix)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[3] ^= 0x40
	os.WriteFile(path, b, 0o600)
	if n, _, _ := s.HeldSnapshot(metaB); n != 0 {
		t.Fatalf("held %d bytes of a partial file with a bad magic", n)
	}
	// A corrupt stream deletes the partial file.
	s.ReceiveSnapshot(metaB, brokenAfter(data, 5000))
	n, _, _ := s.HeldSnapshot(metaB)
	if n != 5000 {
		t.Fatalf("held %d bytes, want 5000", n)
	}
	corrupt := io.MultiReader(bytes.NewReader(data[n:]), iotest.ErrReader(fmt.Errorf("end: %w", ErrStreamCorrupt)))
	if _, err := s.ResumeSnapshot(metaB, n, corrupt); !errors.Is(err, ErrStreamCorrupt) {
		t.Fatalf("a corrupt stream: %v", err)
	}
	if ents := partialFiles(t, dir); len(ents) != 0 {
		t.Fatalf("a corrupt stream's partial file was kept: %v", ents)
	}
	// A partial file of a snapshot older than the one installed goes.
	s.ReceiveSnapshot(metaA, brokenAfter(data, 1000))
	if _, err := s.ReceiveSnapshot(metaB, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSnapshot(raftpb.Snapshot{Metadata: metaB, Data: ReceivedMarker}); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.HeldSnapshot(metaA); n != 0 {
		t.Fatalf("held %d bytes of an outdated snapshot", n)
	}
	if ents := partialFiles(t, dir); len(ents) != 0 {
		t.Fatalf("partial files of outdated snapshots: %v", ents)
	}
}

func partialFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, snapDirName, "*"+partialSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
