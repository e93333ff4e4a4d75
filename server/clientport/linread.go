package clientport

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// Linearizable reads (Options.LinearizableReads, zkgo.reads=linearizable).
// ZooKeeper's reads are answered from the member's own tree: a member
// that lags, or a leader deposed without knowing it, answers an older
// state than a write another session saw acknowledged. With this option
// every read waits for a ReadIndex round (raft's read-only query: the
// leader confirms with a quorum's heartbeat that it still leads and
// names its commit index) and for this member to apply up to that index,
// then reads its tree. A read so answered sees every write acknowledged
// before it was sent, on any member.
//
// Rounds are shared: the reads that arrive while a round runs wait for
// the next one, which starts as soon as the running one ends, so a busy
// member runs one round at a time whatever its read rate. Within a
// connection, order is kept: the read sits in the connection's queue
// like a write, and what follows it waits for it.

// readBarrierTimeout bounds one round: a member that cannot reach a
// leader fails its reads (their connections close, as a write's whose
// outcome is unknown) instead of holding them.
const readBarrierTimeout = 10 * time.Second

// readBarrier coalesces linearizable reads into ReadIndex rounds.
type readBarrier struct {
	s       *Port
	mu      sync.Mutex    // guards next, running
	next    []func(error) // callbacks of the reads waiting for the next round
	running bool          // a loop goroutine runs rounds
}

// wait calls done once a round that started after this call has ended:
// with nil, every write committed before the call is applied here.
func (b *readBarrier) wait(done func(error)) {
	b.mu.Lock()
	b.next = append(b.next, done)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
}

func (b *readBarrier) loop() {
	for {
		b.mu.Lock()
		batch := b.next
		b.next = nil
		if len(batch) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		err := b.round()
		for _, done := range batch {
			done(err)
		}
	}
}

// round runs one ReadIndex round and waits until it is applied here.
func (b *readBarrier) round() error {
	node := b.s.raft.Raft()
	if node == nil {
		return errors.New("raft is not running")
	}
	ctx, cancel := context.WithTimeout(context.Background(), readBarrierTimeout)
	defer cancel()
	idx, err := node.ReadIndex(ctx)
	if err != nil {
		return err
	}
	return node.WaitApplied(ctx, idx)
}

// linearizableOp reports whether op reads the tree (what a linearizable
// read waits for); pings, watch management and whoAmI do not.
func linearizableOp(op proto.OpCode) bool {
	switch op {
	case proto.OpExists, proto.OpGetData, proto.OpGetChildren, proto.OpGetChildren2, proto.OpGetACL,
		proto.OpGetAllChildrenNumber, proto.OpGetEphemerals, proto.OpMultiRead:
		return true
	}
	return false
}

// submitLinearizableRead queues r behind what the connection has in
// flight and answers it after a read round.
func (c *Conn) submitLinearizableRead(r *request) {
	c.pipeMu.Lock()
	r.lread = true
	c.inflight++
	c.queue = append(c.queue, r)
	c.pipeMu.Unlock()
	c.s.reads.wait(func(err error) {
		select {
		case <-c.closed:
			return
		default:
		}
		if err != nil {
			c.close("linearizable read: " + err.Error())
			return
		}
		c.s.sm.View(func(t *tree.Tree) {
			c.pipeMu.Lock()
			defer c.pipeMu.Unlock()
			r.done = true
			r.reply = func(t *tree.Tree) { c.execRead(r, t, false) }
			c.drainQueueLocked(t)
		})
	})
}

// catchUp waits until this member has applied everything the ensemble
// had committed when it was called: a ReadIndex round, shared with the
// linearizable reads waiting then (at most readBarrierTimeout).
func (s *Port) catchUp() error {
	done := make(chan error, 1)
	s.reads.wait(func(err error) { done <- err })
	select {
	case err := <-done:
		return err
	case <-s.done:
		return errors.New("the server is closing")
	}
}
