package server

import (
	"sync"

	"github.com/zkgo/zkgo/tree"
)

// applyFunc is called by the apply loop once a proposed transaction has
// been applied, with the server's tree lock held for writing. It must not
// block and must not take the tree lock.
type applyFunc func(zxid int64, res *tree.Result)

type proposal struct {
	txn  *tree.Txn
	done applyFunc
	zxid int64 // the log position, or 0 for the next zxid (memLog)
}

// memLog is the in-memory log: it orders proposals by arrival and applies
// them on one goroutine. It keeps nothing on disk; the raft-backed log
// replaces it. Proposals are applied in batches under one acquisition of the
// tree lock.
type memLog struct {
	s      *Server
	ch     chan proposal
	mu     sync.Mutex // guards closed and serialises sends with stop
	closed bool
	exited chan struct{}
}

func newMemLog(s *Server) *memLog {
	return &memLog{s: s, ch: make(chan proposal, 4096), exited: make(chan struct{})}
}

func (l *memLog) start() error {
	go l.run()
	return nil
}

// propose queues txn. done (may be nil) runs after it is applied. It
// returns false if the log is stopped; done is then never called.
func (l *memLog) propose(txn *tree.Txn, done applyFunc) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.ch <- proposal{txn: txn, done: done}
	return true
}

func (l *memLog) proposeHeld(txn *tree.Txn, done applyFunc) bool { return l.propose(txn, done) }

func (l *memLog) release() {}

func (l *memLog) stop() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.ch)
	}
	l.mu.Unlock()
	<-l.exited
}

func (l *memLog) run() {
	defer close(l.exited)
	batch := make([]proposal, 0, 256)
	for p := range l.ch {
		batch = append(batch[:0], p)
	drain:
		for len(batch) < cap(batch) {
			select {
			case q, ok := <-l.ch:
				if !ok {
					break drain
				}
				batch = append(batch, q)
			default:
				break drain
			}
		}
		l.s.applyBatch(batch)
	}
}

// applyBatch applies committed transactions in order. It is the only place
// the tree is modified.
func (s *Server) applyBatch(batch []proposal) {
	s.treeMu.Lock()
	defer s.treeMu.Unlock()
	for i := range batch {
		p := &batch[i]
		zxid := p.zxid
		if zxid == 0 {
			zxid = s.tree.LastZxid() + 1
		}
		if p.txn == nil { // a sync barrier: nothing to apply
			if p.done != nil {
				p.done(zxid, &tree.Result{})
			}
			p.done = nil
			continue
		}
		res := s.tree.Apply(zxid, p.txn)
		// Watches fire before the reply is queued and before the lock is
		// released, so no reply that observes the change can precede the
		// notification.
		s.watches.Trigger(res.Events)
		// The requester's reply is queued before the session's connections
		// are told to close, so a closeSession reply is never lost.
		if p.done != nil {
			p.done(zxid, &res)
		}
		s.sessions.applied(p.txn, &res)
		p.txn = nil
		p.done = nil
	}
	// Wake each connection's writer once for all its replies of the batch.
	for i, c := range s.heldConns {
		c.releaseKick()
		s.heldConns[i] = nil
	}
	s.heldConns = s.heldConns[:0]
}
