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
	s, err := Open(t.TempDir(), Options{NoPrefill: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const size = 8 << 20
	path := filepath.Join(t.TempDir(), "seg")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		t.Skipf("fallocate is not supported here: %v", err)
	}
	if start, end, err := nextHole(f, 0, size); err != nil || start != 0 || end != size {
		t.Skipf("this file system does not report fallocated space as a hole (%d, %d, %v)", start, end, err)
	}
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
	s, err := Open(t.TempDir(), Options{NoPrefill: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const size = 2 << 20
	path := filepath.Join(t.TempDir(), "seg")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		t.Skipf("fallocate is not supported here: %v", err)
	}
	if start, end, err := nextHole(f, 0, size); err != nil || start != 0 || end != size {
		t.Skipf("this file system does not report fallocated space as a hole (%d, %d, %v)", start, end, err)
	}
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
