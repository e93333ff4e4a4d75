package storage

import (
	"errors"
	"io"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// A memory Storage follows the same contract as a durable one: entries,
// local snapshots with compaction, received snapshots, the size bound; it
// writes nothing to disk.
func TestMemoryStorage(t *testing.T) {
	s := OpenMemory(Options{CatchUpEntries: 10, MaxSnapshotBytes: 64})
	if !s.Memory() || !s.Recovered().Fresh || s.Dir() != "" {
		t.Fatalf("OpenMemory: memory %v, recovered %+v, dir %q", s.Memory(), s.Recovered(), s.Dir())
	}
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 100}, mkEntries(1, 1, 100, 64)); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, s, 1, 100, 64)
	if err := s.CreateSnapshot(50, &cs1, []byte("state@50")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := s.RaftStorage().FirstIndex(); fi != 41 {
		t.Fatalf("after compaction first index %d, want 41", fi)
	}
	if got, err := s.SnapshotData(50, 1); err != nil || string(got) != "state@50" {
		t.Fatalf("SnapshotData(50, 1) = %q, %v", got, err)
	}
	if _, err := s.SnapshotData(40, 1); err == nil {
		t.Fatal("SnapshotData of a snapshot not held: no error")
	}
	for _, tt := range []struct {
		index uint64
		want  error
	}{{50, raft.ErrSnapOutOfDate}, {101, ErrSnapshotIndex}} {
		if err := s.CreateSnapshot(tt.index, &cs1, nil); !errors.Is(err, tt.want) {
			t.Errorf("CreateSnapshot(%d) = %v, want %v", tt.index, err, tt.want)
		}
	}
	big := make([]byte, 65)
	if err := s.CreateSnapshot(60, &cs1, big); !errors.Is(err, ErrSnapshotTooLarge) {
		t.Fatalf("oversized snapshot: %v", err)
	}
	// A pending snapshot overtaken by a received one is refused.
	p, err := s.BeginSnapshot(70, &cs1, func(w io.Writer) error { _, err := w.Write([]byte("state@70")); return err })
	if err != nil {
		t.Fatal(err)
	}
	recv := raftpb.Snapshot{Data: []byte("leader@200"), Metadata: raftpb.SnapshotMetadata{Index: 200, Term: 2, ConfState: cs1}}
	if err := s.SaveSnapshot(recv); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Fatalf("overtaken snapshot: Commit = %v", err)
	}
	if got, err := s.SnapshotData(200, 2); err != nil || string(got) != "leader@200" {
		t.Fatalf("SnapshotData(200, 2) = %q, %v", got, err)
	}
	if got := s.SnapshotIndex(); got != 200 {
		t.Fatalf("SnapshotIndex %d", got)
	}
	if err := s.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: 210}, mkEntries(2, 201, 210, 8)); err != nil {
		t.Fatal(err)
	}
	checkEntries(t, s, 201, 210, 8)
	closeT(t, s)
	if err := s.Save(raftpb.HardState{}, mkEntries(2, 211, 211, 8)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Save after Close: %v", err)
	}
}
