package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/raft/v3/raftpb"
)

// BenchmarkSave measures one Save call carrying 1 or 100 entries of 128
// bytes (a typical small ZooKeeper transaction), with and without fsync.
// With sync, ns/op is dominated by the WAL's fdatasync; entries/s shows
// what group commit buys. "sync" measures once the prefiller has written
// zeros into the WAL's preallocated space, "sync-noprefill" appends into
// space as fallocate left it.
func BenchmarkSave(b *testing.B) {
	for _, perCall := range []int{1, 100} {
		for _, mode := range []string{"sync", "sync-noprefill", "nosync"} {
			b.Run(fmt.Sprintf("entries=%d/%s", perCall, mode), func(b *testing.B) {
				s, err := Open(b.TempDir(), Options{NoSync: mode == "nosync", NoPrefill: mode == "sync-noprefill"})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if mode == "sync" {
					waitPrefilled(b, s)
				}
				data := bytes.Repeat([]byte{'x'}, 128)
				ents := make([]raftpb.Entry, perCall)
				next := uint64(1)
				b.SetBytes(int64(perCall * len(data)))
				b.ResetTimer()
				start := time.Now()
				for b.Loop() {
					for k := range ents {
						ents[k] = raftpb.Entry{Term: 1, Index: next, Data: data}
						next++
					}
					if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: next - 1}, ents); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(next-1)/time.Since(start).Seconds(), "entries/s")
			})
		}
	}
}

// waitPrefilled waits until the prefiller has stopped writing for a
// while (it fills the tail segment and the pipeline's next file after
// Open).
func waitPrefilled(tb testing.TB, s *Storage) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	last := s.PrefilledBytes()
	for time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		cur := s.PrefilledBytes()
		if cur > 0 && cur == last {
			return
		}
		last = cur
	}
	tb.Fatalf("prefill still running after a minute (%d bytes)", last)
}

func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "f"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	off := int64(0)
	for b.Loop() {
		if _, err := f.WriteAt(buf, off); err != nil {
			b.Fatal(err)
		}
		off = (off + 4096) % (64 << 20)
		if err := fileutil.Fdatasync(f); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	dir := f.TempDir()
	for _, snap := range []raftpb.Snapshot{
		{Metadata: raftpb.SnapshotMetadata{Index: 1, Term: 1, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}},
		{Data: []byte("tree"), Metadata: raftpb.SnapshotMetadata{Index: 99, Term: 4, ConfState: raftpb.ConfState{Voters: []uint64{1}, Learners: []uint64{7}}}},
	} {
		if err := writeSnapFile(dir, &snap, fileSteps{noSync: true}); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, snapFileName(snap.Metadata.Index, snap.Metadata.Term)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte(snapMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		snap, err := decodeSnapshot(bytes.NewReader(b), int64(len(b)), 1<<16)
		if err != nil {
			return
		}
		if int64(len(snap.Data)) > 1<<16 || snap.Metadata.Index == 0 {
			t.Fatalf("accepted %d bytes of data at index %d", len(snap.Data), snap.Metadata.Index)
		}
	})
}
