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
// returns free memory at once (debug.FreeOSMemory: one collection and a
// scavenge), at most one collection per snapshot.
//
// A restart is the same: decoding the snapshot and replaying the log
// leave garbage the size of what was loaded, so once a member has loaded
// a tree of at least ReturnMemoryAfter bytes it returns memory too.

// DefaultReturnMemoryAfter is Options.ReturnMemoryAfter's default.
const DefaultReturnMemoryAfter = 32 << 20

// logCompacted is raftnode.Config.OnLogCompacted: it starts returning
// memory if the log let go of enough, unless a return is under way.
func (s *Server) logCompacted(dataBytes uint64) {
	s.returnMemory(int64(min(dataBytes, 1<<62)))
}

// startupLoaded is replica.onStartupLoad: the member loaded its state
// from its data directory when raft started.
func (s *Server) startupLoaded(open time.Duration, load raftnode.StartupLoad) {
	if s.met != nil {
		s.met.startupLoad(open, load)
	}
	if load.Snapshot > 0 || load.Entries > 0 {
		var size int64
		s.sm.view(func(t *tree.Tree) { size = t.ApproximateDataSize() })
		s.returnMemory(size)
	}
}

// returnMemory starts returning memory if size (bytes of data that became
// garbage) reaches Options.ReturnMemoryAfter, unless a return is under
// way.
func (s *Server) returnMemory(size int64) {
	limit := s.opts.ReturnMemoryAfter
	if limit < 0 || size < limit || !s.returningMemory.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.returningMemory.Store(false)
		debug.FreeOSMemory()
		s.stats.memoryReturns.Add(1)
	}()
}
