package storage_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
	"github.com/zkgo/zkgo/storage/storagetest"
)

// fpData is the payload of entry i in the failpoint tests.
func fpData(i uint64) []byte {
	b := fmt.Appendf(nil, "entry %d ", i)
	for len(b) < 60+int(i*31%240) {
		b = append(b, byte('a'+i%26))
	}
	return b
}

func fpSnapData(i uint64) []byte { return fmt.Appendf(nil, "snapshot at %d", i) }

const (
	fpSnapEvery = 23  // the workload snapshots every fpSnapEvery entries
	fpMaxIndex  = 600 // and stops here if no failpoint fired
)

// fpResult is what the workload had done when the failpoint fired.
type fpResult struct {
	img       *storagetest.Image
	acked     uint64 // last index of a Save that had returned
	snapDone  uint64 // newest snapshot whose CreateSnapshot had returned
	snapDurab uint64 // newest snapshot whose WAL record was fsynced (PointWALSnapshot)
	snapGoing uint64 // the snapshot being written when the failpoint fired
	// snapMaybe is a snapshot whose WAL record was being fsynced at the
	// crash: a torn write may have put the whole record on disk.
	snapMaybe uint64
}

// runToFailpoint appends entries (1–5 per Save, each Save acknowledged
// when it returns) and snapshots every fpSnapEvery entries, with a
// Recorder installed; at the n-th occurrence of point it freezes the
// Recorder (the crash) and stops. The image is the directory as the crash
// leaves it. With before, the crash comes just before the point instead:
// the step's writes were issued but its fsync had not completed, so the
// image is the previous one and the unsynced writes are in the live tail.
func runToFailpoint(t *testing.T, dir string, point storage.SyncPoint, n int, before bool, seed uint64) fpResult {
	t.Helper()
	rec := storagetest.NewRecorder(dir)
	var res fpResult
	seen, crashed := 0, false
	hook := func(d string, p storage.SyncPoint) {
		if crashed {
			return
		}
		if p == point {
			if seen++; seen == n && before {
				res.img = rec.Freeze()
				crashed = true
				if p == storage.PointWALSnapshot {
					res.snapMaybe = res.snapGoing
				}
				return
			}
		}
		rec.Hook(d, p)
		if p == storage.PointWALSnapshot {
			res.snapDurab = res.snapGoing
		}
		if p == point && seen == n {
			res.img = rec.Freeze()
			crashed = true
		}
	}
	s, err := storage.Open(dir, storage.Options{SyncHook: hook, SnapRetain: 2, CatchUpEntries: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(seed, 3))
	cs := raftpb.ConfState{Voters: []uint64{1}}
	last := uint64(0)
	for !crashed && last < fpMaxIndex {
		k := 1 + uint64(rng.IntN(5))
		var ents []raftpb.Entry
		for i := last + 1; i <= last+k; i++ {
			ents = append(ents, raftpb.Entry{Term: 1, Index: i, Data: fpData(i)})
		}
		if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: last + k}, ents); err != nil {
			t.Fatal(err)
		}
		if crashed {
			break // returned after the crash: not acknowledged
		}
		prev := last
		last += k
		res.acked = last
		if last/fpSnapEvery > prev/fpSnapEvery {
			res.snapGoing = last
			if err := s.CreateSnapshot(last, &cs, fpSnapData(last)); err != nil {
				t.Fatal(err)
			}
			if !crashed {
				res.snapDone = last
			}
		}
	}
	if !crashed {
		t.Fatalf("failpoint %s #%d never reached (%v)", point, n, rec.Image().Counts)
	}
	return res
}

// verifyRecovered opens a crashed directory and checks that every
// acknowledged entry is there, that recovery started from the newest
// snapshot whose WAL record was durable, and that the storage takes
// appends that survive a restart.
func verifyRecovered(t *testing.T, dir string, res fpResult, where string) {
	t.Helper()
	s, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatalf("%s: Open: %v", where, err)
	}
	rec := s.Recovered()
	if rec.LastIndex < res.acked || rec.HardState.Commit < res.acked {
		s.Close()
		t.Fatalf("%s: acknowledged up to %d, recovered last %d commit %d", where, res.acked, rec.LastIndex, rec.HardState.Commit)
	}
	si := rec.Snapshot.Metadata.Index
	if si != res.snapDurab && (si != res.snapMaybe || si == 0) {
		s.Close()
		t.Fatalf("%s: recovered from snapshot %d, want %d (the newest with a durable WAL record)", where, si, res.snapDurab)
	}
	if si > 0 && !bytes.Equal(readRecovered(t, s), fpSnapData(si)) {
		s.Close()
		t.Fatalf("%s: snapshot %d holds %q", where, si, readRecovered(t, s))
	}
	if si < rec.LastIndex {
		ents, err := s.RaftStorage().Entries(si+1, rec.LastIndex+1, ^uint64(0))
		if err != nil {
			s.Close()
			t.Fatalf("%s: entries after snapshot %d: %v", where, si, err)
		}
		for k, e := range ents {
			if i := si + 1 + uint64(k); e.Index != i || !bytes.Equal(e.Data, fpData(i)) {
				s.Close()
				t.Fatalf("%s: entry %d is wrong: index %d data %q", where, i, e.Index, e.Data)
			}
		}
	}
	// Nothing newer than the recovered snapshot is left in snap/: orphan
	// files and temporary files are deleted by Open.
	names, _ := os.ReadDir(filepath.Join(dir, "snap"))
	for _, e := range names {
		var idx, term uint64
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("%s: temporary file %s left after Open", where, e.Name())
		} else if _, err := fmt.Sscanf(e.Name(), "%016x-%016x.snap", &idx, &term); err == nil && idx > si {
			t.Errorf("%s: orphan snapshot %s left after Open (recovered %d)", where, e.Name(), si)
		}
	}
	next := rec.LastIndex + 1
	if err := s.Save(raftpb.HardState{Term: 2, Vote: 1, Commit: next}, []raftpb.Entry{{Term: 2, Index: next, Data: fpData(next)}}); err != nil {
		s.Close()
		t.Fatalf("%s: Save after recovery: %v", where, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatalf("%s: second Open: %v", where, err)
	}
	defer s.Close()
	if got := s.Recovered().LastIndex; got != next {
		t.Fatalf("%s: after an append and a restart, last index %d, want %d", where, got, next)
	}
}

// TestFailpointCrash crashes the storage at its durability boundaries —
// in the middle of writing a snapshot (after the temporary file's fsync,
// between the rename and the directory fsync with the rename lost or
// kept, before its WAL record), after the WAL record, after the purge of
// old files (with deleted files coming back or not), after WAL fsyncs —
// with the durable image of that moment (storagetest.Recorder: every
// unsynced byte dropped), and checks that recovery starts from the newest
// snapshot whose WAL record was durable, loses nothing acknowledged and
// can go on.
func TestFailpointCrash(t *testing.T) {
	old := wal.SegmentSizeBytes
	storage.SetWALSegmentSize(8 << 10) // a cut every ~40 entries, so purges delete segments
	t.Cleanup(func() { storage.SetWALSegmentSize(old) })
	type variant struct {
		name string
		// edit changes the image for the states a crash at the point may
		// also leave.
		edit func(im *storagetest.Image, rng *rand.Rand)
		opts storagetest.MaterializeOptions
	}
	tmpName := func(im *storagetest.Image) string {
		for rel := range im.Files {
			if strings.HasSuffix(rel, ".snap.tmp") {
				return rel
			}
		}
		return ""
	}
	cases := []struct {
		point    storage.SyncPoint
		before   bool // crash while the step's fsync is in flight
		variants []variant
	}{
		{storage.PointSnapTempSynced, false, []variant{
			{name: "tmp-complete"},
			{name: "tmp-absent", edit: func(im *storagetest.Image, _ *rand.Rand) {
				// the crash came before the temporary file's directory
				// entry reached the disk
				delete(im.Files, tmpName(im))
			}},
			{name: "tmp-partial", edit: func(im *storagetest.Image, rng *rand.Rand) {
				// the crash came before its fsync: any prefix
				rel := tmpName(im)
				im.Files[rel] = im.Files[rel][:rng.IntN(len(im.Files[rel]))]
			}},
		}},
		{storage.PointSnapRenamed, false, []variant{
			{name: "rename-lost"},
			{name: "rename-kept", edit: func(im *storagetest.Image, _ *rand.Rand) {
				rel := tmpName(im)
				im.Files[strings.TrimSuffix(rel, ".tmp")] = im.Files[rel]
				delete(im.Files, rel)
			}},
		}},
		{storage.PointSnapSynced, false, []variant{{name: "orphan-file"}}},
		{storage.PointWALSnapshot, false, []variant{{name: "before-purge"}}},
		{storage.PointPurged, false, []variant{
			{name: "deletions-durable"},
			{name: "deletions-undone", opts: storagetest.MaterializeOptions{Resurrect: true}},
		}},
		{storage.PointWALSynced, false, []variant{{name: "after"}}},
		{storage.PointWALSynced, true, []variant{
			{name: "fsync-lost"},
			{name: "torn", opts: storagetest.MaterializeOptions{Torn: true}},
		}},
		{storage.PointWALSnapshot, true, []variant{
			{name: "record-lost"},
			{name: "record-torn", opts: storagetest.MaterializeOptions{Torn: true}},
		}},
	}
	checked, torn := 0, 0
	for _, c := range cases {
		for _, n := range []int{1, 2, 3, 5, 8, 13} {
			if c.point == storage.PointWALSynced {
				n *= 11 // every Save syncs: go further
			}
			res := runToFailpoint(t, filepath.Join(t.TempDir(), "live"), c.point, n, c.before, uint64(n))
			if (c.point == storage.PointSnapTempSynced || c.point == storage.PointSnapRenamed) && tmpName(res.img) == "" {
				t.Fatalf("%s #%d: no temporary snapshot file in the image: %v", c.point, n, res.img.Files)
			}
			for vi, v := range c.variants {
				r := res
				r.img = res.img.Clone()
				rep := checkImage(t, r, v.edit, v.opts, uint64(n*100+vi), fmt.Sprintf("%s #%d %s", c.point, n, v.name))
				checked++
				torn += rep.TornSectors
			}
		}
	}
	t.Logf("%d crashes recovered, %d unsynced sectors written into WAL tails", checked, torn)
	if torn == 0 {
		t.Fatal("no torn write was simulated")
	}
}

func checkImage(t *testing.T, res fpResult, edit func(*storagetest.Image, *rand.Rand), o storagetest.MaterializeOptions, seed uint64, where string) storagetest.Report {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	if edit != nil {
		edit(res.img, rng)
	}
	o.Rand = rng
	dst := filepath.Join(t.TempDir(), "crashed")
	rep, err := res.img.Materialize(dst, o)
	if err != nil {
		t.Fatal(err)
	}
	verifyRecovered(t, dst, res, fmt.Sprintf("%s (acked %d, snapshot %d durable, %d written; %s)", where, res.acked, res.snapDurab, res.snapDone, rep))
	return rep
}

// TestInterruptedPurgeGap: a crash after a purge deleted two or more WAL
// segments but before it fsynced the directory may bring back the oldest
// one alone (unsynced deletions reach the disk in any order), leaving a
// gap in the segment sequence across which etcd's CRC chain breaks. Open
// must delete the leftover and recover, losing nothing.
func TestInterruptedPurgeGap(t *testing.T) {
	old := wal.SegmentSizeBytes
	storage.SetWALSegmentSize(2 << 10) // a few segments per snapshot
	t.Cleanup(func() { storage.SetWALSegmentSize(old) })
	for n := 1; n < 20; n++ {
		res := runToFailpoint(t, filepath.Join(t.TempDir(), "live"), storage.PointPurged, n, false, 7)
		var ghosts []string
		for rel := range res.img.Ghosts {
			if strings.HasPrefix(rel, "wal/") {
				ghosts = append(ghosts, rel)
			}
		}
		if len(ghosts) < 2 {
			continue
		}
		slices.Sort(ghosts)
		res.img.Files[ghosts[0]] = res.img.Ghosts[ghosts[0]]
		dst := filepath.Join(t.TempDir(), "crashed")
		if _, err := res.img.Materialize(dst, storagetest.MaterializeOptions{}); err != nil {
			t.Fatal(err)
		}
		verifyRecovered(t, dst, res, fmt.Sprintf("purge #%d with %s back but not %s", n, ghosts[0], ghosts[1]))
		if _, err := os.Stat(filepath.Join(dst, filepath.FromSlash(ghosts[0]))); !os.IsNotExist(err) {
			t.Fatalf("the leftover segment %s is still there: %v", ghosts[0], err)
		}
		return
	}
	t.Fatal("no purge deleted two WAL segments at once")
}

// readRecovered reads the data of the snapshot Open recovered (nil if
// none), through the exported API.
func readRecovered(t testing.TB, s *storage.Storage) []byte {
	t.Helper()
	meta := s.Recovered().Snapshot.Metadata
	if meta.Index == 0 {
		return nil
	}
	rc, _, err := s.OpenSnapshotData(meta.Index, meta.Term)
	if err != nil {
		t.Fatalf("opening the recovered snapshot: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading the recovered snapshot: %v", err)
	}
	return b
}
