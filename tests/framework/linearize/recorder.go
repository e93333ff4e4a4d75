package linearize

import (
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Recorder records a history of operations with their call and return
// times on the monotonic clock. It is safe for concurrent use.
type Recorder struct {
	// NoSync: Client.Get reads without a sync first, for servers whose
	// reads are linearizable by themselves. Set it before any Client.
	NoSync bool

	start time.Time    // the clock's origin; time.Since reads the monotonic clock
	clock func() int64 // replaces the clock in tests (nil: the monotonic clock)

	mu    sync.Mutex // guards ops and ended
	ops   []porcupine.Operation
	ended []bool // ended[i]: ops[i] has its outcome
}

// NewRecorder returns an empty Recorder whose clock starts now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now()}
}

// now is the time since the recorder's start in nanoseconds, on the
// monotonic clock (never going back, whatever happens to the wall clock).
func (r *Recorder) now() int64 {
	if r.clock != nil {
		return r.clock()
	}
	return int64(time.Since(r.start))
}

// Op is an operation that was called and has not returned yet.
type Op struct {
	r *Recorder
	i int // index in r.ops
}

// Begin records that client calls in, now. It must be called before the
// first request of the operation is sent. The operation ends with End.
func (r *Recorder) Begin(client int, in Input) *Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: r.now()})
	r.ended = append(r.ended, false)
	return &Op{r: r, i: len(r.ops) - 1}
}

// End records the operation's outcome, now: it must be called after the
// last answer of the operation arrived (or was given up on). An outcome
// with Status Unknown means the operation may or may not have taken
// effect. note (the error, the server; may be empty) is shown in the
// visualization. End panics if called twice.
func (o *Op) End(out Output, note string) {
	r := o.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended[o.i] {
		panic("linearize: operation ended twice")
	}
	r.ended[o.i] = true
	op := &r.ops[o.i]
	op.Output, op.Return = out, r.now()
	if note != "" {
		op.Metadata = note
	}
}

// History returns the history recorded so far, for Check. Call it once
// every client has stopped: operations called later would not be ordered
// after the unknown ones.
//
// A write whose outcome is unknown — or that never ended — is given a
// return time after every event of the history: it may have taken effect
// at any point after its call, or never. A read whose outcome is unknown
// is left out: it constrains nothing.
func (r *Recorder) History() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.now() + 1
	for _, op := range r.ops {
		end = max(end, op.Return+1)
	}
	h := make([]porcupine.Operation, 0, len(r.ops))
	for i, op := range r.ops {
		if !r.ended[i] {
			op.Output = Output{Status: Unknown}
		}
		if op.Output.(Output).Status == Unknown {
			if op.Input.(Input).Kind == Get {
				continue
			}
			op.Return = end
		}
		h = append(h, op)
	}
	return h
}

// Counts summarizes a history.
type Counts struct {
	Reads, Writes int // operations in the history (reads with an outcome)
	OK            int // operations that succeeded
	Unknown       int // writes whose outcome is unknown
	DroppedReads  int // reads whose outcome is unknown, left out
}

// Counts summarizes the history recorded so far.
func (r *Recorder) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	var c Counts
	for i, op := range r.ops {
		st := Unknown
		if r.ended[i] {
			st = op.Output.(Output).Status
		}
		read := op.Input.(Input).Kind == Get
		switch {
		case read && st == Unknown:
			c.DroppedReads++
			continue
		case read:
			c.Reads++
		default:
			c.Writes++
		}
		switch st {
		case OK:
			c.OK++
		case Unknown:
			c.Unknown++
		}
	}
	return c
}
