package storage

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
)

// walRecord is a record of a WAL file and where it ends.
type walRecord struct {
	start, end int64
	typ        int64
	entry      uint64 // entry index for entry records
	commit     uint64 // commit for hard state records
}

// scanWAL decodes every record of one WAL segment file.
func scanWAL(t *testing.T, path string) []walRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := wal.NewDecoder(fileutil.NewFileReader(f))
	var out []walRecord
	var rec walpb.Record
	for {
		start := dec.LastOffset()
		if err := dec.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decode: %v", err)
		}
		r := walRecord{start: start, end: dec.LastOffset(), typ: rec.Type}
		switch rec.Type {
		case wal.EntryType:
			var e raftpb.Entry
			e.Unmarshal(rec.Data)
			r.entry = e.Index
		case wal.StateType:
			var hs raftpb.HardState
			hs.Unmarshal(rec.Data)
			r.commit = hs.Commit
		case wal.CrcType:
			dec.UpdateCRC(rec.Crc)
		}
		out = append(out, r)
	}
}

// TestTornTail cuts the WAL at many offsets, as a crash in the middle of a
// write would, and checks that Open recovers exactly the records before the
// cut: never a panic, never a lost record that was complete on disk, never
// a record that was not.
func TestTornTail(t *testing.T) {
	old := wal.SegmentSizeBytes
	SetWALSegmentSize(256 << 10) // less to preallocate on every Open
	t.Cleanup(func() { SetWALSegmentSize(old) })
	src := t.TempDir()
	s := openT(t, src, Options{NoSync: true})
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := map[uint64]int{}
	const n = 120
	for i := uint64(1); i <= n; i++ {
		size := 1 + rng.IntN(1500)
		if i > n-3 {
			size = 1 + rng.IntN(300) // keeps the densely tested tail short
		}
		sizes[i] = size
		e := raftpb.Entry{Term: 1, Index: i, Data: entryData(i, size)}
		if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: i}, []raftpb.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	closeT(t, s)
	segs, _ := listWALFiles(filepath.Join(src, walDirName))
	if len(segs) != 1 {
		t.Fatalf("want one segment, got %v", segs)
	}
	segPath := filepath.Join(src, walDirName, segs[0].name)
	recs := scanWAL(t, segPath)
	content, err := os.ReadFile(segPath)
	if err != nil {
		t.Fatal(err)
	}
	dataEnd := recs[len(recs)-1].end
	// The segment is preallocated to 64 MB of zeros; a few KiB of them
	// stand for the rest.
	content = content[:dataEnd+8192]
	headerEnd := int64(0)
	for _, r := range recs {
		if r.typ == wal.SnapshotType {
			headerEnd = r.end
		}
	}

	// Every offset in the last entry and hard state records and in the
	// header, every seventh one in the three entries before, and a random
	// sample of the rest.
	offsets := map[int64]bool{}
	for o := recs[len(recs)-2].start; o <= dataEnd; o++ {
		offsets[o] = true
	}
	for o := recs[len(recs)-8].start; o < recs[len(recs)-2].start; o += 7 {
		offsets[o] = true
	}
	for o := int64(0); o <= headerEnd+16; o++ {
		offsets[o] = true
	}
	for range 150 {
		offsets[rng.Int64N(dataEnd)] = true
	}

	check := func(t *testing.T, o int64, zeroFill bool) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, walDirName), 0o750)
		var b []byte
		if zeroFill {
			// The tail of a preallocated segment: the file keeps its size,
			// the bytes after the tear are zero.
			b = append(append([]byte(nil), content[:o]...), make([]byte, len(content)-int(o))...)
		} else {
			b = content[:o]
		}
		if err := os.WriteFile(filepath.Join(dir, walDirName, segs[0].name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{NoSync: true})
		if o < headerEnd {
			// A WAL is created whole (temporary directory + rename), so
			// a torn header is not a crash case; it must still be a clean
			// error, or an empty log.
			if err == nil {
				if last := s.Recovered().LastIndex; last != 0 {
					t.Fatalf("offset %d: torn header recovered entries up to %d", o, last)
				}
				s.Close()
			} else if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("offset %d: %v", o, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("offset %d (zero fill %v): Open: %v", o, zeroFill, err)
		}
		defer s.Close()
		var complete, started, commit uint64
		for _, r := range recs {
			if r.typ == wal.EntryType && r.start < o {
				started = r.entry
			}
			if r.end <= o {
				switch r.typ {
				case wal.EntryType:
					complete = r.entry
				case wal.StateType:
					commit = r.commit
				}
			}
		}
		rec := s.Recovered()
		if rec.LastIndex < complete || rec.LastIndex > started {
			t.Fatalf("offset %d (zero fill %v): recovered up to %d; complete records up to %d, started %d",
				o, zeroFill, rec.LastIndex, complete, started)
		}
		if rec.HardState.Commit < commit || rec.HardState.Commit > rec.LastIndex {
			t.Fatalf("offset %d: commit %d; complete hard state had %d, last index %d", o, rec.HardState.Commit, commit, rec.LastIndex)
		}
		for i := uint64(1); i <= rec.LastIndex; i++ {
			checkEntries(t, s, i, i, sizes[i])
		}
		if o%17 == 0 {
			// The repaired WAL takes appends and recovers them.
			next := rec.LastIndex + 1
			if err := s.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: next}, mkEntries(2, next, next, 10)); err != nil {
				t.Fatalf("offset %d: Save after repair: %v", o, err)
			}
			s.Close()
			s2 := openT(t, dir, Options{NoSync: true})
			defer s2.Close()
			if r2 := s2.Recovered(); r2.LastIndex != next || r2.Repaired {
				t.Fatalf("offset %d: after repair and append recovered %+v", o, r2)
			}
			checkEntries(t, s2, next, next, 10)
		}
	}
	t.Logf("%d offsets, data ends at %d", len(offsets), dataEnd)
	for o := range offsets {
		check(t, o, false)
	}
	// A torn write within a preallocated segment leaves zeros after the
	// tear. Disks write whole sectors, and a killed process's write stops
	// at a page boundary, so the tear is sector-aligned; etcd's decoder
	// tells such a tear (an all-zero sector inside the record) from
	// corruption, which a tear in the middle of a sector would look like.
	for o := int64(0); o < dataEnd; o += 512 {
		check(t, o, true)
	}
}

// A CRC mismatch that is not a torn tail is corruption: Open refuses
// rather than silently dropping acknowledged records.
func TestMidLogCorruptionIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{NoSync: true})
	for i := uint64(1); i <= 50; i++ {
		if err := s.Save(raftpb.HardState{Term: 1, Commit: i}, mkEntries(1, i, i, 300)); err != nil {
			t.Fatal(err)
		}
	}
	closeT(t, s)
	segs, _ := listWALFiles(filepath.Join(dir, walDirName))
	path := filepath.Join(dir, walDirName, segs[0].name)
	recs := scanWAL(t, path)
	var target walRecord
	for _, r := range recs {
		if r.typ == wal.EntryType && r.entry == 10 {
			target = r
		}
	}
	b, _ := os.ReadFile(path)
	b[target.start+100] ^= 0x10
	os.WriteFile(path, b, 0o600)
	if _, err := Open(dir, Options{NoSync: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrCorrupt", err)
	}
}
