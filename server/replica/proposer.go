package replica

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/server/statemachine"
)

// waiter is who waits for the outcome of a proposal (see
// statemachine.Waiter: a client's request, a reconfig barrier).
type waiter = statemachine.Waiter

// errNotStarted: the Proposer has no raft node yet.
var errNotStarted = errors.New("server: raft is not started")

// batchProposer is the part of raftnode.Node the Proposer uses.
type batchProposer interface {
	ProposeBatch(ctx context.Context, datas [][]byte) error
}

// maxSubmitRounds bounds how many batches a Proposer hands to raft for
// others before a goroutine of its own takes over, so that one
// connection's reader is not kept from its own requests under load.
const maxSubmitRounds = 4

// Proposer hands this member's entries to raft and remembers who waits
// for them. Proposals are combined: the caller of propose that finds
// nobody handing proposals to raft becomes the submitter and hands over
// everything queued, its own and what other callers queue meanwhile, as
// one raft message per round (raft appends them as adjacent entries, in
// queue order), until the queue is empty. The others return at once. A
// single submitter keeps the log order of this member's proposals equal
// to their order here, which take relies on to notice a proposal raft
// dropped.
//
// Callers: connections' readers (client writes and syncs), the session
// tracker (expiry), the container sweep; take is called by the state
// machine on the apply goroutine.
type Proposer struct {
	log    *slog.Logger
	idBase uint64 // random high bits, so ids never repeat across restarts

	mu      sync.Mutex // guards everything below
	raft    batchProposer
	pending []*pendingProp // proposals with a waiter, oldest first
	nextID  uint64
	stopped bool
	// Proposals waiting to be handed to raft, and whether a caller is
	// handing them over (see propose).
	queue      [][]byte
	queueProps []*pendingProp
	submitting bool

	// dropped counts proposals raft refused (ProposeBatch failed) or that
	// never reached the log (found lost by take), for
	// zkgo_raft_proposals_dropped_total.
	dropped atomic.Int64
}

// TimedWaiter is a waiter told when its entry was handed to raft (a
// client's request: where its time in the log starts).
type TimedWaiter interface{ ProposedAt(time.Time) }

// pendingProp is a proposal made here that waits for its entry to apply.
// seq is the low half of its proposal id.
type pendingProp struct {
	seq uint32
	w   waiter    // nil once told
	at  time.Time // when it was handed to raft (a write's stats.StageLog starts)
}

func NewProposer(log *slog.Logger) *Proposer {
	var b [4]byte
	rand.Read(b[:])
	return &Proposer{log: log, idBase: uint64(binary.BigEndian.Uint32(b[:])) << 32}
}

// start connects the Proposer to raft; until then propose queues.
func (p *Proposer) start(r batchProposer) {
	p.mu.Lock()
	p.raft = r
	p.mu.Unlock()
}

// propose queues e (a transaction or a sync barrier) for raft; w (may be
// nil) is told its outcome. With hold, e may stay queued until the next
// propose or release: a connection's reader holds the writes of the
// requests it already has buffered and releases them together, and must
// call release before it waits for anything. propose returns false if the
// Proposer is stopped; w is then never told anything.
func (p *Proposer) Propose(e *statemachine.Entry, w waiter, hold bool) bool {
	var enc jute.Encoder
	if e.SizeHint > 0 {
		enc.Reset(make([]byte, 0, e.SizeHint))
	}
	statemachine.AppendEntry(&enc, e) // the id is filled in below
	data := enc.Bytes()
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return false
	}
	p.nextID++
	seq := uint32(p.nextID)
	binary.BigEndian.PutUint64(data, p.idBase|uint64(seq))
	var pp *pendingProp
	if w != nil {
		pp = &pendingProp{seq: seq, w: w}
		p.pending = append(p.pending, pp)
	}
	p.queue = append(p.queue, data)
	p.queueProps = append(p.queueProps, pp)
	if p.submitting || hold || p.raft == nil {
		p.mu.Unlock()
		return true
	}
	p.submitting = true
	p.submit(maxSubmitRounds)
	return true
}

// proposeNow hands data (a control entry, whose id is 0) to raft at once,
// outside the queue, waiting at most until ctx ends.
func (p *Proposer) proposeNow(ctx context.Context, e *statemachine.Entry) error {
	var enc jute.Encoder
	statemachine.AppendEntry(&enc, e)
	p.mu.Lock()
	r := p.raft
	p.mu.Unlock()
	if r == nil {
		return errNotStarted
	}
	return r.ProposeBatch(ctx, [][]byte{enc.Bytes()})
}

// release hands what propose(hold) left queued to raft, unless a
// submitter is at it already.
func (p *Proposer) Release() {
	p.mu.Lock()
	if p.submitting || len(p.queue) == 0 || p.raft == nil {
		p.mu.Unlock()
		return
	}
	p.submitting = true
	p.submit(maxSubmitRounds)
}

// submit hands queued proposals to raft, rounds times at most (0: until
// the queue is empty), then hands the rest to a new goroutine. It is
// called with p.mu held and p.submitting set, and returns with p.mu
// released.
func (p *Proposer) submit(rounds int) {
	for round := 0; len(p.queue) > 0; round++ {
		if rounds > 0 && round == rounds {
			go func() {
				p.mu.Lock()
				p.submit(0)
			}()
			p.mu.Unlock()
			return
		}
		datas, props := p.queue, p.queueProps
		p.queue, p.queueProps = nil, nil
		r := p.raft
		now := time.Now()
		for _, pp := range props {
			if pp != nil {
				pp.at = now
			}
		}
		p.mu.Unlock()
		// A single proposal waits for raft to accept it, so a drop is
		// reported at once; a batch is stepped without waiting, and a
		// drop (rare: a leadership transfer, the uncommitted-size limit)
		// shows when a later proposal of this member applies.
		if err := r.ProposeBatch(context.Background(), datas); err != nil {
			p.log.Warn("proposal failed", "err", err, "proposals", len(datas))
			p.dropped.Add(int64(len(datas)))
			p.fail(props)
		}
		p.mu.Lock()
	}
	p.submitting = false
	p.mu.Unlock()
}

// fail tells the waiters of proposals that never reached the log that
// their outcome is unknown.
func (p *Proposer) fail(props []*pendingProp) {
	var lost []waiter
	p.mu.Lock()
	for _, pp := range props {
		if pp != nil && pp.w != nil {
			lost = append(lost, pp.w)
			pp.w = nil
		}
	}
	p.mu.Unlock()
	for _, w := range lost {
		w.Lost()
	}
}

// stop makes further proposals fail; queued ones are dropped (their
// waiters are not told: the server is closing their connections).
func (p *Proposer) Stop() {
	p.mu.Lock()
	p.stopped = true
	p.queue, p.queueProps = nil, nil
	p.mu.Unlock()
}

// waiting returns how many proposals made here wait to be handed to raft
// or for their entry to apply (Shutdown's drain).
func (p *Proposer) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.queue)
	for _, pp := range p.pending {
		if pp.w != nil {
			n++
		}
	}
	return n
}

// take removes and returns the waiter of the proposal id made here (nil
// for entries proposed elsewhere or before a restart). This member's
// proposals enter the log in the order they were made (one submitter at a
// time, one raft message per batch), so waiters older than id whose
// entries never applied were dropped by raft, or lost with a leader: they
// are told the outcome is unknown. Called by the state machine.
func (p *Proposer) Take(id uint64) waiter {
	if id&^0xffffffff != p.idBase {
		return nil
	}
	seq := uint32(id)
	var w waiter
	var lost []waiter
	p.mu.Lock()
	n := 0
	for ; n < len(p.pending); n++ {
		pp := p.pending[n]
		d := int32(pp.seq - seq) // wraps with the 32-bit sequence
		if d > 0 {
			break // already failed; the entry applies late
		}
		if d == 0 {
			w, pp.w = pp.w, nil
			if t, ok := w.(TimedWaiter); ok {
				t.ProposedAt(pp.at)
			}
			n++
			break
		}
		if pp.w != nil {
			lost = append(lost, pp.w)
			pp.w = nil
		}
	}
	if n > 0 {
		clear(p.pending[:n])
		p.pending = p.pending[n:]
		if len(p.pending) == 0 {
			p.pending = p.pending[:0:0]
		}
	}
	p.mu.Unlock()
	p.dropped.Add(int64(len(lost)))
	for _, l := range lost {
		l.Lost()
	}
	return w
}

// Dropped is how many proposals raft dropped
// (zkgo_raft_proposals_dropped_total).
func (p *Proposer) Dropped() int64 { return p.dropped.Load() }
