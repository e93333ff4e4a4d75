package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
)

// The prefiller writes zeros into the space etcd's WAL has preallocated
// but not written yet: the rest of the tail segment, and the next segment
// that etcd's file pipeline keeps ready (walDir/0.tmp or 1.tmp).
//
// Why: the WAL preallocates each segment with fallocate, which on ext4
// and XFS leaves the space as unwritten extents. The first write into such
// a block converts its extent, a metadata change that the following
// fdatasync must commit to the file system's journal. Into blocks that
// already hold written zeros an append is a plain overwrite and
// fdatasync only flushes data. Measured on the development VM (ext4 on a
// virtio disk, 3 KB appends each followed by fdatasync): p50 52–55 µs
// into fallocated space, 26–35 µs into written zeros. Every write of
// zkgo waits for one such fdatasync.
//
// Safety: the prefiller only ever replaces zero bytes with zero bytes.
// Holding s.mu, which every call into etcd's WAL also holds (the WAL
// writes, cuts, renames and truncates segments only inside those calls;
// its pipeline goroutine only creates the next file), it reads a chunk
// and writes zeros
// over it only if the chunk reads as zeros, and never past the file's
// current size. Whatever the file is meanwhile (the tail, a pipeline file
// not yet used, renamed into use, truncated by a cut or deleted by a
// purge), no byte's content ever changes, so a crash at any moment leaves
// exactly what it would have left without the prefiller. Bytes the WAL
// has encoded but not yet written (etcd buffers up to a page between
// syncs) land later, over the zeros. A direct (O_DIRECT) write is
// coherent with the page cache: the kernel writes back and drops the
// cached pages of its range first, and later buffered writes read the
// zeros it left.
//
// Cost: the zeros are written once per segment (64 MB per 64 MB of
// log), paced, and with O_DIRECT where the file system has it: written
// through the page cache, their writeback — however small the steps and
// however often fdatasynced — made the WAL's own fdatasyncs wait behind
// it (measured under multi at 15,000/s: while a segment's zeros were
// written, WAL saves took 10–26 ms and the run's p99 was 11–14 ms; with
// O_DIRECT 3.6–4.2 ms). Each chunk is then read back (no lock needed) so
// that its pages are in the page cache, clean: a WAL append that starts
// a page in written blocks would otherwise read it from the disk first
// (without the read-back, p50 was as without the prefiller). With NoSync
// the prefiller does not run (no fdatasync to speed up).
const (
	prefillChunk     = 128 << 10 // bytes read, checked and written per hold of s.mu
	prefillSyncEvery = 1 << 20   // fdatasync the zeros every this many bytes
	fillBlock        = 4096      // file system block: zeros are written from a block boundary
)

// The pause after each chunk written, and the least time between two
// scans of the WAL directory (tests set both to 0).
var (
	prefillPace   = time.Millisecond
	prefillRescan = 200 * time.Millisecond
)

type prefiller struct {
	s    *Storage
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	// filled lists files already filled to their end, so each file is
	// filled once (the pipeline reuses the names 0.tmp and 1.tmp).
	filled     []os.FileInfo
	buf, zeros []byte
}

// startPrefill starts the prefiller (unless NoSync or NoPrefill) and asks
// it to look at the WAL directory once.
func (s *Storage) startPrefill() {
	if s.opts.NoSync || s.opts.NoPrefill || !prefillSupported {
		return
	}
	s.pf = newPrefiller(s)
	go s.pf.run()
	s.pf.poke()
}

func newPrefiller(s *Storage) *prefiller {
	// O_DIRECT writes need a buffer aligned to the block size.
	z := make([]byte, prefillChunk+fillBlock)
	a := fillBlock - int(uintptr(unsafe.Pointer(&z[0]))%fillBlock)
	return &prefiller{
		s:     s,
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		buf:   make([]byte, prefillChunk),
		zeros: z[a%fillBlock:][:prefillChunk],
	}
}

// poke asks the prefiller to look at the WAL directory again; Save calls
// it after every append (a cut makes the pipeline prepare a new file).
func (p *prefiller) poke() {
	if p == nil {
		return
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// halt stops the prefiller and waits for it; it must be called without
// s.mu held, at most once.
func (p *prefiller) halt() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}

func (p *prefiller) run() {
	defer close(p.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.kick:
		case <-p.stop:
			return
		}
		p.scan()
		// At most one scan per prefillRescan while Saves keep poking.
		t.Reset(prefillRescan)
		select {
		case <-t.C:
		case <-p.stop:
			return
		}
	}
}

// scan fills the newest WAL segment and the pipeline's temporary files,
// each once.
func (p *prefiller) scan() {
	dir := p.s.walDir
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var paths []string
	newest := ""
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".tmp") && e.Type().IsRegular():
			paths = append(paths, filepath.Join(dir, name))
		case strings.HasSuffix(name, ".wal") && name > newest:
			newest = name // names are %016x-%016x.wal: the order is the sequence order
		}
	}
	if newest != "" {
		paths = append(paths, filepath.Join(dir, newest))
	}
	var present []os.FileInfo
	for _, path := range paths {
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		done := false
		for _, f := range p.filled {
			if os.SameFile(f, fi) {
				done = true
				present = append(present, f)
				break
			}
		}
		if done {
			continue
		}
		switch err := p.fill(path); {
		case err == nil:
			present = append(present, fi)
		case errors.Is(err, errPrefillStopped):
			return
		}
	}
	p.filled = present
}

// openDirectFile is openDirect; a test replaces it.
var openDirectFile = openDirect

var (
	errPrefillStopped = errors.New("prefill stopped")
	errDirectRefused  = errors.New("O_DIRECT write refused")
)

// fill writes zeros over the unwritten ranges of the file at path (holes
// and unwritten extents, found with SEEK_HOLE/SEEK_DATA, so written
// blocks are neither read nor written), up to its size at the time. It
// returns nil once the whole file was looked at; a pipeline file caught
// before etcd preallocated it is looked at again on a later scan.
func (p *prefiller) fill(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size == 0 {
		return errors.New("not preallocated yet") // etcd's pipeline created it a moment ago
	}
	direct, err := openDirectFile(path)
	if err != nil {
		direct = nil
	}
	defer func() {
		if direct != nil {
			direct.Close()
		}
	}()
	var unsynced int64
	defer func() {
		if unsynced > 0 {
			fileutil.Fdatasync(f)
		}
	}()
	for off := int64(0); off < size; {
		start, end, err := nextHole(f, off, size)
		if err != nil {
			return err
		}
		if start >= size {
			break
		}
		for off = start; off < end; {
			select {
			case <-p.stop:
				return errPrefillStopped
			default:
			}
			wrote, n, err := p.fillChunk(f, direct, off, end)
			if errors.Is(err, errDirectRefused) {
				// The file system opened the file with O_DIRECT but
				// refuses its writes (EINVAL on some): the rest of
				// this file goes through the page cache.
				direct.Close()
				direct = nil
				continue
			}
			if err == io.EOF {
				return nil // truncated meanwhile (a cut)
			}
			if err != nil {
				return err
			}
			if wrote && direct != nil {
				// Read the zeros back into the page cache (clean
				// pages): a WAL append that starts a page inside
				// written blocks would otherwise read that page from
				// the disk first. Reading needs no lock.
				f.ReadAt(p.buf[:n], off)
			}
			off += int64(n)
			if !wrote {
				continue
			}
			if direct == nil {
				unsynced += int64(n)
			}
			if unsynced >= prefillSyncEvery {
				if err := fileutil.Fdatasync(f); err != nil {
					return err
				}
				unsynced = 0
			}
			if prefillPace > 0 {
				time.Sleep(prefillPace)
			}
		}
	}
	return nil
}

// fillChunk holds s.mu, so that no WAL write happens meanwhile, and
// writes zeros over the chunk at off (ending at end at the latest) where
// it reads as zeros. It reports whether it wrote and how many bytes it
// looked at; io.EOF at the end of the file.
func (p *prefiller) fillChunk(f, direct *os.File, off, end int64) (wrote bool, n int, err error) {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.failed != nil {
		return false, 0, errPrefillStopped
	}
	fi, err := f.Stat()
	if err != nil {
		return false, 0, err
	}
	if off >= fi.Size() {
		return false, 0, io.EOF
	}
	n = int(min(int64(len(p.buf)), fi.Size()-off, end-off))
	if n, err = f.ReadAt(p.buf[:n], off); n == 0 {
		if err == nil {
			err = io.EOF
		}
		return false, 0, err
	}
	// Only the zeros after the chunk's last non-zero byte are written
	// over, from a block boundary on: in the tail segment that is the
	// space after the log's last record.
	from := 0
	for b := (n - 1) / fillBlock; b >= 0; b-- {
		if !allZero(p.buf[b*fillBlock : min(n, (b+1)*fillBlock)]) {
			from = (b + 1) * fillBlock
			break
		}
	}
	if from >= n {
		return false, n, nil
	}
	w := f
	if direct != nil && (off+int64(from))%fillBlock == 0 && (n-from)%fillBlock == 0 {
		w = direct
	}
	if _, err := w.WriteAt(p.zeros[:n-from], off+int64(from)); err != nil {
		if w == direct {
			// Nothing of a refused write is counted on: the caller
			// writes this chunk again through the page cache.
			return false, 0, fmt.Errorf("%w: %w", errDirectRefused, err)
		}
		return false, 0, err
	}
	s.prefilled.Add(uint64(n - from))
	return true, n, nil
}

func allZero(b []byte) bool {
	var z [4096]byte
	for len(b) > 0 {
		k := min(len(b), len(z))
		if !bytes.Equal(b[:k], z[:k]) {
			return false
		}
		b = b[k:]
	}
	return true
}
