package check

import (
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/zkgo/zkgo/tests/framework/linearize"
)

// History is everything a run recorded, one part per guarantee. Each part
// is the input of one checker; see All.
type History struct {
	// Registers is the linearize history of the register workload (from
	// Recorder.Registers), with unknown writes returning at its end.
	Registers  []porcupine.Operation
	Sequential SequentialHistory
	Ephemerals EphemeralHistory
	Watches    WatchHistory
	Sessions   SessionHistory
	Locks      LockHistory
	Leaders    LeaderHistory
}

// Recorder collects the records of a run's workloads. It is safe for
// concurrent use; appending takes a mutex and copies one small struct.
//
// Times in records are nanoseconds since the run's start on the monotonic
// clock (Now), so they never go back whatever happens to the wall clock,
// and records of all workloads of the process are on one clock. A workload
// reads Now just before it sends a request (the call) and just after the
// answer or the error is back (the return), and appends the record once
// the operation has ended — every operation it started, including those
// that failed or were abandoned: an operation never recorded is taken as
// never called, and a write that was called but not recorded can make a
// checker report a violation that did not happen.
//
// The Recorder keeps the records it is given: a caller must not modify a
// record's slices after appending it.
type Recorder struct {
	start time.Time           // the run's start, with its monotonic reading
	regs  *linearize.Recorder // the register workload's recorder

	mu sync.Mutex // guards h
	h  History
}

// NewRecorder returns an empty Recorder whose clock starts at start (the
// run's start, from time.Now so it carries a monotonic reading).
func NewRecorder(start time.Time) *Recorder {
	return &Recorder{start: start, regs: linearize.NewRecorder()}
}

// Now returns the time since the run's start, in nanoseconds.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// At converts t (taken with time.Now in this process) to a time of the
// history.
func (r *Recorder) At(t time.Time) int64 { return int64(t.Sub(r.start)) }

// Registers returns the linearize.Recorder of the register workload
// (linearize.Client wraps a zk.Conn around it). Its clock starts when
// NewRecorder was called, not at start: register histories are checked on
// their own, so only their internal order matters.
func (r *Recorder) Registers() *linearize.Recorder { return r.regs }

// add appends x to the slice *s under r.mu.
func add[T any](r *Recorder, s *[]T, x T) {
	r.mu.Lock()
	*s = append(*s, x)
	r.mu.Unlock()
}

// AddSeqCreate records a sequential create.
func (r *Recorder) AddSeqCreate(x SeqCreate) { add(r, &r.h.Sequential.Creates, x) }

// AddSeqListing records a listing of a sequential parent.
func (r *Recorder) AddSeqListing(x SeqListing) { add(r, &r.h.Sequential.Listings, x) }

// AddEphemeralCreate records the create of an ephemeral node.
func (r *Recorder) AddEphemeralCreate(x EphemeralCreate) { add(r, &r.h.Ephemerals.Creates, x) }

// AddEphemeralDelete records an explicit delete of an ephemeral node.
func (r *Recorder) AddEphemeralDelete(x EphemeralDelete) { add(r, &r.h.Ephemerals.Deletes, x) }

// AddSessionEnd records the end of a session that owned ephemerals.
func (r *Recorder) AddSessionEnd(x SessionEnd) { add(r, &r.h.Ephemerals.Ends, x) }

// AddObservation records whether another session saw an ephemeral node.
func (r *Recorder) AddObservation(x Observation) { add(r, &r.h.Ephemerals.Observations, x) }

// AddWatch records the registration of a persistent watch.
func (r *Recorder) AddWatch(x Watch) { add(r, &r.h.Watches.Watches, x) }

// AddWrite records a write under a watched path.
func (r *Recorder) AddWrite(x Write) { add(r, &r.h.Watches.Writes, x) }

// AddWatchEvent records a watch event as its watch's reader received it.
func (r *Recorder) AddWatchEvent(x WatchEvent) { add(r, &r.h.Watches.Events, x) }

// AddConnChange records a connection state change of a watcher's client.
func (r *Recorder) AddConnChange(x ConnChange) { add(r, &r.h.Watches.Conns, x) }

// AddSessionOp records a request of the session workload.
func (r *Recorder) AddSessionOp(x SessionOp) { add(r, &r.h.Sessions.Ops, x) }

// AddLockHold records a lock holding.
func (r *Recorder) AddLockHold(x LockHold) { add(r, &r.h.Locks.Holds, x) }

// AddFencedWrite records a fenced write.
func (r *Recorder) AddFencedWrite(x FencedWrite) { add(r, &r.h.Locks.Writes, x) }

// AddLeaderTerm records an interval in which a participant believed it led.
func (r *Recorder) AddLeaderTerm(x LeaderTerm) { add(r, &r.h.Leaders.Terms, x) }

// History returns a copy of everything recorded so far. Call it once every
// workload has stopped: the register history gives its unknown writes a
// return after every operation recorded until then.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := History{
		Registers: r.regs.History(),
		Sequential: SequentialHistory{
			Creates:  slices.Clone(r.h.Sequential.Creates),
			Listings: slices.Clone(r.h.Sequential.Listings),
		},
		Ephemerals: EphemeralHistory{
			Creates:      slices.Clone(r.h.Ephemerals.Creates),
			Deletes:      slices.Clone(r.h.Ephemerals.Deletes),
			Ends:         slices.Clone(r.h.Ephemerals.Ends),
			Observations: slices.Clone(r.h.Ephemerals.Observations),
		},
		Watches: WatchHistory{
			Watches: slices.Clone(r.h.Watches.Watches),
			Writes:  slices.Clone(r.h.Watches.Writes),
			Events:  slices.Clone(r.h.Watches.Events),
			Conns:   slices.Clone(r.h.Watches.Conns),
		},
		Sessions: SessionHistory{Ops: slices.Clone(r.h.Sessions.Ops)},
		Locks: LockHistory{
			Holds:  slices.Clone(r.h.Locks.Holds),
			Writes: slices.Clone(r.h.Locks.Writes),
		},
		Leaders: LeaderHistory{Terms: slices.Clone(r.h.Leaders.Terms)},
	}
	return h
}
