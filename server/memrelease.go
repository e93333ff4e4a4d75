package server

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/internal/memlimit"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/tree"
)

// Giving back the memory of a compacted log.
//
// Between two snapshots the raft log is held in memory; under a heavy
// write load snapshots are spaced out (raftnode's duty cycle) and that log
// may reach hundreds of megabytes (measured: 100 MB of entries after
// loading 1,000,000 znodes of 100 bytes, on a live heap of 226 MB for the
// tree). A snapshot makes it garbage, but when the writes have stopped —
// exactly when the snapshot is taken — nothing triggers a collection for
// up to two minutes, and the runtime returns freed memory to the
// operating system only slowly after that: the server kept the load's
// peak RSS (700 MB for those 226 MB). So after a snapshot that let go of
// at least Options.ReturnMemoryAfter bytes of log, the server collects and
// returns free memory (debug.FreeOSMemory: one collection and a scavenge)
// once no entry was applied for Options.ReturnMemoryQuiet — at most one
// return per quiet period, however many snapshots came before it.
//
// Not while writes go on: then the heap grows back to the collector's
// goal within seconds, so the memory returned would be taken again, and
// returning it stalls the writes. Measured under multi at 15,000/s (a
// snapshot every ~5 s, each letting go of ~70 MB of log): a return after
// every snapshot put the requests of the ~150 ms around it at 3–9 ms,
// the run's p99 at 13 ms; writes between snapshots had a p99 of 3–4 ms.
//
// A restart is the same: decoding the snapshot and replaying the log
// leave garbage the size of what was loaded, so once a member has loaded
// a tree of at least ReturnMemoryAfter bytes it returns memory too.
//
// Smaller loads, and loads whose log was not compacted at their end, keep
// their peak too: the collector's headroom (internal/gctune lets the heap
// grow 128 MB past a small live heap) and the garbage allocated since the
// last collection. Measured: 200,000 znodes of 100 B (a 47 MB live heap,
// each snapshot letting go of ~15 MB of log) left 186 MiB of RSS growth,
// 970 B per znode, 5 s after the load. So the server also watches for the
// end of every burst of writes (watchQuiet): once no entry was applied for
// ReturnMemoryQuiet after some were, it returns memory if the runtime
// holds at least max(ReturnMemoryHeld, live heap/16) bytes it could give
// back (memlimit.Stats.Returnable: free heap and objects allocated since
// the last collection; plus the log compacted since the last return,
// which the runtime counts as live until the next collection). A
// snapshot counts as a write: the one taken once the writes stop ends
// after they did. The bound in proportion to the live heap bounds
// the cost of a return (a collection, whose work grows with the live
// heap) by the memory it gives back; the memory is the process's, so at
// most one return runs at a time in the process, and one starts no sooner
// than ReturnMemoryQuiet after the last ended.

// DefaultReturnMemoryAfter, DefaultReturnMemoryHeld and
// DefaultReturnMemoryQuiet are the defaults of Options.ReturnMemoryAfter,
// ReturnMemoryHeld and ReturnMemoryQuiet.
const (
	DefaultReturnMemoryAfter = 32 << 20
	DefaultReturnMemoryHeld  = 2 << 20
	DefaultReturnMemoryQuiet = time.Second
)

// logCompacted is raftnode.Config.OnLogCompacted: it starts returning
// memory if the log let go of enough, unless a return is under way.
func (s *Server) logCompacted(dataBytes uint64) {
	s.startWatchQuiet()
	if w := s.quiet; w != nil {
		// Writing the snapshot left garbage, and the log it let go of
		// is garbage too, after the writes may have stopped: watchQuiet
		// checks again at the next quiet period, counting that log
		// (the runtime's figures count it as live until the next
		// collection).
		w.compacted.Add(dataBytes)
		w.compactedAt.Store(time.Now().UnixNano())
		select {
		case w.snapped <- struct{}{}:
		default:
		}
	}
	s.returnMemory(int64(min(dataBytes, 1<<62)))
}

// startupLoaded is replica.onStartupLoad: the member loaded its state
// from its data directory when raft started.
func (s *Server) startupLoaded(open time.Duration, load raftnode.StartupLoad) {
	if s.met != nil {
		s.met.StartupLoad(open, load)
	}
	s.startWatchQuiet()
	if load.Snapshot > 0 || load.Entries > 0 {
		var size int64
		s.sm.View(func(t *tree.Tree) { size = t.ApproximateDataSize() })
		s.returnMemory(size)
	}
}

// returnMemory returns memory once the writes stop if size (bytes of data
// that became garbage) reaches Options.ReturnMemoryAfter, unless a return
// is already waiting for them to stop.
func (s *Server) returnMemory(size int64) {
	limit := s.opts.ReturnMemoryAfter
	if limit < 0 || size < limit || !s.returningMemory.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.returningMemory.Store(false)
		if !s.waitApplyQuiet(s.opts.ReturnMemoryQuiet) {
			return // the server closed
		}
		freeOSMemory()
		s.stats.MemoryReturns.Add(1)
	}()
}

// returning is held while a return runs in the process; returnedAt is
// when the last one ended (unix ns). They are the process's, not a
// server's: the memory returned is the process's, whichever of its
// servers (zktest runs several) asks.
var (
	returning  sync.Mutex
	returnedAt atomic.Int64
)

// freeOSMemory collects and returns free memory to the operating system,
// one return at a time in the process.
func freeOSMemory() {
	returning.Lock()
	defer returning.Unlock()
	debug.FreeOSMemory()
	returnedAt.Store(time.Now().UnixNano())
}

// quietWatch is what logCompacted tells watchQuiet: that a snapshot was
// taken, and the bytes of log let go of (compacted) since compactedAt.
type quietWatch struct {
	snapped     chan struct{} // buffered
	compacted   atomic.Uint64
	compactedAt atomic.Int64 // unix ns of the last compaction counted
}

// compactedSinceReturn is the log let go of since the process last
// returned memory: what a return after that gave back is not counted.
func (w *quietWatch) compactedSinceReturn() uint64 {
	if returnedAt.Load() >= w.compactedAt.Load() {
		w.compacted.Store(0)
	}
	return w.compacted.Load()
}

// startWatchQuiet starts watchQuiet once per server, unless returns are
// off; s.quiet is set once it returns.
func (s *Server) startWatchQuiet() {
	if s.opts.ReturnMemoryHeld < 0 {
		return
	}
	s.quietOnce.Do(func() {
		s.quiet = &quietWatch{snapped: make(chan struct{}, 1)}
		go s.watchQuiet(s.quiet)
	})
}

// watchQuiet returns memory at the end of each burst of writes, once no
// entry was applied for ReturnMemoryQuiet, if enough could be given back
// (worthReturning), until the server closes. Checked every
// ReturnMemoryQuiet: the end of a burst is seen within twice that. A
// snapshot (snapped) counts as a write: the one taken once the writes
// stopped ends after they did.
func (s *Server) watchQuiet(w *quietWatch) {
	d := s.opts.ReturnMemoryQuiet
	t := time.NewTicker(d)
	defer t.Stop()
	last, wrote := s.appliedIndex(), true
	for {
		select {
		case <-t.C:
		case <-w.snapped:
			wrote = true
			continue
		case <-s.done:
			return
		}
		if now := s.appliedIndex(); now != last {
			last, wrote = now, true
			continue
		}
		if !wrote || time.Since(time.Unix(0, returnedAt.Load())) < d {
			continue
		}
		wrote = false
		st, ok := memlimit.Read()
		// A return after a compacted log may be waiting for this quiet
		// period too (returningMemory): it will give this back.
		if !ok || !worthReturning(st, w.compactedSinceReturn(), s.opts.ReturnMemoryHeld) || !s.returningMemory.CompareAndSwap(false, true) {
			continue
		}
		freeOSMemory()
		s.returningMemory.Store(false)
		s.stats.MemoryReturns.Add(1)
	}
}

// worthReturning reports whether a return of memory gives back enough:
// at least least bytes, and at least 1/16 of the live heap, counting the
// log compacted since the last return (compacted bytes of entry data).
func worthReturning(st memlimit.Stats, compacted uint64, least int64) bool {
	r := st.Returnable() + compacted
	return r >= uint64(max(least, 0)) && r >= st.Live/16
}

// waitApplyQuiet waits until no entry was applied for d (checked every d:
// a quiet period is seen within 2d of its start). It returns false if the
// server closed meanwhile.
func (s *Server) waitApplyQuiet(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	last := s.appliedIndex()
	for {
		select {
		case <-t.C:
		case <-s.done:
			return false
		}
		now := s.appliedIndex()
		if now == last {
			return true
		}
		last = now
		t.Reset(d)
	}
}

// appliedIndex is the raft index of the last entry applied (0 before the
// node started).
func (s *Server) appliedIndex() uint64 {
	if n := s.raft.Raft(); n != nil {
		return n.AppliedIndex()
	}
	return 0
}
