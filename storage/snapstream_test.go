package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// TestBeginSnapshotStreams: the data is streamed into the file by the
// callback, WAL appends go on between BeginSnapshot and Commit, and after
// a restart the snapshot and every entry are there.
func TestBeginSnapshotStreams(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{CatchUpEntries: 5})
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 40}, mkEntries(1, 1, 40, 32)); err != nil {
		t.Fatal(err)
	}
	var want []byte
	p, err := s.BeginSnapshot(30, &cs1, func(w io.Writer) error {
		for i := range 1000 { // many small writes, as a tree walk makes
			chunk := bytes.Repeat([]byte{byte(i)}, i%97+1)
			want = append(want, chunk...)
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Index() != 30 || p.Bytes() != int64(len(want)) {
		t.Fatalf("pending index %d bytes %d, want 30 and %d", p.Index(), p.Bytes(), len(want))
	}
	// Nothing is installed before Commit, and the WAL is still writable.
	if got := s.SnapshotIndex(); got != 0 {
		t.Fatalf("SnapshotIndex before Commit = %d", got)
	}
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 50}, mkEntries(1, 41, 50, 32)); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err == nil {
		t.Fatal("a second Commit succeeded")
	}
	if fi, _ := s.RaftStorage().FirstIndex(); fi != 26 {
		t.Fatalf("first index after compaction %d, want 26", fi)
	}
	data, err := s.SnapshotData(30, 1)
	if err != nil || !bytes.Equal(data, want) {
		t.Fatalf("SnapshotData: %d bytes, %v", len(data), err)
	}
	closeT(t, s)

	s = openT(t, dir, Options{})
	defer closeT(t, s)
	rec := s.Recovered()
	if rec.Snapshot.Metadata.Index != 30 || !bytes.Equal(recoveredData(t, s), want) || rec.LastIndex != 50 {
		t.Fatalf("recovered snapshot %d (%d bytes), last index %d", rec.Snapshot.Metadata.Index, len(recoveredData(t, s)), rec.LastIndex)
	}
	checkEntries(t, s, 31, 50, 32)
}

// TestBeginSnapshotFailures: a failing callback, too much data and an
// aborted snapshot leave no file behind and the storage usable; a
// snapshot overtaken by a newer one (sent by a leader) is refused at
// Commit.
func TestBeginSnapshotFailures(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true, MaxSnapshotBytes: 100})
	defer closeT(t, s)
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 20}, mkEntries(1, 1, 20, 8)); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := s.BeginSnapshot(10, &cs1, func(w io.Writer) error { w.Write([]byte("x")); return boom }); !errors.Is(err, boom) {
		t.Fatalf("failing callback: %v", err)
	}
	if _, err := s.BeginSnapshot(10, &cs1, func(w io.Writer) error { _, err := w.Write(make([]byte, 101)); return err }); !errors.Is(err, ErrSnapshotTooLarge) {
		t.Fatalf("too much data: %v", err)
	}
	p, err := s.BeginSnapshot(10, &cs1, func(w io.Writer) error { _, err := w.Write([]byte("ten")); return err })
	if err != nil {
		t.Fatal(err)
	}
	p.Abort()
	assertNoSnapFiles(t, filepath.Join(dir, "snap"))

	p, err = s.BeginSnapshot(10, &cs1, func(w io.Writer) error { _, err := w.Write([]byte("ten")); return err })
	if err != nil {
		t.Fatal(err)
	}
	newer := raftpb.Snapshot{Data: []byte("fifteen"), Metadata: raftpb.SnapshotMetadata{Index: 15, Term: 1, ConfState: cs1}}
	if err := s.SaveSnapshot(newer); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Fatalf("Commit after a newer snapshot: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "snap", snapFileName(10, 1))); !os.IsNotExist(err) {
		t.Fatalf("overtaken snapshot file: %v", err)
	}
	if got := s.SnapshotIndex(); got != 15 {
		t.Fatalf("SnapshotIndex = %d", got)
	}
}

func assertNoSnapFiles(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), snapSuffix) {
			t.Fatalf("left behind: %s", e.Name())
		}
	}
}

// TestDecodeSnapshotVersion1: files written by earlier versions (data
// length in the header) are still read; a version 2 file whose trailer
// disagrees with its size is refused.
func TestDecodeSnapshotVersion1(t *testing.T) {
	meta := raftpb.SnapshotMetadata{Index: 7, Term: 2, ConfState: cs1}
	mb, _ := meta.Marshal()
	data := []byte("version one data")
	var b bytes.Buffer
	b.WriteString(snapMagic)
	binary.Write(&b, binary.BigEndian, uint32(1))
	binary.Write(&b, binary.BigEndian, uint32(len(mb)))
	binary.Write(&b, binary.BigEndian, uint64(len(data)))
	b.Write(mb)
	b.Write(data)
	binary.Write(&b, binary.BigEndian, crc32.Checksum(b.Bytes(), crcTable))
	snap, err := decodeSnapshot(bytes.NewReader(b.Bytes()), int64(b.Len()), 1<<20)
	if err != nil || snap.Metadata.Index != 7 || !bytes.Equal(snap.Data, data) {
		t.Fatalf("v1: %v %+v", err, snap)
	}

	// Version 2, as written now, then with a wrong trailer length.
	dir := t.TempDir()
	sf, err := createSnapFile(dir, meta, -1, func(w io.Writer) error { _, err := w.Write(data); return err })
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.install(fileSteps{noSync: true}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, snapFileName(7, 2)))
	if err != nil {
		t.Fatal(err)
	}
	snap, err = decodeSnapshot(bytes.NewReader(raw), int64(len(raw)), 1<<20)
	if err != nil || !bytes.Equal(snap.Data, data) {
		t.Fatalf("v2: %v", err)
	}
	bad := bytes.Clone(raw)
	binary.BigEndian.PutUint64(bad[len(bad)-12:], uint64(len(data)+1))
	if _, err := decodeSnapshot(bytes.NewReader(bad), int64(len(bad)), 1<<20); !errors.Is(err, errBadSnapshot) {
		t.Fatalf("wrong trailer length: %v", err)
	}
	if _, err := decodeSnapshot(bytes.NewReader(raw), int64(len(raw)), int64(len(data)-1)); !errors.Is(err, ErrSnapshotTooLarge) {
		t.Fatalf("over the bound: %v", err)
	}
}
