package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashDirEnv) != "" {
		crashChild() // never returns
	}
	goleak.VerifyTestMain(m)
}

// entryData is the deterministic payload of entry i: tests check every
// recovered entry against it.
func entryData(i uint64, size int) []byte {
	b := make([]byte, size)
	for j := range b {
		b[j] = byte(i>>uint(8*(j%8))) ^ byte(j) | 1 // never zero, so no sector looks torn
	}
	if size >= 8 {
		copy(b, fmt.Sprintf("%08x", uint32(i)))
	}
	return b
}

func mkEntries(term, lo, hi uint64, size int) []raftpb.Entry {
	var out []raftpb.Entry
	for i := lo; i <= hi; i++ {
		out = append(out, raftpb.Entry{Term: term, Index: i, Type: raftpb.EntryNormal, Data: entryData(i, size)})
	}
	return out
}

func openT(t *testing.T, dir string, opts Options) *Storage {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

func closeT(t *testing.T, s *Storage) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// checkEntries verifies that the MemoryStorage holds entries lo..hi with
// the payloads written by mkEntries.
func checkEntries(t *testing.T, s *Storage, lo, hi uint64, size int) {
	t.Helper()
	ms := s.RaftStorage()
	if lo > hi {
		return
	}
	ents, err := ms.Entries(lo, hi+1, ^uint64(0))
	if err != nil {
		t.Fatalf("Entries(%d, %d): %v", lo, hi+1, err)
	}
	for k, e := range ents {
		want := lo + uint64(k)
		if e.Index != want || !bytes.Equal(e.Data, entryData(want, size)) {
			t.Fatalf("entry %d: got index %d data %q", want, e.Index, e.Data)
		}
	}
}

func TestFreshAndRestart(t *testing.T) {
	dir := t.TempDir()
	md := []byte("member-1")
	s := openT(t, dir, Options{Metadata: md})
	if rec := s.Recovered(); !rec.Fresh || !bytes.Equal(rec.Metadata, md) {
		t.Fatalf("fresh dir: %+v", rec)
	}
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 1}, mkEntries(1, 1, 10, 100)); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: 7}, mkEntries(2, 11, 12, 100)); err != nil {
		t.Fatal(err)
	}
	closeT(t, s)

	s = openT(t, dir, Options{Metadata: md})
	defer closeT(t, s)
	rec := s.Recovered()
	want := raftpb.HardState{Term: 2, Vote: 1, Commit: 7}
	if rec.Fresh || rec.HardState != want || rec.FirstIndex != 1 || rec.LastIndex != 12 || !bytes.Equal(rec.Metadata, md) {
		t.Fatalf("recovered %+v", rec)
	}
	checkEntries(t, s, 1, 12, 100)
	hs, _, err := s.RaftStorage().InitialState()
	if err != nil || hs != want {
		t.Fatalf("InitialState = %+v, %v", hs, err)
	}
	// The reopened storage appends where it left off, overwriting the
	// uncommitted suffix as raft does after a leader change.
	if err := s.Save(raftpb.HardState{Term: 3, Vote: 2, Commit: 12}, mkEntries(3, 12, 14, 50)); err != nil {
		t.Fatal(err)
	}
	closeT(t, s)
	s = openT(t, dir, Options{})
	defer closeT(t, s)
	checkEntries(t, s, 1, 11, 100)
	checkEntries(t, s, 12, 14, 50)
	if got := s.Recovered().HardState.Term; got != 3 {
		t.Fatalf("term %d", got)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Metadata: []byte("a")})
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	closeT(t, s)
	if _, err := Open(dir, Options{Metadata: []byte("b")}); !errors.Is(err, ErrMetadataMismatch) {
		t.Fatalf("Open with other metadata: %v, want ErrMetadataMismatch", err)
	}
	// The failed Open released the lock.
	s = openT(t, dir, Options{Metadata: []byte("a")})
	closeT(t, s)
	if err := s.Save(raftpb.HardState{Term: 1}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Save after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	// Snapshot files without a WAL are not a fresh directory.
	dir2 := t.TempDir()
	os.MkdirAll(filepath.Join(dir2, snapDirName), 0o750)
	snap := raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 5, Term: 1}}
	if err := writeSnapFile(filepath.Join(dir2, snapDirName), &snap, fileSteps{noSync: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir2, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("snapshots without WAL: %v, want ErrCorrupt", err)
	}
}

var cs1 = raftpb.ConfState{Voters: []uint64{1}}

func TestSnapshotAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{CatchUpEntries: 10})
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 100}, mkEntries(1, 1, 100, 64)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSnapshot(50, &cs1, []byte("state@50")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := s.RaftStorage().FirstIndex(); fi != 41 {
		t.Fatalf("after compaction first index %d, want 41 (10 catch-up entries kept)", fi)
	}
	for _, tt := range []struct {
		index uint64
		want  error
	}{{50, raft.ErrSnapOutOfDate}, {40, raft.ErrSnapOutOfDate}, {101, ErrSnapshotIndex}} {
		if err := s.CreateSnapshot(tt.index, &cs1, nil); !errors.Is(err, tt.want) {
			t.Errorf("CreateSnapshot(%d) = %v, want %v", tt.index, err, tt.want)
		}
	}
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 120}, mkEntries(1, 101, 120, 64)); err != nil {
		t.Fatal(err)
	}
	closeT(t, s)

	s = openT(t, dir, Options{})
	defer closeT(t, s)
	rec := s.Recovered()
	if rec.Snapshot.Metadata.Index != 50 || string(recoveredData(t, s)) != "state@50" ||
		len(rec.Snapshot.Metadata.ConfState.Voters) != 1 || rec.FirstIndex != 51 || rec.LastIndex != 120 ||
		rec.HardState.Commit != 120 {
		t.Fatalf("recovered %+v", rec)
	}
	checkEntries(t, s, 51, 120, 64)
	if got := s.SnapshotIndex(); got != 50 {
		t.Fatalf("SnapshotIndex %d", got)
	}
}

func TestSnapshotTooLarge(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxSnapshotBytes: 10, NoSync: true})
	defer closeT(t, s)
	s.Save(raftpb.HardState{Term: 1, Commit: 3}, mkEntries(1, 1, 3, 8))
	if err := s.CreateSnapshot(2, &cs1, make([]byte, 11)); !errors.Is(err, ErrSnapshotTooLarge) {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	big := raftpb.Snapshot{Data: make([]byte, 11), Metadata: raftpb.SnapshotMetadata{Index: 10, Term: 2, ConfState: cs1}}
	if err := s.SaveSnapshot(big); !errors.Is(err, ErrSnapshotTooLarge) {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	// Neither error is sticky.
	if err := s.CreateSnapshot(2, &cs1, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
}

// writeSnapshots writes entries 1..n (one Save per 10) and a snapshot every
// `every` entries whose data names its index.
func writeSnapshots(t *testing.T, s *Storage, n, every uint64, size int) {
	t.Helper()
	for i := uint64(1); i <= n; i += 10 {
		hi := min(i+9, n)
		if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: hi}, mkEntries(1, i, hi, size)); err != nil {
			t.Fatal(err)
		}
		for j := i; j <= hi; j++ {
			if j%every == 0 {
				if err := s.CreateSnapshot(j, &cs1, fmt.Appendf(nil, "state@%d", j)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestCorruptNewestSnapshotFallsBack(t *testing.T) {
	for _, tt := range []struct {
		name    string
		corrupt func(path string) error
	}{
		{"flipped byte", func(p string) error {
			b, _ := os.ReadFile(p)
			b[len(b)-6] ^= 0x40
			return os.WriteFile(p, b, 0o600)
		}},
		{"truncated", func(p string) error {
			fi, _ := os.Stat(p)
			return os.Truncate(p, fi.Size()/2)
		}},
		{"empty", func(p string) error { return os.Truncate(p, 0) }},
		{"huge declared length", func(p string) error {
			b, _ := os.ReadFile(p)
			for i := 16; i < 24; i++ {
				b[i] = 0x7f
			}
			return os.WriteFile(p, b, 0o600)
		}},
		{"renamed", func(p string) error {
			// A valid file under another snapshot's name.
			dir := filepath.Dir(p)
			files, _ := listSnapFiles(dir)
			b, _ := os.ReadFile(filepath.Join(dir, files[0].name))
			return os.WriteFile(p, b, 0o600)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Options{NoSync: true, CatchUpEntries: 5})
			writeSnapshots(t, s, 95, 30, 40)
			closeT(t, s)
			files, _ := listSnapFiles(filepath.Join(dir, snapDirName))
			if len(files) != 3 || files[2].index != 90 {
				t.Fatalf("snapshot files %v", files)
			}
			newest := filepath.Join(dir, snapDirName, files[2].name)
			if err := tt.corrupt(newest); err != nil {
				t.Fatal(err)
			}
			s = openT(t, dir, Options{NoSync: true})
			defer closeT(t, s)
			rec := s.Recovered()
			if rec.Snapshot.Metadata.Index != 60 || string(recoveredData(t, s)) != "state@60" || rec.LastIndex != 95 {
				t.Fatalf("recovered snapshot %d %q last %d, want 60", rec.Snapshot.Metadata.Index, recoveredData(t, s), rec.LastIndex)
			}
			checkEntries(t, s, 61, 95, 40)
			if _, err := os.Stat(newest + brokenSuffix); err != nil {
				t.Fatalf("broken file not kept aside: %v", err)
			}
		})
	}
}

func TestOrphanSnapshotIsDeleted(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true})
	writeSnapshots(t, s, 39, 20, 16)
	closeT(t, s)
	// A crash after writing a snapshot file but before its WAL record.
	orphan := raftpb.Snapshot{Data: []byte("x"), Metadata: raftpb.SnapshotMetadata{Index: 40, Term: 1, ConfState: cs1}}
	if err := writeSnapFile(filepath.Join(dir, snapDirName), &orphan, fileSteps{noSync: true}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, snapDirName, snapFileName(45, 1)+tmpSuffix), []byte("partial"), 0o600)
	s = openT(t, dir, Options{NoSync: true})
	defer closeT(t, s)
	if got := s.Recovered().Snapshot.Metadata.Index; got != 20 {
		t.Fatalf("recovered snapshot %d, want 20", got)
	}
	files, _ := listSnapFiles(filepath.Join(dir, snapDirName))
	if len(files) != 1 || files[0].index != 20 {
		t.Fatalf("files after Open: %v", files)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, snapDirName)); len(ents) != 1 {
		t.Fatalf("temp file not removed: %v", ents)
	}
}

func TestReceivedSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 2, Commit: 5}, mkEntries(1, 1, 10, 32)); err != nil {
		t.Fatal(err)
	}
	snap := raftpb.Snapshot{Data: []byte("leader state"), Metadata: raftpb.SnapshotMetadata{Index: 1000, Term: 3, ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}}
	if err := s.SaveSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSnapshot(snap); !errors.Is(err, raft.ErrSnapOutOfDate) {
		t.Fatalf("same snapshot again: %v", err)
	}
	if err := s.Save(raftpb.HardState{Term: 3, Commit: 1000}, mkEntries(3, 1001, 1005, 32)); err != nil {
		t.Fatal(err)
	}
	closeT(t, s)
	s = openT(t, dir, Options{})
	defer closeT(t, s)
	rec := s.Recovered()
	if rec.Snapshot.Metadata.Index != 1000 || string(recoveredData(t, s)) != "leader state" || rec.FirstIndex != 1001 || rec.LastIndex != 1005 {
		t.Fatalf("recovered %+v", rec)
	}
	checkEntries(t, s, 1001, 1005, 32)
}

// A crash after the snapshot's WAL record but before the hard state that
// commits it: the snapshot is not trusted, the old state comes back.
func TestReceivedSnapshotWithoutHardState(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	if err := s.Save(raftpb.HardState{Term: 1, Vote: 2, Commit: 5}, mkEntries(1, 1, 10, 32)); err != nil {
		t.Fatal(err)
	}
	snap := raftpb.Snapshot{Data: []byte("leader state"), Metadata: raftpb.SnapshotMetadata{Index: 1000, Term: 3, ConfState: cs1}}
	if err := s.SaveSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	closeT(t, s)
	s = openT(t, dir, Options{})
	defer closeT(t, s)
	rec := s.Recovered()
	if rec.Snapshot.Metadata.Index != 0 || rec.LastIndex != 10 || rec.HardState.Commit != 5 {
		t.Fatalf("recovered %+v", rec)
	}
	checkEntries(t, s, 1, 10, 32)
}

func TestRetentionAndWALPurge(t *testing.T) {
	old := wal.SegmentSizeBytes
	SetWALSegmentSize(32 << 10)
	t.Cleanup(func() { SetWALSegmentSize(old) })

	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true, CatchUpEntries: 50})
	writeSnapshots(t, s, 3000, 500, 200) // ~600 KiB of entries, ~20 segments
	closeT(t, s)

	files, _ := listSnapFiles(filepath.Join(dir, snapDirName))
	if len(files) != DefaultSnapRetain || files[0].index != 2000 {
		t.Fatalf("snapshot files %v, want 2000, 2500, 3000", files)
	}
	segs, _ := listWALFiles(filepath.Join(dir, walDirName))
	if segs[0].index == 0 || len(segs) > 10 {
		t.Fatalf("WAL segments not purged: %v", segs)
	}
	// Purged segments are renamed, then unlinked in the background;
	// Close waited for that.
	ents, _ := os.ReadDir(filepath.Join(dir, walDirName))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), purgedSuffix) {
			t.Fatalf("%s left after Close", e.Name())
		}
	}
	// One a crash left between the rename and the unlink goes at Open.
	leftover := filepath.Join(dir, walDirName, "0000000000000000-0000000000000000.wal"+purgedSuffix)
	if err := os.WriteFile(leftover, []byte("old segment"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Segments needed by the oldest kept snapshot remain: losing the two
	// newest snapshots still recovers.
	for _, f := range files[1:] {
		os.Truncate(filepath.Join(dir, snapDirName, f.name), 3)
	}
	s = openT(t, dir, Options{NoSync: true})
	defer closeT(t, s)
	rec := s.Recovered()
	if rec.Snapshot.Metadata.Index != 2000 || rec.LastIndex != 3000 {
		t.Fatalf("recovered snapshot %d last %d", rec.Snapshot.Metadata.Index, rec.LastIndex)
	}
	checkEntries(t, s, 2001, 3000, 200)
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("renamed segment left by a crash survived Open: %v", err)
	}
}

// The entries kept behind a snapshot are bounded by their size as well as
// their count: large entries are compacted sooner.
func TestCompactionBoundedByBytes(t *testing.T) {
	sz := uint64(mkEntries(1, 1, 1, 64)[0].Size())
	for _, tt := range []struct {
		name      string
		opts      Options
		wantFirst uint64
	}{
		{"count bounds", Options{CatchUpEntries: 10, CatchUpBytes: 100 * sz}, 41},
		{"bytes bound", Options{CatchUpEntries: 30, CatchUpBytes: 10 * sz}, 41},
		{"bytes bound, not a whole entry", Options{CatchUpEntries: 30, CatchUpBytes: 10*sz + sz/2}, 41},
		{"one entry over", Options{CatchUpEntries: 30, CatchUpBytes: sz - 1}, 51},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, mem := range []bool{false, true} {
				var s *Storage
				if mem {
					s = OpenMemory(tt.opts)
				} else {
					s = openT(t, t.TempDir(), tt.opts)
				}
				if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 100}, mkEntries(1, 1, 100, 64)); err != nil {
					t.Fatal(err)
				}
				if err := s.CreateSnapshot(50, &cs1, []byte("state@50")); err != nil {
					t.Fatal(err)
				}
				if fi, _ := s.RaftStorage().FirstIndex(); fi != tt.wantFirst {
					t.Errorf("memory %v: first index %d after the snapshot at 50, want %d", mem, fi, tt.wantFirst)
				}
				closeT(t, s)
			}
		})
	}
}
