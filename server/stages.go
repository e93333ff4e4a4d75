package server

import (
	"sync/atomic"
	"time"
)

// Where a request's time goes. Each stage is timed on every request (a
// clock read where a stage ends, at most one per batch for the reply) and
// reported as sums and counts in mntr (zkgo_stage_<name>_ns and
// zkgo_stage_<name>_count, for means over any interval) and as the
// histogram zkgo_request_stage_seconds{stage}. tools/compare prints the
// means of a sequential run beside the disk's fdatasync time.
type stage int

const (
	// stagePropose: a write, from reading its request to handing its
	// proposal to raft (decoding, checks, the proposer's queue).
	stagePropose stage = iota
	// stageLog: a write, from raft getting the proposal to its reply
	// being queued: the WAL write and fsync (fsynctime), replication and
	// commit in an ensemble, applying it to the tree.
	stageLog
	// stageRead: a read, from reading its request to queueing its reply.
	stageRead
	// stageReply: a reply (or notification), from being queued to the end
	// of the socket write that carries it; timed per write call, for the
	// oldest reply it carries.
	stageReply
	// stageFsync: not a request's stage but the WAL's, one per write and
	// fsync of a batch of entries (part of stageLog for the writes in
	// it); in mntr only (the histogram is zkgo_wal_fsync_duration_seconds).
	stageFsync
	// stageApply: a write, the last part of its stageLog: from the state
	// machine getting its committed batch to its reply being queued
	// (decoding the entry, applying the batch before it and itself to the
	// tree, firing watches). The log stage less fsync and apply is raft's
	// own time: stepping, the Ready cycle that commits, the hand-off to
	// the apply goroutine.
	stageApply
	numStages
)

var stageNames = [numStages]string{"propose", "log", "read", "reply", "fsync", "apply"}

// StampApply implements statemachine.ApplyStamper: the state machine got
// the batch that holds r's entry (stageApply begins).
func (r *request) StampApply(at time.Time) { r.applyAt = at }

// stageStats are the running sums behind mntr's zkgo_stage_* keys.
type stageStats struct {
	ns, count [numStages]atomic.Int64
}

// noteStage records that one request spent d in st.
func (s *Server) noteStage(st stage, d time.Duration) {
	s.stats.stages.ns[st].Add(int64(d))
	s.stats.stages.count[st].Add(1)
	s.met.Stage(int(st), d)
}
