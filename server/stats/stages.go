package stats

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
type Stage int

const (
	// StagePropose: a write, from reading its request to handing its
	// proposal to raft (decoding, checks, the proposer's queue).
	StagePropose Stage = iota
	// StageLog: a write, from raft getting the proposal to its reply
	// being queued: the WAL write and fsync (fsynctime), replication and
	// commit in an ensemble, applying it to the tree.
	StageLog
	// StageRead: a read, from reading its request to queueing its reply.
	StageRead
	// StageReply: a reply (or notification), from being queued to the end
	// of the socket write that carries it; timed per write call, for the
	// oldest reply it carries.
	StageReply
	// StageFsync: not a request's stage but the WAL's, one per write and
	// fsync of a batch of entries (part of StageLog for the writes in
	// it); in mntr only (the histogram is zkgo_wal_fsync_duration_seconds).
	StageFsync
	// StageApply: a write, the last part of its StageLog: from the state
	// machine getting its committed batch to its reply being queued
	// (decoding the entry, applying the batch before it and itself to the
	// tree, firing watches). The log stage less fsync and apply is raft's
	// own time: stepping, the Ready cycle that commits, the hand-off to
	// the apply goroutine.
	StageApply
	NumStages
)

// StageNames name the stages in mntr and /metrics.
var StageNames = [NumStages]string{"propose", "log", "read", "reply", "fsync", "apply"}

// Stages are the running sums behind mntr's zkgo_stage_* keys, by Stage.
type Stages struct {
	NS, Count [NumStages]atomic.Int64
}

// Note records that one request spent d in st.
func (s *Stages) Note(st Stage, d time.Duration) {
	s.NS[st].Add(int64(d))
	s.Count[st].Add(1)
}
