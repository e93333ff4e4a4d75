package storage

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// errInjected is what the tests' fault hooks refuse steps with.
var errInjected = errors.New("injected disk fault")

// setFaultHook installs h for the test and removes it afterwards.
func setFaultHook(t *testing.T, h FaultHook) {
	t.Helper()
	if prev := SetFaultHook(h); prev != nil {
		t.Fatal("a fault hook was already installed")
	}
	t.Cleanup(func() { SetFaultHook(nil) })
}

// opRecorder records the steps asked of the hook for one directory.
type opRecorder struct {
	dir string
	mu  sync.Mutex // guards ops
	ops []FaultOp
}

func (r *opRecorder) hook(dir string, op FaultOp) error {
	if dir == r.dir {
		r.mu.Lock()
		r.ops = append(r.ops, op)
		r.mu.Unlock()
	}
	return nil
}

func (r *opRecorder) take() []FaultOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := r.ops
	r.ops = nil
	return ops
}

// Every durability step asks the hook first, in order, and only when it
// really happens: nothing for a Save with nothing to write, no fsync step
// with NoSync.
func TestFaultHookSteps(t *testing.T) {
	const (
		walW  = FaultWALWrite
		walS  = FaultWALSync
		snapW = FaultSnapWrite
		snapS = FaultSnapSync
		ren   = FaultSnapRename
		purge = FaultPurge
	)
	for _, tt := range []struct {
		noSync bool
		step   string
		do     func(s *Storage) error
		want   []FaultOp
	}{
		{false, "Save with entries", func(s *Storage) error {
			return s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 2}, mkEntries(1, 4, 6, 16))
		}, []FaultOp{walW, walS}},
		{false, "Save of a commit only", func(s *Storage) error {
			return s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 3}, nil)
		}, []FaultOp{walW}},
		{false, "empty Save", func(s *Storage) error { return s.Save(raftpb.HardState{}, nil) }, nil},
		{false, "CreateSnapshot", func(s *Storage) error {
			return s.CreateSnapshot(3, &cs1, []byte("state@3"))
		}, []FaultOp{snapW, snapS, ren, snapS, walW, walS, purge}},
		{false, "SaveSnapshot from the leader", func(s *Storage) error {
			return s.SaveSnapshot(raftpb.Snapshot{Data: []byte("leader"), Metadata: raftpb.SnapshotMetadata{Index: 50, Term: 2, ConfState: cs1}})
		}, []FaultOp{snapW, snapS, ren, snapS, walW, walS}},
		{false, "ReceiveSnapshot", func(s *Storage) error {
			_, err := s.ReceiveSnapshot(raftpb.SnapshotMetadata{Index: 50, Term: 2, ConfState: cs1}, strings.NewReader("leader"))
			return err
		}, []FaultOp{snapW, snapS}},
		{true, "Save with entries", func(s *Storage) error {
			return s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 2}, mkEntries(1, 4, 6, 16))
		}, []FaultOp{walW}},
		{true, "CreateSnapshot", func(s *Storage) error {
			return s.CreateSnapshot(3, &cs1, []byte("state@3"))
		}, []FaultOp{snapW, ren, walW, purge}},
	} {
		name := tt.step
		if tt.noSync {
			name += " (NoSync)"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Options{NoSync: tt.noSync, NoPrefill: true})
			defer closeT(t, s)
			if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 1}, mkEntries(1, 1, 3, 16)); err != nil {
				t.Fatal(err)
			}
			rec := &opRecorder{dir: dir}
			setFaultHook(t, rec.hook)
			if err := tt.do(s); err != nil {
				t.Fatal(err)
			}
			if got := rec.take(); !slices.Equal(got, tt.want) {
				t.Fatalf("steps %v, want %v", got, tt.want)
			}
		})
	}
}

// dirFiles returns the content of every file under dir that a refused
// step could have touched: all but the lock and the WAL segments etcd
// preallocates in the background (*.tmp in wal/).
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == lockName || filepath.Dir(rel) == walDirName && strings.HasSuffix(rel, tmpSuffix) {
			return nil
		}
		b, err := os.ReadFile(path)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// A step the hook refuses fails with the hook's error and is not taken:
// a refused write or fsync leaves every file as it was, a failure once a
// snapshot is being installed leaves nothing recovery would use, and
// reopening recovers the state from before the step. A local snapshot
// that could not be written or fsynced (ErrSnapshotNotTaken) leaves the
// storage usable; any other refused step makes it unusable (ErrFailed),
// except a purge, which is skipped.
func TestFaultHookRefusesSteps(t *testing.T) {
	const retain = 2
	for _, tt := range []struct {
		name    string
		op      FaultOp
		nth     int // refuse the nth time op is asked during the step
		step    func(s *Storage) error
		wantErr error // besides errInjected; nil: the step succeeds
		// unchanged: every file is as before the step.
		unchanged bool
		// wantSnap is the snapshot recovered after the step.
		wantSnap uint64
	}{
		{name: "WAL append", op: FaultWALWrite, nth: 1, step: saveMore, wantErr: ErrFailed, unchanged: true, wantSnap: 5},
		{name: "WAL fsync", op: FaultWALSync, nth: 1, step: saveMore, wantErr: ErrFailed, unchanged: true, wantSnap: 5},
		{name: "snapshot file write", op: FaultSnapWrite, nth: 1, step: snapshotAt8, wantErr: ErrSnapshotNotTaken, unchanged: true, wantSnap: 5},
		{name: "snapshot file fsync", op: FaultSnapSync, nth: 1, step: snapshotAt8, wantErr: ErrSnapshotNotTaken, unchanged: true, wantSnap: 5},
		{name: "snapshot rename", op: FaultSnapRename, nth: 1, step: snapshotAt8, wantErr: ErrFailed, unchanged: true, wantSnap: 5},
		// The file is renamed, but without its WAL record: an orphan
		// that recovery deletes.
		{name: "snapshot directory fsync", op: FaultSnapSync, nth: 2, step: snapshotAt8, wantErr: ErrFailed, wantSnap: 5},
		{name: "snapshot WAL record", op: FaultWALWrite, nth: 1, step: snapshotAt8, wantErr: ErrFailed, wantSnap: 5},
		{name: "snapshot WAL record fsync", op: FaultWALSync, nth: 1, step: snapshotAt8, wantErr: ErrFailed, wantSnap: 5},
		{name: "purge", op: FaultPurge, nth: 1, step: snapshotAt8, wantSnap: 8},
		{name: "leader's snapshot file", op: FaultSnapWrite, nth: 1, step: leaderSnapshot, wantErr: ErrFailed, unchanged: true, wantSnap: 5},
		{name: "streamed snapshot file", op: FaultSnapWrite, nth: 1, step: receiveSnapshot, unchanged: true, wantSnap: 5},
		{name: "streamed snapshot fsync", op: FaultSnapSync, nth: 1, step: receiveSnapshot, unchanged: true, wantSnap: 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{NoPrefill: true, SnapRetain: retain}
			s := openT(t, dir, opts)
			if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 10}, mkEntries(1, 1, 10, 32)); err != nil {
				t.Fatal(err)
			}
			for _, i := range []uint64{3, 5} {
				if err := s.CreateSnapshot(i, &cs1, []byte("state@"+string(rune('0'+i)))); err != nil {
					t.Fatal(err)
				}
			}
			before := dirFiles(t, dir)
			asked := 0
			setFaultHook(t, func(d string, op FaultOp) error {
				if d == dir && op == tt.op {
					if asked++; asked == tt.nth {
						return errInjected
					}
				}
				return nil
			})
			err := tt.step(s)
			if asked < tt.nth {
				t.Fatalf("%v was asked %d times, not %d", tt.op, asked, tt.nth)
			}
			switch {
			case tt.op == FaultPurge:
				if err != nil {
					t.Fatalf("a refused purge failed the step: %v", err)
				}
			case !errors.Is(err, errInjected) || tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("step returned %v, want the injected error wrapped in %v", err, tt.wantErr)
			case tt.wantErr == nil && errors.Is(err, ErrFailed):
				t.Fatalf("step returned %v: the storage failed", err)
			}
			if tt.unchanged && !sameFiles(before, dirFiles(t, dir)) {
				t.Errorf("the refused step changed the directory")
			}
			// The storage goes on unless it failed.
			err = s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 11}, mkEntries(1, 11, 11, 32))
			last := uint64(11)
			if errors.Is(tt.wantErr, ErrFailed) {
				if !errors.Is(err, ErrFailed) || !errors.Is(err, errInjected) {
					t.Fatalf("Save after the failure = %v, want ErrFailed with the first error", err)
				}
				last = 10
			} else if err != nil {
				t.Fatalf("Save after the refused step: %v", err)
			}
			if tt.op == FaultPurge && len(snapFiles(t, dir)) != retain+1 {
				t.Errorf("snapshot files %v: the refused purge deleted some", snapFiles(t, dir))
			}
			closeT(t, s)

			SetFaultHook(nil)
			s = openT(t, dir, opts)
			defer closeT(t, s)
			rec := s.Recovered()
			if rec.Snapshot.Metadata.Index != tt.wantSnap || rec.LastIndex != last {
				t.Fatalf("recovered snapshot %d, last %d; want %d, %d", rec.Snapshot.Metadata.Index, rec.LastIndex, tt.wantSnap, last)
			}
			checkEntries(t, s, rec.FirstIndex, last, 32)
			for _, f := range snapFiles(t, dir) {
				if i, _, ok := parseSnapFileName(f); !ok || i > tt.wantSnap {
					t.Errorf("after recovery the snapshot directory holds %s", f)
				}
			}
			if err := s.CreateSnapshot(9, &cs1, []byte("state@9")); err != nil {
				t.Fatalf("snapshot after recovery: %v", err)
			}
		})
	}
}

func saveMore(s *Storage) error {
	return s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: 10}, mkEntries(1, 11, 12, 32))
}

func snapshotAt8(s *Storage) error { return s.CreateSnapshot(8, &cs1, []byte("state@8")) }

func leaderSnapshot(s *Storage) error {
	return s.SaveSnapshot(raftpb.Snapshot{Data: []byte("leader"), Metadata: raftpb.SnapshotMetadata{Index: 50, Term: 2, ConfState: cs1}})
}

func receiveSnapshot(s *Storage) error {
	_, err := s.ReceiveSnapshot(raftpb.SnapshotMetadata{Index: 50, Term: 2, ConfState: cs1}, strings.NewReader("leader"))
	return err
}

// snapFiles lists the snapshot directory (every file, partial and
// temporary ones too).
func snapFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, snapDirName))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
