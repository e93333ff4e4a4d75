package storage

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPrefillConvertsUnwrittenExtents checks what the prefiller is for:
// space preallocated by fallocate (as etcd's WAL preallocates segments)
// is unwritten (SEEK_HOLE finds it) before the fill and written after.
func TestPrefillConvertsUnwrittenExtents(t *testing.T) {
	const size = 8 << 20
	s, path, f := fallocatedFile(t, size)
	oldPace := prefillPace
	prefillPace = 0
	t.Cleanup(func() { prefillPace = oldPace })
	if err := newPrefiller(s).fill(path); err != nil {
		t.Fatal(err)
	}
	if start, _, err := nextHole(f, 0, size); err != nil || start != size {
		t.Fatalf("after the fill, unwritten space at %d (%v)", start, err)
	}
	if got := s.PrefilledBytes(); got != size {
		t.Fatalf("prefilled %d bytes, want %d", got, size)
	}
}

// TestPrefillFallsBackWhenDirectWritesFail: a file system that opens a
// file with O_DIRECT but refuses its writes still gets the file filled,
// through the page cache; the refused write changes nothing.
func TestPrefillFallsBackWhenDirectWritesFail(t *testing.T) {
	const size = 2 << 20
	s, path, f := fallocatedFile(t, size)
	oldPace, oldOpen := prefillPace, openDirectFile
	prefillPace = 0
	opened := 0
	openDirectFile = func(p string) (*os.File, error) {
		opened++
		return os.Open(p) // read-only: every write fails
	}
	t.Cleanup(func() { prefillPace, openDirectFile = oldPace, oldOpen })
	if err := newPrefiller(s).fill(path); err != nil {
		t.Fatal(err)
	}
	if opened != 1 {
		t.Fatalf("direct file opened %d times, want 1", opened)
	}
	if start, _, err := nextHole(f, 0, size); err != nil || start != size {
		t.Fatalf("after the fill, unwritten space at %d (%v)", start, err)
	}
	if got := s.PrefilledBytes(); got != size {
		t.Fatalf("prefilled %d bytes, want %d", got, size)
	}
}

// fallocatedFile opens a Storage that does not prefill and creates a file
// of size bytes preallocated with fallocate, skipping the test where the
// file system cannot do that or does not report the space as a hole.
func fallocatedFile(t *testing.T, size int64) (s *Storage, path string, f *os.File) {
	t.Helper()
	s, err := Open(t.TempDir(), Options{NoPrefill: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	path = filepath.Join(t.TempDir(), "seg")
	f, err = os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		t.Skipf("fallocate is not supported here: %v", err)
	}
	if start, end, err := nextHole(f, 0, size); err != nil || start != 0 || end != size {
		t.Skipf("this file system does not report fallocated space as a hole (%d, %d, %v)", start, end, err)
	}
	return s, path, f
}
