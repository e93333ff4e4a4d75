package storage

import (
	"errors"
	"os"
	"syscall"
)

// prefillSupported: the unwritten extents that make fdatasync slower are
// an ext4/XFS matter, and Linux's SEEK_HOLE reports them as holes.
const prefillSupported = true

// lseek whence values of Linux (unix.SEEK_DATA, unix.SEEK_HOLE).
const (
	seekData = 3
	seekHole = 4
)

// nextHole returns the first unwritten range [start, end) at or after
// off: a hole or an unwritten extent (ext4 and XFS report both as holes
// while no dirty page covers them). start == size when there is none.
func nextHole(f *os.File, off, size int64) (start, end int64, err error) {
	start, err = f.Seek(off, seekHole)
	if errors.Is(err, syscall.ENXIO) {
		return size, size, nil // off is at or past the end
	}
	if err != nil {
		return 0, 0, err
	}
	end, err = f.Seek(start, seekData)
	if errors.Is(err, syscall.ENXIO) {
		return start, size, nil // no data after the hole
	}
	if err != nil {
		return 0, 0, err
	}
	return start, min(end, size), nil
}

// openDirect opens path for writes that bypass the page cache (O_DIRECT):
// the prefiller's zeros then leave no dirty pages behind for the WAL's
// fdatasync to wait on. It fails on file systems without O_DIRECT
// (tmpfs), where the prefiller writes through the page cache.
func openDirect(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
}
