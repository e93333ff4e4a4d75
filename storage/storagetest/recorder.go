// Package storagetest simulates machine crashes (power loss, kernel panic)
// under package storage, for tests.
//
// A kill -9 leaves the page cache intact, so it cannot show that anything
// was fsynced. A Recorder, installed as a storage.SyncHook, instead keeps
// the durable image of one data directory: for every file, what it held at
// the last sync point that made it durable. Image.Materialize writes that
// image to a fresh directory, which is what the disk holds after a crash
// at that moment: every byte written but not fsynced is gone (as with
// LazyFS's "clear-cache" fault), optionally with some unsynced sectors of
// the WAL tail written after all (a torn write) and some deletions that
// were never made durable undone.
//
// # Which sync point makes which file durable
//
// A Storage's writes are serialised and the hook runs synchronously on the
// writing goroutine, so the files are quiet while the Recorder reads them.
//
//   - PointCreated, PointOpened: the whole directory (etcd's WAL segments
//     and the snapshot directory) as it is.
//   - PointWALSynced, PointWALSnapshot: every WAL segment (*.wal). The
//     tail was just fsynced; earlier segments were fsynced when they were
//     cut, before the next one was renamed into place. A new segment means
//     a cut, which fsyncs the WAL directory: earlier deletions there are
//     durable from then on.
//   - PointSnapTempSynced: the snapshot directory's files, so the new
//     *.snap.tmp file with its fsynced content (the WAL is not re-read:
//     records appended since its last fsync stay out).
//   - PointSnapRenamed: nothing (the rename is not durable yet).
//   - PointSnapSynced: the snapshot directory again, now with the final
//     name; its deletions are durable from then on.
//   - PointPurged: files deleted since the last point leave the image but
//     become ghosts: their deletion was not fsynced, Materialize may bring
//     any of them back.
//   - PointPurgeSynced: the directories were fsynced: the ghosts are gone.
//
// WAL preallocation files (wal/*.tmp) are never part of the image (etcd
// recreates them); neither is the LOCK file.
//
// # Approximations
//
// Between two sync points of the same kind nothing else is durable: a
// commit-only hard state that etcd wrote without fsync is only counted
// from the next WAL sync on, even if the kernel wrote it back earlier; a
// segment cut inside a Save that did not have to sync (etcd fsyncs at
// every cut) is only counted from the next WAL sync on. Both make the
// image older than the real disk could be, never newer, so they can hide
// no loss (they could only cause false alarms, if recovery relied on
// them). The image could be newer than the disk in two places: deletions,
// which Materialize's Resurrect option undoes; and what recovery changes
// without fsync — temporary and orphan snapshot files deleted, *.broken
// renames, etcd zeroing the WAL tail after its last record — which is
// counted durable at PointOpened (a crash before the next fsync would
// leave the directory recovery had just handled). Torn writes are whole
// sectors; a sector torn in the middle is not simulated (etcd assumes it
// cannot happen). The hook is trusted: an fsync the code forgot but
// reported would go unnoticed, which is why storage reports each point
// right after, and only after, the step it names.
package storagetest

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/storage"
)

// Directory names inside a storage directory (see storage/doc.go).
const (
	walDir  = "wal"
	snapDir = "snap"
)

// SectorSize is the granularity of torn writes: a disk writes whole
// sectors, and etcd's WAL tells a torn record from a corrupt one by an
// all-zero sector inside it.
const SectorSize = 512

// file is one file of the durable image.
type file struct {
	data  []byte
	size  int64 // size and mtime when last read, to skip unchanged files
	mtime time.Time
}

// Recorder keeps the durable image of one storage directory. Install its
// Hook with storage.Options.SyncHook or storage.SetSyncHook.
type Recorder struct {
	dir string

	mu      sync.Mutex
	frozen  bool
	files   map[string]*file  // "wal/<name>" or "snap/<name>" → durable content
	ghosts  map[string][]byte // deleted, but the deletion is not durable
	lastWAL string            // the newest segment at the last WAL point
	counts  map[storage.SyncPoint]int
	last    storage.SyncPoint
	live    map[string][]byte // set by Freeze: the WAL tail as it was then
}

// NewRecorder records the storage directory dir (a Storage's Dir()). Hook
// calls for other directories are ignored. The image is empty until the
// first sync point (PointCreated or PointOpened).
func NewRecorder(dir string) *Recorder {
	return &Recorder{
		dir:    filepath.Clean(dir),
		files:  map[string]*file{},
		ghosts: map[string][]byte{},
		counts: map[storage.SyncPoint]int{},
	}
}

// Hook is the storage.SyncHook that updates the image. It panics if the
// directory cannot be read: a test's data directory must be readable.
func (r *Recorder) Hook(dir string, p storage.SyncPoint) {
	if filepath.Clean(dir) != r.dir {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen {
		return
	}
	if err := r.record(p); err != nil {
		panic(fmt.Sprintf("storagetest: recording %s at %s: %v", r.dir, p, err))
	}
	r.counts[p]++
	r.last = p
}

func (r *Recorder) record(p storage.SyncPoint) error {
	switch p {
	case storage.PointCreated, storage.PointOpened:
		clear(r.ghosts)
		if _, err := r.refresh(walDir, true); err != nil {
			return err
		}
		_, err := r.refresh(snapDir, false)
		return err
	case storage.PointWALSynced, storage.PointWALSnapshot:
		cut, err := r.refresh(walDir, true)
		if cut {
			r.dropGhosts(walDir)
		}
		return err
	case storage.PointSnapTempSynced:
		_, err := r.refresh(snapDir, false)
		return err
	case storage.PointSnapSynced:
		r.dropGhosts(snapDir)
		_, err := r.refresh(snapDir, false)
		return err
	case storage.PointPurged:
		return r.noteDeletions()
	case storage.PointPurgeSynced:
		err := r.noteDeletions()
		clear(r.ghosts)
		return err
	}
	return nil // PointSnapRenamed and unknown points: nothing became durable
}

// inImage tells which files of sub belong in the image.
func inImage(sub, name string) bool {
	if sub == walDir {
		return strings.HasSuffix(name, ".wal")
	}
	return true
}

// refresh re-reads the files of sub that changed since they were last
// read (all of them if their size or mtime changed, and for the WAL the
// newest segment and the previous newest, which etcd truncates when it
// cuts) and forgets files that are gone: they were renamed (only from a
// temporary name, at a point that makes the rename durable) or deleted.
// It reports whether a WAL segment appeared (a cut).
func (r *Recorder) refresh(sub string, wal bool) (cut bool, err error) {
	ents, err := os.ReadDir(filepath.Join(r.dir, sub))
	if err != nil {
		return false, err
	}
	seen := map[string]bool{}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && inImage(sub, e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names) // etcd's names sort by sequence number
	newest := ""
	if wal && len(names) > 0 {
		newest = names[len(names)-1]
	}
	for _, name := range names {
		rel := sub + "/" + name
		seen[rel] = true
		fi, err := os.Stat(filepath.Join(r.dir, rel))
		if err != nil {
			return cut, err
		}
		f := r.files[rel]
		if f == nil {
			f = &file{}
			r.files[rel] = f
			if wal {
				cut = true
			}
		} else if f.size == fi.Size() && f.mtime.Equal(fi.ModTime()) && name != newest && sub+"/"+name != r.lastWAL {
			continue
		}
		if err := r.readInto(f, rel, fi); err != nil {
			return cut, err
		}
	}
	for rel := range r.files {
		if strings.HasPrefix(rel, sub+"/") && !seen[rel] {
			delete(r.files, rel)
		}
	}
	if wal && newest != "" {
		r.lastWAL = walDir + "/" + newest
	}
	return cut, nil
}

// readInto reads rel into f, reusing f's buffer when the size is the same
// (the WAL tail is re-read at every fsync).
func (r *Recorder) readInto(f *file, rel string, fi os.FileInfo) error {
	fh, err := os.Open(filepath.Join(r.dir, rel))
	if err != nil {
		return err
	}
	defer fh.Close()
	n := fi.Size()
	if int64(len(f.data)) != n {
		f.data = make([]byte, n)
	}
	if _, err := io.ReadFull(fh, f.data); err != nil {
		return err
	}
	f.size, f.mtime = n, fi.ModTime()
	return nil
}

// noteDeletions turns files that are gone into ghosts.
func (r *Recorder) noteDeletions() error {
	for rel, f := range r.files {
		if _, err := os.Lstat(filepath.Join(r.dir, rel)); os.IsNotExist(err) {
			r.ghosts[rel] = f.data
			delete(r.files, rel)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// dropGhosts forgets the ghosts in sub: its directory was fsynced, so
// their deletion is durable.
func (r *Recorder) dropGhosts(sub string) {
	for rel := range r.ghosts {
		if strings.HasPrefix(rel, sub+"/") {
			delete(r.ghosts, rel)
		}
	}
}

// Freeze stops recording (the simulated crash) and returns the durable
// image of that moment. It also keeps the WAL tail as the live file holds
// it now, unsynced bytes included, for Materialize's torn writes. Freeze
// waits for a Hook call in progress; Hook calls after it change nothing.
func (r *Recorder) Freeze() *Image {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.frozen {
		r.frozen = true
		r.live = map[string][]byte{}
		if r.lastWAL != "" {
			// The WAL tail may be being written right now (Freeze runs on
			// any goroutine): whatever the read returns is a state the
			// page cache could have held.
			if b, err := os.ReadFile(filepath.Join(r.dir, r.lastWAL)); err == nil {
				r.live[r.lastWAL] = b
			}
		}
	}
	return r.image()
}

// Image returns a copy of the current durable image; recording goes on.
func (r *Recorder) Image() *Image {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.image()
}

func (r *Recorder) image() *Image {
	im := &Image{
		Files:  make(map[string][]byte, len(r.files)),
		Ghosts: make(map[string][]byte, len(r.ghosts)),
		Last:   r.last,
		Counts: make(map[storage.SyncPoint]int, len(r.counts)),
		Tail:   r.lastWAL,
	}
	for rel, f := range r.files {
		im.Files[rel] = bytes.Clone(f.data)
	}
	for rel, b := range r.ghosts {
		im.Ghosts[rel] = bytes.Clone(b)
	}
	for p, n := range r.counts {
		im.Counts[p] = n
	}
	if b, ok := r.live[r.lastWAL]; ok {
		im.LiveTail = b
	}
	return im
}

// Image is the durable content of a storage directory at one moment.
type Image struct {
	// Files maps "wal/<name>" and "snap/<name>" to their durable content.
	Files map[string][]byte
	// Ghosts are files deleted without a directory fsync since: after a
	// crash they may be back.
	Ghosts map[string][]byte
	// Last is the last sync point recorded, Counts how many of each.
	Last   storage.SyncPoint
	Counts map[storage.SyncPoint]int
	// Tail is the newest WAL segment; LiveTail (set by Freeze) its live
	// content at the crash, unsynced bytes included.
	Tail     string
	LiveTail []byte
}

// Clone returns a deep copy of im, to edit or materialize differently.
func (im *Image) Clone() *Image {
	c := *im
	c.Files = make(map[string][]byte, len(im.Files))
	for rel, b := range im.Files {
		c.Files[rel] = bytes.Clone(b)
	}
	c.Ghosts = make(map[string][]byte, len(im.Ghosts))
	for rel, b := range im.Ghosts {
		c.Ghosts[rel] = bytes.Clone(b)
	}
	c.Counts = make(map[storage.SyncPoint]int, len(im.Counts))
	for p, n := range im.Counts {
		c.Counts[p] = n
	}
	c.LiveTail = bytes.Clone(im.LiveTail)
	return &c
}

// MaterializeOptions choose among the states a crash may leave beyond the
// durable image.
type MaterializeOptions struct {
	// Rand drives the choices below; nil means none of them.
	Rand *rand.Rand
	// Resurrect brings back each ghost with probability 1/2.
	Resurrect bool
	// Torn writes, after the durable end of the WAL tail, a random number
	// of the sectors that were written but not fsynced at the crash, each
	// with probability 3/4: the kernel may have written some dirty pages
	// back, in any order. Whatever lands after the last durable record is
	// garbage recovery must cut off (etcd's torn-tail repair), and it must
	// not take anything before it with it.
	Torn bool
}

// Report says what Materialize did beyond the durable image.
type Report struct {
	Resurrected []string
	TornSectors int // unsynced sectors written into the WAL tail
}

func (r Report) String() string {
	return fmt.Sprintf("resurrected %v, %d unsynced WAL sectors", r.Resurrected, r.TornSectors)
}

// Materialize writes the image into dst, a storage directory that must not
// exist yet or be empty.
func (im *Image) Materialize(dst string, o MaterializeOptions) (Report, error) {
	var rep Report
	for _, sub := range []string{walDir, snapDir} {
		if err := os.MkdirAll(filepath.Join(dst, sub), 0o750); err != nil {
			return rep, err
		}
	}
	files := make(map[string][]byte, len(im.Files)+len(im.Ghosts))
	for rel, b := range im.Files {
		files[rel] = b
	}
	if o.Rand != nil && o.Resurrect {
		ghosts := make([]string, 0, len(im.Ghosts))
		for rel := range im.Ghosts {
			ghosts = append(ghosts, rel)
		}
		slices.Sort(ghosts) // deterministic for a seed
		for _, rel := range ghosts {
			if _, ok := files[rel]; !ok && o.Rand.IntN(2) == 0 {
				files[rel] = im.Ghosts[rel]
				rep.Resurrected = append(rep.Resurrected, rel)
			}
		}
	}
	if o.Rand != nil && o.Torn && im.LiveTail != nil && files[im.Tail] != nil {
		var n int
		files[im.Tail], n = tear(files[im.Tail], im.LiveTail, o.Rand)
		rep.TornSectors = n
	}
	for rel, b := range files {
		if err := os.WriteFile(filepath.Join(dst, filepath.FromSlash(rel)), b, 0o600); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// tear returns durable with some of live's sectors after the point where
// they first differ (the durable end; WAL segments are only appended to)
// and how many it took.
func tear(durable, live []byte, rng *rand.Rand) ([]byte, int) {
	p := 0
	for p < len(durable) && p < len(live) && durable[p] == live[p] {
		p++
	}
	if p >= len(live) {
		return durable, 0
	}
	start := p / SectorSize * SectorSize
	end := start + SectorSize*(1+rng.IntN(8))
	end = min(end, len(live))
	out := bytes.Clone(durable)
	if len(out) < end {
		out = append(out, make([]byte, end-len(out))...)
	}
	n := 0
	for s := start; s < end; s += SectorSize {
		if rng.IntN(4) != 0 {
			copy(out[s:min(s+SectorSize, end)], live[s:min(s+SectorSize, end)])
			n++
		}
	}
	return out, n
}
