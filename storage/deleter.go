package storage

import (
	"os"
	"sync"
	"time"
)

// Purged WAL segments are unlinked in the background, when the WAL is
// quiet. Freeing a segment's blocks is slow on a file system mounted with
// online discard (ext4 -o discard, common on cloud disks, trims the freed
// extents when the journal commits), and a WAL fdatasync issued meanwhile
// waits for it: measured on such a VM, unlinking a 64 MB segment under
// load stalled the WAL for about 70 ms, the largest write latency. Freeing
// in small chunks (RocksDB's way) bounds each stall but, measured, makes
// p99 worse: every chunk is a commit with a trim. So a segment waits until
// no entry has been appended for deleteQuiet, or until more than
// deleteBacklog segments wait (the disk space they hold is bounded; a
// segment is 64 MB by default). ZooKeeper does not delete its logs at all
// unless autopurge is configured, and then hourly.
var (
	deleteQuiet   = 100 * time.Millisecond
	deleteBacklog = 4
)

// deleter unlinks the files queued by add on a goroutine of its own,
// started by the first add; halt deletes what is left and stops it.
type deleter struct {
	s *Storage

	mu      sync.Mutex // guards files, running, halted
	files   []string
	running bool
	halted  bool
	wake    chan struct{} // cap 1
	stop    chan struct{}
	done    chan struct{}
}

func newDeleter(s *Storage) *deleter {
	return &deleter{s: s, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// add queues files for deletion.
func (d *deleter) add(files []string) {
	if len(files) == 0 {
		return
	}
	d.mu.Lock()
	if d.halted {
		d.mu.Unlock()
		d.remove(files) // after Close: at once
		return
	}
	d.files = append(d.files, files...)
	start := !d.running
	d.running = true
	d.mu.Unlock()
	if start {
		go d.run()
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *deleter) run() {
	defer close(d.done)
	timer := time.NewTimer(deleteQuiet)
	defer timer.Stop()
	for {
		d.mu.Lock()
		n := len(d.files)
		d.mu.Unlock()
		if n == 0 {
			select {
			case <-d.wake:
				continue
			case <-d.stop:
				return
			}
		}
		before := d.s.entries.Load()
		timer.Reset(deleteQuiet)
		select {
		case <-timer.C:
		case <-d.stop:
			d.mu.Lock()
			rest := d.files
			d.files = nil
			d.mu.Unlock()
			d.remove(rest)
			return
		}
		if d.s.entries.Load() != before && n <= deleteBacklog {
			continue // the WAL is busy: wait for a quiet moment
		}
		// Dequeued only once deleted, so that pending counts the files
		// still on disk (only this goroutine dequeues).
		d.mu.Lock()
		f := d.files[0]
		d.mu.Unlock()
		d.remove([]string{f})
		d.mu.Lock()
		d.files = d.files[1:]
		d.mu.Unlock()
	}
}

func (d *deleter) remove(files []string) {
	for _, f := range files {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			d.s.log.Warn("storage: deleting a purged WAL segment", "file", f, "err", err)
		}
	}
}

// halt deletes the queued files and stops the goroutine; later adds
// delete at once.
func (d *deleter) halt() {
	d.mu.Lock()
	d.halted = true
	running := d.running
	d.mu.Unlock()
	if running {
		close(d.stop)
		<-d.done
	}
}

// pending returns how many queued files are not deleted yet.
func (d *deleter) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.files)
}
