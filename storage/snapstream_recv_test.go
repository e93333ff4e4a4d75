package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"go.etcd.io/raft/v3/raftpb"
)

// A snapshot received as a stream is installed by SaveSnapshot of the
// marker, read back by OpenSnapshotData (streamed, CRC checked), and
// recovered after a restart.
func TestReceiveSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true})
	data := bytes.Repeat([]byte("0123456789"), 300_000)
	meta := raftpb.SnapshotMetadata{Index: 100, Term: 3, ConfState: cs1}
	n, err := s.ReceiveSnapshot(meta, iotest.HalfReader(bytes.NewReader(data)))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("ReceiveSnapshot: %d, %v", n, err)
	}
	if err := s.SaveSnapshot(raftpb.Snapshot{Metadata: meta, Data: ReceivedMarker}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(raftpb.HardState{Term: 3, Commit: 100}, nil); err != nil {
		t.Fatal(err)
	}
	rc, size, err := s.OpenSnapshotData(100, 3)
	if err != nil || size != int64(len(data)) {
		t.Fatalf("OpenSnapshotData: %d, %v", size, err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	// A marker for a snapshot that was not received is refused.
	if err := s.SaveSnapshot(raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 200, Term: 3, ConfState: cs1}, Data: ReceivedMarker}); err == nil {
		t.Fatal("a marker without a received file was installed")
	}
	s.Close()
	s = openT(t, dir, Options{NoSync: true})
	defer s.Close()
	if rec := s.Recovered(); rec.Snapshot.Metadata.Index != 100 || !bytes.Equal(recoveredData(t, s), data) {
		t.Fatalf("recovered snapshot %d with %d bytes", rec.Snapshot.Metadata.Index, len(recoveredData(t, s)))
	}
}

// A stream that fails its checksum leaves nothing behind; a damaged file
// fails the read at its end instead of returning io.EOF.
func TestReceiveSnapshotErrors(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true})
	defer s.Close()
	meta := raftpb.SnapshotMetadata{Index: 10, Term: 2, ConfState: cs1}
	broken := io.MultiReader(bytes.NewReader(make([]byte, 1000)), iotest.ErrReader(fmt.Errorf("stream: %w", ErrStreamCorrupt)))
	if _, err := s.ReceiveSnapshot(meta, broken); err == nil {
		t.Fatal("a corrupt stream was received")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, snapDirName))
	if len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
	if _, err := s.ReceiveSnapshot(meta, bytes.NewReader([]byte("state"))); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSnapshot(raftpb.Snapshot{Metadata: meta, Data: ReceivedMarker}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, snapDirName, snapFileName(10, 2))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-14] ^= 0xff // a byte of the data
	os.WriteFile(path, b, 0o600)
	rc, _, err := s.OpenSnapshotData(10, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); !errors.Is(err, errBadSnapshot) {
		t.Fatalf("reading a damaged file: %v", err)
	}
}

// recoveredData reads the data of the snapshot Open recovered (nil if none).
func recoveredData(t testing.TB, s *Storage) []byte {
	t.Helper()
	rec := s.Recovered()
	if rec.Snapshot.Metadata.Index == 0 {
		return nil
	}
	rc, _, err := s.OpenSnapshotData(rec.Snapshot.Metadata.Index, rec.Snapshot.Metadata.Term)
	if err != nil {
		t.Fatalf("opening the recovered snapshot: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading the recovered snapshot: %v", err)
	}
	if len(b) == 0 {
		return nil
	}
	return b
}
