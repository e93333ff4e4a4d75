// The request pipeline: a connection's reader hands each request here.
// Reads run at once unless a write of the same connection is in flight,
// then they queue behind it; writes and syncs are proposed (held while
// more requests are buffered, see Conn.readLoop) and answered when the
// state machine applies them.

package clientport

import (
	"fmt"
	"slices"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/replica"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/server/stats"
	"github.com/zkgo/zkgo/tree"
)

// noteReply records a reply's statistics.
func (c *Conn) noteReply(r *request, zxid int64) {
	now := time.Now()
	d := now.Sub(r.start)
	switch {
	case !r.isWrite:
		c.s.noteStage(stats.StageRead, d)
	case !r.proposed.IsZero():
		c.s.noteStage(stats.StagePropose, r.proposed.Sub(r.start))
		c.s.noteStage(stats.StageLog, now.Sub(r.proposed))
		if !r.applyAt.IsZero() {
			c.s.noteStage(stats.StageApply, now.Sub(r.applyAt))
		}
	}
	c.s.stats.Lat.Add(d)
	c.s.met.Request(r.op, r.isWrite, d)
	c.lat.Add(d)
	c.lastZxid.Store(zxid)
	c.lastXid.Store(r.xid)
	c.lastOp.Store(1<<32 | int64(uint32(r.op)))
	c.lastResp.Store(now.UnixMilli())
}

// request is one client request in a connection's pipeline; a write's
// request is the waiter of its proposal.
type request struct {
	c       *Conn
	xid     int32
	op      proto.OpCode
	body    proto.Record
	auth    []proto.Id
	isWrite bool
	// reconfig marks a reconfig (reconfig.go): it waits for its own
	// outcome (the membership changes, or it answers an error), so a
	// change of leader — which a reconfig removing the leader makes —
	// does not abort its connection as it does a write's.
	reconfig bool
	// done marks a write that completed outside the log (a reconfig,
	// reconfig.go): it is answered, with body as a readFunc, once the
	// writes before it are.
	done bool
	// reply, for a log write that was applied while a reconfig before it
	// was still in progress, sends its reply once that one is answered
	// (from the locked tree t).
	reply func(t *tree.Tree)
	start time.Time
	// proposed: when its proposal was handed to raft (a write; set by
	// the proposer's take on the apply goroutine, stages.go).
	proposed time.Time
	// applyAt: when the state machine got the committed batch holding
	// its entry (a write; stats.StageApply, stages.go).
	applyAt time.Time
	noSlot  bool // holds no outstanding-request slot (the handshake)
	// lread marks a linearizable read (linread.go): queued like a
	// write, it holds what follows until its read round is done.
	lread bool
}

// handleFrame dispatches one request frame. It returns false when the
// connection must close.
func (c *Conn) handleFrame(frame []byte) bool {
	d := jute.NewAliasingDecoder(frame)
	var h proto.RequestHeader
	h.Decode(d)
	if d.Err() != nil {
		c.s.log.Warn("closing connection: short request header", "session", proto.SessionIDHex(c.sessionID))
		return false
	}
	r := &request{c: c, xid: h.Xid, op: h.Type, auth: *c.auth.Load(), start: time.Now()}
	c.lastPing = h.Type == proto.OpPing
	if c.moved.Load() {
		// ZooKeeper's SessionMovedException: the session lives on
		// another member now.
		c.submitRead(r, fixedCode(proto.ErrSessionMoved))
		return true
	}
	if h.Type != proto.OpAuth && h.Type != proto.OpSasl && c.authMissing() {
		return c.refuseUnauthenticated(r) // enforce.auth (sasl.go)
	}
	info := proto.Op(h.Type)
	if info == nil || info.Kind == proto.KindNone {
		c.s.log.Warn("unknown opcode; closing connection", "op", int32(h.Type), "session", proto.SessionIDHex(c.sessionID))
		c.submitRead(r, fixedCode(proto.ErrUnimplemented))
		c.closeAfterFlush()
		return false
	}
	switch info.Kind {
	case proto.KindConnection:
		c.release()
		if h.Type == proto.OpSasl {
			return c.handleSasl(h.Xid, d)
		}
		return c.handleAuth(h.Xid, d)
	case proto.KindInternal:
		if h.Type == proto.OpCreateSession {
			// Only the handshake creates sessions; ZooKeeper answers a
			// createSession request with MarshallingError and keeps going.
			c.submitRead(r, fixedCode(proto.ErrMarshallingError))
		} else {
			// The container sweep's deleteContainer: it would delete
			// nodes without an ACL check.
			c.submitRead(r, fixedCode(proto.ErrBadArguments))
		}
		return true
	case proto.KindMembership:
		if c.s.readOnly.Load() {
			c.submitRead(r, fixedCode(proto.ErrNotReadOnly))
			return true
		}
		if !c.s.opts.ReconfigEnabled {
			// Reconfiguration is disabled, as ZooKeeper answers by
			// default (reconfigEnabled=false).
			c.auditReconfig(r.auth, proto.ErrReconfigDisabled)
			c.submitRead(r, fixedCode(proto.ErrReconfigDisabled))
			return true
		}
		if !c.s.clustered() {
			// Enabled on a standalone server: ZooKeeper's standalone
			// server has no reconfig (Unimplemented; kazoo 2.8, which
			// does not know ReconfigDisabled, hung on that code).
			c.auditReconfig(r.auth, proto.ErrUnimplemented)
			c.submitRead(r, fixedCode(proto.ErrUnimplemented))
			return true
		}
		return c.handleReconfig(r, d)
	}
	if h.Type == proto.OpCloseSession && c.localSession {
		// Nothing to log: a local session ends with its connection.
		c.submitRead(r, fixedCode(proto.ErrOk))
		c.closeAfterFlush()
		return true
	}
	if info.Request != nil {
		switch info.Kind {
		case proto.KindRead:
		case proto.KindWrite:
			// A write's strings are copied (they may be kept), its
			// buffers (data) alias the frame, which is never
			// reused: they are copied into the log entry at once.
			d = jute.NewBufferAliasingDecoder(frame[d.Offset():])
		default:
			// Connection requests (auth, SASL) and the rest keep
			// nothing of the frame.
			d = jute.NewDecoder(frame[d.Offset():])
		}
		body := info.Request()
		body.Decode(d)
		if d.Err() != nil {
			c.s.log.Info("malformed request", "op", info.Name, "session", proto.SessionIDHex(c.sessionID), "err", d.Err())
			c.submitRead(r, fixedCode(proto.ErrMarshallingError))
			return true
		}
		r.body = body
	}
	if h.Type == proto.OpMultiRead || h.Type == proto.OpMulti {
		// Read ops in a multi, or write ops in a multiRead: ZooKeeper
		// fails the whole request.
		m := r.body.(*proto.MultiRequest)
		if h.Type == proto.OpMulti && m.IsRead() || h.Type == proto.OpMultiRead && len(m.Ops) > 0 && !m.IsRead() {
			c.submitRead(r, fixedCode(proto.ErrMarshallingError))
			return true
		}
	}
	// Writes, and syncs (a barrier through the log: when it is applied
	// here, so is every write committed before it anywhere), go through
	// the log.
	r.isWrite = info.Kind == proto.KindWrite || info.Kind == proto.KindBarrier
	if c.s.readOnly.Load() && r.isWrite && h.Type != proto.OpCloseSession {
		// ZooKeeper's ReadOnlyRequestProcessor: no changes, no sync.
		c.submitRead(r, fixedCode(proto.ErrNotReadOnly))
		return true
	}
	if r.isWrite {
		c.submitWrite(r, len(frame))
	} else {
		c.submitRead(r, nil)
	}
	return true
}

// release frees an outstanding-request slot. It does nothing once the
// connection closed: close gave every slot back (freeSlots).
func (c *Conn) release() {
	c.slotMu.Lock()
	if c.held == 0 {
		c.slotMu.Unlock()
		return
	}
	c.held--
	c.slotMu.Unlock()
	<-c.slots
	<-c.s.inflight // taken with the connection's slot
}

// freeSlots gives back the slots of every request still outstanding on a
// connection that closed. Without it a request that is never answered —
// a write whose proposal was lost closes its connection, and the reads
// queued behind it never run — kept its slot of the server forever: after
// globalOutstandingLimit such requests (a few leader changes under load)
// the member read no request from any client again.
func (c *Conn) freeSlots() {
	c.slotMu.Lock()
	n := c.held
	c.held, c.slotsFreed = 0, true
	c.slotMu.Unlock()
	for range n {
		<-c.slots
		<-c.s.inflight
	}
}

// acquireSlot takes an outstanding-request slot of the connection
// (MaxOutstanding) and one of the server (GlobalOutstanding), waiting
// while either limit is reached. It returns false if the connection
// closed meanwhile. Reader goroutine only.
func (c *Conn) acquireSlot() bool {
	for _, sem := range []chan struct{}{c.slots, c.s.inflight} {
		select {
		case sem <- struct{}{}:
			continue
		default:
		}
		// At a limit: what is held must go to raft, or the replies
		// that free slots never come.
		c.releaseHeld()
		select {
		case sem <- struct{}{}:
		case <-c.closed:
			if sem != c.slots {
				<-c.slots // give back the connection's slot
			}
			return false
		}
	}
	c.slotMu.Lock()
	if c.slotsFreed { // closed meanwhile
		c.slotMu.Unlock()
		<-c.s.inflight
		<-c.slots
		return false
	}
	c.held++
	c.slotMu.Unlock()
	return true
}

// submitWrite proposes a write. Reads that arrive before it is applied
// queue behind it.
func (c *Conn) submitWrite(r *request, frameLen int) {
	if c.claimReady != nil && !c.claimKnown {
		// Pipelined behind the handshake: wait for the connection's
		// claim on its session, which the write carries.
		select {
		case <-c.claimReady:
			c.claimKnown = true
		case <-c.closed:
			return
		}
	}
	c.pipeMu.Lock()
	c.inflight++
	c.queue = append(c.queue, r)
	c.pipeMu.Unlock()
	var e *statemachine.Entry
	if r.op == proto.OpSync {
		e = statemachine.SyncEntry() // a barrier: nothing to apply
	} else {
		e = statemachine.TxnEntry(&tree.Txn{Op: r.op, Session: c.sessionID, Time: time.Now().UnixMilli(), Auth: r.auth, Req: r.body, Claim: c.claim.Load()})
		e.SizeHint = statemachine.EntrySizeHint(frameLen, r.auth)
	}
	ok := c.s.prop.Propose(e, r, c.moreBuffered)
	if c.moreBuffered {
		c.holding = c.holding || ok
	} else {
		// propose hands over what this reader held too: one queue.
		c.holding = c.holding && !ok
	}
	if !ok {
		c.close("server shutting down")
	}
}

// readFunc overrides the normal read handling (used for fixed error replies
// that must still respect reply order).
type readFunc func(*request, *tree.Tree) (proto.ErrCode, proto.Record)

// submitRead runs a read now if no write of this connection is in flight,
// and otherwise queues it behind the writes.
func (c *Conn) submitRead(r *request, fn readFunc) {
	if fn != nil {
		r.body = fixedReply(fn)
	} else if c.s.opts.LinearizableReads && linearizableOp(r.op) {
		c.submitLinearizableRead(r)
		return
	}
	c.pipeMu.Lock()
	if c.inflight > 0 {
		c.queue = append(c.queue, r)
		c.pipeMu.Unlock()
		return
	}
	c.pipeMu.Unlock()
	c.s.sm.View(func(t *tree.Tree) { c.execRead(r, t, true) })
}

// fixedCode is a readFunc answering code without a body.
func fixedCode(code proto.ErrCode) readFunc {
	return func(*request, *tree.Tree) (proto.ErrCode, proto.Record) { return code, nil }
}

// fixedReply wraps a readFunc as a request body so it can sit in the queue.
type fixedReply readFunc

func (fixedReply) Encode(*jute.Encoder) {}

func (fixedReply) Decode(*jute.Decoder) {}

// applied implements waiter: r (a write or sync) was applied.
func (r *request) Applied(zxid int64, res *tree.Result, b *statemachine.Batch) {
	r.c.writeApplied(r, zxid, res, b)
}

// lost implements waiter: the proposal was lost (a leader change, or
// dropped by raft), so whether the write happens is unknown, which the
// client learns as a connection loss, as with ZooKeeper.
func (r *request) Lost() { r.c.close("write outcome unknown (proposal lost)") }

// ProposedAt is told by the proposer when r's entry was handed to raft:
// where its time in the log (stats.StageLog) starts.
func (r *request) ProposedAt(t time.Time) { r.proposed = t }

var _ replica.TimedWaiter = (*request)(nil)

// writeApplied runs on the apply goroutine, with the tree locked, once the
// write r has been applied: it queues r's reply, then runs the reads that
// were waiting behind r.
func (c *Conn) writeApplied(r *request, zxid int64, res *tree.Result, b *statemachine.Batch) {
	c.holdKicks(b)
	c.pipeMu.Lock()
	defer c.pipeMu.Unlock()
	if len(c.queue) > 0 && c.queue[0] != r && (c.queue[0].op == proto.OpReconfig || c.queue[0].lread) && !c.queue[0].done {
		// A reconfig before it is still being carried out (reconfig.go),
		// or a linearizable read waiting for its round (linread.go):
		// the reply waits for it.
		if i := slices.Index(c.queue, r); i > 0 {
			r.done = true
			r.reply = func(*tree.Tree) { c.replyWrite(r, zxid, res) }
			return
		}
	}
	if len(c.queue) == 0 || c.queue[0] != r {
		select {
		case <-c.closed:
			// An earlier write of this connection was lost and the
			// connection closed; a later one may still apply.
			return
		default:
		}
		// Cannot happen: writes of one connection apply in order.
		panic(fmt.Sprintf("server: write reply out of order (xid %d)", r.xid))
	}
	c.queue[0] = nil
	c.queue = c.queue[1:]
	c.inflight--
	c.replyWrite(r, zxid, res)
	if len(c.queue) > 0 && c.inflight == 0 && !slices.ContainsFunc(c.queue, func(q *request) bool { return q.lread || q.done }) {
		// Only reads wait behind r: they run at the batch's end, seeing
		// the writes after r in it too (other sessions' — any of this
		// one's would be queued), as fresh as a read sent after r's
		// reply came. A lock's contender, whose create is followed by a
		// getChildren, so finds the holder's delete that shared its
		// fsync and takes the lock at once. They run after every
		// connection's wake-up: the batch's notifications (the next
		// holder's) do not wait for them.
		c.drainAt = b.Tree()
		b.Later(c.drainLater)
		return
	}
	c.drainQueueLocked(b.Tree())
}

// drainQueueLocked answers the queued requests that no longer wait for a
// write: reads, and writes completed outside the log (done). pipeMu is
// held, and the tree t is locked.
func (c *Conn) drainQueueLocked(t *tree.Tree) {
	for len(c.queue) > 0 && (!c.queue[0].isWrite && !c.queue[0].lread || c.queue[0].done) {
		rd := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if rd.done {
			c.inflight--
		}
		if rd.reply != nil {
			rd.reply(t)
			continue
		}
		c.execRead(rd, t, false)
	}
	if len(c.queue) == 0 {
		c.queue = nil
	}
}

func (c *Conn) replyWrite(r *request, zxid int64, res *tree.Result) {
	if r.op == proto.OpCreateSession {
		// The session's creation, or its move here, was applied: it is
		// this connection's claim on the session.
		c.claim.Store(zxid)
		if c.claimReady != nil {
			close(c.claimReady)
		}
		cs := r.body.(*tree.CreateSessionReq)
		c.connectReply(time.Duration(cs.Timeout)*time.Millisecond, c.sessionID, cs.Passwd, zxid)
		return
	}
	if !r.noSlot {
		defer c.release()
	}
	if c.s.audit != nil {
		c.auditWrite(r, res)
	}
	c.noteReply(r, zxid)
	hdr := proto.ReplyHeader{Xid: r.xid, Zxid: zxid, Err: res.Err}
	if r.op == proto.OpSync {
		c.enqueue(&hdr, &proto.SyncResponse{Path: r.body.(*proto.SyncRequest).Path})
		return
	}
	if r.op == proto.OpCloseSession {
		c.enqueue(&hdr, nil)
		c.closeAfterFlush()
		return
	}
	if res.Err != proto.ErrOk {
		c.enqueue(&hdr, nil)
		return
	}
	c.enqueue(&hdr, writeReplies[r.op](res))
}

// writeReplies builds the body of a successful reply to each write opcode
// (proto.KindWrite) from its result; a test checks that none is missing
// and that each makes the table's response record.
var writeReplies = map[proto.OpCode]func(res *tree.Result) proto.Record{
	proto.OpCreate:          func(res *tree.Result) proto.Record { return &proto.CreateResponse{Path: res.Path} },
	proto.OpCreate2:         create2Reply,
	proto.OpCreateContainer: create2Reply,
	proto.OpCreateTTL:       create2Reply,
	proto.OpDelete:          noBody,
	proto.OpSetData:         func(res *tree.Result) proto.Record { return &proto.SetDataResponse{Stat: res.Stat} },
	// ZooKeeper sends check's stat in a SetDataResponse, which clients
	// do not read (the table has no response record for check).
	proto.OpCheck:        func(res *tree.Result) proto.Record { return &proto.SetDataResponse{Stat: res.Stat} },
	proto.OpSetACL:       func(res *tree.Result) proto.Record { return &proto.SetACLResponse{Stat: res.Stat} },
	proto.OpCloseSession: noBody,
	proto.OpMulti: func(res *tree.Result) proto.Record {
		mr := &proto.MultiResponse{Results: make([]proto.MultiResult, len(res.Multi))}
		for i, sub := range res.Multi {
			mr.Results[i] = proto.MultiResult{Type: sub.Op, Err: sub.Err, Path: sub.Path, Stat: sub.Stat}
		}
		return mr
	},
}

func create2Reply(res *tree.Result) proto.Record {
	return &proto.Create2Response{Path: res.Path, Stat: res.Stat}
}

func noBody(*tree.Result) proto.Record { return nil }
