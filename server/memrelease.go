package server

import (
	"runtime/debug"
	"time"

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

// DefaultReturnMemoryAfter and DefaultReturnMemoryQuiet are the defaults
// of Options.ReturnMemoryAfter and ReturnMemoryQuiet.
const (
	DefaultReturnMemoryAfter = 32 << 20
	DefaultReturnMemoryQuiet = time.Second
)

// logCompacted is raftnode.Config.OnLogCompacted: it starts returning
// memory if the log let go of enough, unless a return is under way.
func (s *Server) logCompacted(dataBytes uint64) {
	s.returnMemory(int64(min(dataBytes, 1<<62)))
}

// startupLoaded is replica.onStartupLoad: the member loaded its state
// from its data directory when raft started.
func (s *Server) startupLoaded(open time.Duration, load raftnode.StartupLoad) {
	if s.met != nil {
		s.met.StartupLoad(open, load)
	}
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
		debug.FreeOSMemory()
		s.stats.MemoryReturns.Add(1)
	}()
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
