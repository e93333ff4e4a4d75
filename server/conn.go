package server

import (
	"bufio"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// maxOutBytes bounds a connection's unsent replies and notifications; a
// client that stops reading is disconnected rather than growing the server
// without bound.
const maxOutBytes = 64 << 20

// Conn is one client connection.
type Conn struct {
	s        *Server
	nc       net.Conn
	remoteIP string
	created  time.Time

	// Set by the handshake before any request is read; read-only after.
	sessionID  int64
	timeout    time.Duration
	sendRO     bool // the client sent the readOnly byte; answer with one
	live       *liveSession
	handshaken atomic.Bool
	// localSession: the session was made by this member in read-only
	// mode and exists nowhere else (ZooKeeper's local sessions); it ends
	// with the connection. Set by the handshake, read by the reader.
	localSession bool

	auth   atomic.Pointer[[]proto.Id] // copy-on-write authenticated ids
	saslEx *saslExchange              // SASL state (sasl.go); reader goroutine only

	// wmu serialises taking bytes out of out and writing them, so batches
	// reach the socket in order whether the writer goroutine or the
	// reader (flushing its own read replies inline) writes them.
	wmu       sync.Mutex
	outMu     sync.Mutex // guards out, outClosed, closeAfter
	out       jute.Encoder
	outClosed bool
	flushKick chan struct{}
	// closeAfter makes the writer close the connection once the queued
	// bytes are written (after a closeSession reply or a fatal error).
	closeAfter bool
	// holdKick: the apply goroutine is queuing replies of one batch of
	// writes here; it wakes the writer once, after the batch, so that
	// they leave in one write (kickHeld: a wake-up is owed).
	holdKick, kickHeld bool

	pipeMu   sync.Mutex // guards inflight, queue
	inflight int        // writes proposed and not yet applied
	queue    []*request // in order: the in-flight writes and reads waiting behind them

	slots chan struct{} // outstanding-request semaphore

	closeOnce sync.Once
	closed    chan struct{}

	inlinePending bool // reader goroutine only: replies appended, not flushed
	// Reader goroutine only: more whole requests are buffered (writes are
	// proposed held, see txnLog.proposeHeld), and some are held.
	moreBuffered, holding bool
	spareIn               []byte // guarded by wmu: buffer reused by flushInline

	// statistics for cons/stat
	packetsIn, packetsOut atomic.Int64
	lastZxid              atomic.Int64
	lastXid               atomic.Int32
	lastResp              atomic.Int64 // unix ms of the last reply
	lastOp                atomic.Int64 // 1<<32 | the opcode of the last reply; 0: none yet

	lat latencyStats
}

// noteReply records a reply's statistics.
func (c *Conn) noteReply(r *request, zxid int64) {
	now := time.Now()
	d := now.Sub(r.start)
	c.s.stats.lat.add(d)
	c.lat.add(d)
	c.lastZxid.Store(zxid)
	c.lastXid.Store(r.xid)
	c.lastOp.Store(1<<32 | int64(uint32(r.op)))
	c.lastResp.Store(now.UnixMilli())
}

type request struct {
	c       *Conn
	xid     int32
	op      proto.OpCode
	body    proto.Record
	auth    []proto.Id
	isWrite bool
	start   time.Time
	noSlot  bool // holds no outstanding-request slot (the handshake)
}

func (s *Server) newConn(nc net.Conn) {
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		host = nc.RemoteAddr().String()
	}
	c := &Conn{
		s:         s,
		nc:        nc,
		remoteIP:  host,
		created:   time.Now(),
		flushKick: make(chan struct{}, 1),
		slots:     make(chan struct{}, s.opts.MaxOutstanding),
		closed:    make(chan struct{}),
	}
	ids := []proto.Id{{Scheme: "ip", ID: host}}
	c.auth.Store(&ids)

	s.connsMu.Lock()
	if s.closing.Load() {
		s.connsMu.Unlock()
		nc.Close()
		return
	}
	if max := s.opts.MaxClientCnxns; max > 0 && s.perIP[host] >= max {
		s.connsMu.Unlock()
		s.log.Warn("too many connections from client; closing", "ip", host, "max", max)
		nc.Close()
		return
	}
	s.perIP[host]++
	s.conns[c] = struct{}{}
	s.connsMu.Unlock()

	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		c.writeLoop()
	}()
	go func() {
		defer s.wg.Done()
		c.readLoop()
	}()
}

// close tears the connection down immediately.
func (c *Conn) close(reason string) {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.outMu.Lock()
		c.outClosed = true
		c.outMu.Unlock()
		c.nc.Close()
		s := c.s
		s.connsMu.Lock()
		if _, ok := s.conns[c]; ok {
			delete(s.conns, c)
			s.perIP[c.remoteIP]--
			if s.perIP[c.remoteIP] <= 0 {
				delete(s.perIP, c.remoteIP)
			}
		}
		s.connsMu.Unlock()
		s.watches.RemoveWatcher(c)
		if c.handshaken.Load() {
			if c.localSession {
				s.sessions.forget(c.sessionID)
			} else {
				s.sessions.detach(c.sessionID, c)
			}
		}
		s.log.Debug("connection closed", "remote", c.nc.RemoteAddr().String(), "session", hexID(c.sessionID), "reason", reason)
	})
}

// closeAfterFlush closes the connection once everything queued so far has
// been written.
func (c *Conn) closeAfterFlush() {
	c.outMu.Lock()
	c.closeAfter = true
	c.outMu.Unlock()
	c.kick()
}

func (c *Conn) kick() {
	select {
	case c.flushKick <- struct{}{}:
	default:
	}
}

// sessionClosed is called (by the apply loop) when the connection's session
// has been closed or expired.
func (c *Conn) sessionClosed() { c.closeAfterFlush() }

// enqueue appends one reply frame to the outgoing queue and wakes the
// writer.
func (c *Conn) enqueue(hdr *proto.ReplyHeader, body proto.Record) {
	if ok, held := c.appendFrame(hdr, body); ok && !held {
		c.kick()
	}
}

// holdKicks defers waking the writer until releaseKick; the apply
// goroutine calls it (with the tree locked) before queuing replies of a
// batch, and releases every held connection at the end of the batch.
func (c *Conn) holdKicks(b *applyBatch) {
	c.outMu.Lock()
	held := c.holdKick
	c.holdKick = true
	c.outMu.Unlock()
	if !held {
		b.join(c)
	}
}

// endBatch implements batchWaker: wake the writer if replies were queued
// while held.
func (c *Conn) endBatch() {
	c.outMu.Lock()
	owed := c.kickHeld
	c.holdKick, c.kickHeld = false, false
	c.outMu.Unlock()
	if owed {
		c.kick()
	}
}

// append adds one reply frame to the outgoing queue without waking the
// writer; the reader goroutine uses it for replies it flushes itself. It
// returns false if the connection is closed or was closed for exceeding
// the queue limit.
func (c *Conn) append(hdr *proto.ReplyHeader, body proto.Record) bool {
	ok, _ := c.appendFrame(hdr, body)
	return ok
}

// appendFrame is append that also reports whether waking the writer is
// held back by the apply goroutine (holdKicks).
func (c *Conn) appendFrame(hdr *proto.ReplyHeader, body proto.Record) (ok, held bool) {
	c.outMu.Lock()
	if c.outClosed {
		c.outMu.Unlock()
		return false, false
	}
	proto.AppendReply(&c.out, hdr, body)
	over := c.out.Len() > maxOutBytes
	if c.holdKick {
		c.kickHeld, held = true, true
	}
	c.outMu.Unlock()
	c.packetsOut.Add(1)
	c.s.stats.packetsSent.Add(1)
	if over {
		c.s.log.Warn("client is not reading its replies; closing connection", "session", hexID(c.sessionID))
		c.close("outgoing queue over limit")
		return false, false
	}
	return true, held
}

// flushInline writes the queued bytes from the reader goroutine, saving a
// hand-off to the writer for the common read-reply case.
func (c *Conn) flushInline() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.outMu.Lock()
	if c.closeAfter || c.outClosed {
		c.outMu.Unlock()
		c.kick()
		return
	}
	buf := c.out.Bytes()
	c.out.Reset(c.spareIn)
	c.outMu.Unlock()
	if len(buf) > 0 {
		if _, err := c.nc.Write(buf); err != nil {
			c.close("write: " + err.Error())
			return
		}
	}
	if cap(buf) <= 1<<20 {
		c.spareIn = buf[:0]
	} else {
		c.spareIn = nil
	}
}

// writeLoop writes queued frames in batches: whatever accumulated while the
// previous write was in progress goes out in one write call.
func (c *Conn) writeLoop() {
	var spare []byte
	for {
		select {
		case <-c.flushKick:
		case <-c.closed:
			return
		}
		c.wmu.Lock()
		c.outMu.Lock()
		buf := c.out.Bytes()
		closeAfter := c.closeAfter
		c.out.Reset(spare)
		c.outMu.Unlock()
		if len(buf) > 0 {
			if _, err := c.nc.Write(buf); err != nil {
				c.wmu.Unlock()
				c.close("write: " + err.Error())
				return
			}
		}
		c.wmu.Unlock()
		if cap(buf) <= 1<<20 {
			spare = buf[:0]
		} else {
			spare = nil
		}
		if closeAfter {
			c.outMu.Lock()
			empty := c.out.Len() == 0
			c.outMu.Unlock()
			if empty {
				c.close("closed after flush")
				return
			}
			c.kick()
		}
	}
}

func (c *Conn) readLoop() {
	defer c.endRead()
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	if cmd := string(hdr[:]); isFourLetterWord(cmd) {
		c.serveFourLetterWord(cmd)
		return
	}
	n, err := proto.FrameLen(hdr, c.s.opts.MaxBuffer)
	if err != nil {
		c.s.log.Warn("closing connection: bad connect frame", "remote", c.nc.RemoteAddr().String(), "err", err)
		return
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return
	}
	if !c.handshake(body) {
		return
	}
	defer c.releaseHeld()
	for {
		frame, err := proto.ReadFrame(br, &hdr, c.s.opts.MaxBuffer)
		if err != nil {
			if errors.Is(err, proto.ErrFrameTooLarge) || errors.Is(err, proto.ErrNegativeFrameLength) {
				c.s.log.Warn("closing connection: frame exceeds jute.maxbuffer", "session", hexID(c.sessionID), "err", err)
			}
			return
		}
		select {
		case c.slots <- struct{}{}:
		default:
			// At the outstanding-request limit: what is held must go
			// to raft, or the replies that free slots never come.
			c.releaseHeld()
			select {
			case c.slots <- struct{}{}:
			case <-c.closed:
				return
			}
		}
		// The writes of requests already buffered behind this one are
		// handed to raft together, after the last of them.
		c.moreBuffered = wholeFrameBuffered(br)
		c.packetsIn.Add(1)
		c.s.stats.packetsReceived.Add(1)
		if c.live != nil {
			c.live.touch()
		}
		if !c.handleFrame(frame) {
			return
		}
		if !c.moreBuffered {
			c.releaseHeld()
		}
		// Flush the replies of inline reads once no further request is
		// already buffered: pipelined reads share one write.
		if c.inlinePending && br.Buffered() == 0 {
			c.inlinePending = false
			c.flushInline()
		}
	}
}

// releaseHeld hands the writes held by proposeHeld to raft.
func (c *Conn) releaseHeld() {
	if c.holding {
		c.holding = false
		c.s.prop.release()
	}
}

// wholeFrameBuffered reports whether br holds at least one whole frame,
// which the next ReadFrame returns without waiting for the network.
func wholeFrameBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 4 {
		return false
	}
	hdr, err := br.Peek(4)
	if err != nil {
		return false
	}
	n := int(binary.BigEndian.Uint32(hdr))
	return n >= 0 && br.Buffered()-4 >= n
}

// endRead runs when the reader stops. If a final reply is queued for
// flushing (closeAfterFlush), the writer closes the connection once it is
// written; otherwise, or if that takes too long, close now.
func (c *Conn) endRead() {
	c.outMu.Lock()
	flushing := c.closeAfter
	c.outMu.Unlock()
	if flushing {
		select {
		case <-c.closed:
			return
		case <-time.After(5 * time.Second):
		}
	}
	c.close("read loop ended")
}

// handshake processes the ConnectRequest. It returns false when the
// connection must close.
func (c *Conn) handshake(body []byte) bool {
	var req proto.ConnectRequest
	d := jute.NewDecoder(body)
	req.Decode(d)
	if d.Err() != nil {
		c.s.log.Warn("closing connection: malformed ConnectRequest", "remote", c.nc.RemoteAddr().String(), "err", d.Err())
		return false
	}
	c.sendRO = req.HasReadOnly
	s := c.s
	if !s.hasQuorum() && !s.readOnly.Load() {
		s.log.Info("refusing session request: not part of a working quorum", "remote", c.nc.RemoteAddr().String())
		return false
	}
	if s.readOnly.Load() && !req.ReadOnly {
		s.log.Info("refusing session request for a client that does not allow read-only mode", "remote", c.nc.RemoteAddr().String())
		return false
	}
	last := s.sm.lastZxid()
	if req.LastZxidSeen > last {
		s.log.Warn("refusing session request: client has seen a newer zxid",
			"remote", c.nc.RemoteAddr().String(), "clientZxid", hexID(req.LastZxidSeen), "serverZxid", hexID(last))
		return false
	}
	to := time.Duration(req.TimeOut) * time.Millisecond
	if to < s.opts.MinSessionTimeout {
		to = s.opts.MinSessionTimeout
	}
	if to > s.opts.MaxSessionTimeout {
		to = s.opts.MaxSessionTimeout
	}
	if req.SessionID == 0 && s.readOnly.Load() && s.clustered() {
		// Cut off from the quorum, a read-only member cannot log a new
		// session: it makes a local one, as ZooKeeper's read-only server
		// does. The client asks for a new session once it reaches a
		// read-write member.
		id := s.sessions.newID()
		pw := newPasswd()
		c.sessionID, c.timeout, c.localSession = id, to, true
		c.live = s.sessions.track(id, to, c)
		c.handshaken.Store(true)
		c.connectReply(to, id, pw, 0)
		return true
	}
	if req.SessionID == 0 {
		id := s.sessions.newID()
		pw := newPasswd()
		txn := &tree.Txn{
			Op: proto.OpCreateSession, Session: id, Time: time.Now().UnixMilli(),
			Req: &tree.CreateSessionReq{Timeout: int32(to / time.Millisecond), Passwd: pw},
		}
		// Track before proposing so the session cannot expire unseen. The
		// createSession goes through the pipeline like a write, so requests
		// pipelined behind the handshake wait for it.
		c.sessionID, c.timeout = id, to
		c.live = s.sessions.track(id, to, c)
		c.handshaken.Store(true)
		r := &request{c: c, op: proto.OpCreateSession, isWrite: true, body: txn.Req, noSlot: true, start: time.Now()}
		c.pipeMu.Lock()
		c.inflight++
		c.queue = append(c.queue, r)
		c.pipeMu.Unlock()
		return s.prop.propose(txnEntry(txn), r, false)
	}
	// Resuming a session.
	s.sm.mu.RLock()
	sess := s.sm.tree.Session(req.SessionID)
	var valid bool
	if sess != nil {
		valid = subtle.ConstantTimeCompare(sess.Passwd, req.Passwd) == 1
		if valid {
			to = time.Duration(sess.Timeout) * time.Millisecond
		}
	}
	s.sm.mu.RUnlock()
	if !valid {
		s.log.Info("invalid session or password; telling the client its session expired", "session", hexID(req.SessionID))
		c.connectReply(0, 0, make([]byte, 16), 0)
		c.closeAfterFlush()
		return true
	}
	c.sessionID, c.timeout = req.SessionID, to
	c.live = s.sessions.track(req.SessionID, to, c)
	c.handshaken.Store(true)
	c.connectReply(to, req.SessionID, sess.Passwd, 0)
	return true
}

func (c *Conn) connectReply(to time.Duration, id int64, pw []byte, zxid int64) {
	rsp := proto.ConnectResponse{
		ProtocolVersion: 0,
		TimeOut:         int32(to / time.Millisecond),
		SessionID:       id,
		Passwd:          pw,
		ReadOnly:        c.s.readOnly.Load(),
		HasReadOnly:     c.sendRO,
	}
	c.outMu.Lock()
	if !c.outClosed {
		proto.AppendFrame(&c.out, nil, &rsp)
	}
	c.outMu.Unlock()
	c.kick()
}

// handleFrame dispatches one request frame. It returns false when the
// connection must close.
func (c *Conn) handleFrame(frame []byte) bool {
	d := jute.NewAliasingDecoder(frame)
	var h proto.RequestHeader
	h.Decode(d)
	if d.Err() != nil {
		c.s.log.Warn("closing connection: short request header", "session", hexID(c.sessionID))
		return false
	}
	r := &request{c: c, xid: h.Xid, op: h.Type, auth: *c.auth.Load(), start: time.Now()}
	if h.Type != proto.OpAuth && h.Type != proto.OpSasl && c.authMissing() {
		return c.refuseUnauthenticated(r) // enforce.auth (sasl.go)
	}
	info := proto.Op(h.Type)
	if info == nil || info.Kind == proto.KindNone {
		c.s.log.Warn("unknown opcode; closing connection", "op", int32(h.Type), "session", hexID(c.sessionID))
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
		// Reconfiguration is disabled, as ZooKeeper answers by default.
		c.submitRead(r, fixedCode(proto.ErrReconfigDisabled))
		return true
	}
	if h.Type == proto.OpCloseSession && c.localSession {
		// Nothing to log: a local session ends with its connection.
		c.submitRead(r, fixedCode(proto.ErrOk))
		c.closeAfterFlush()
		return true
	}
	if info.Request != nil {
		if info.Kind != proto.KindRead {
			// Writes and syncs outlive the frame (they sit in the
			// log): decode with copies.
			d = jute.NewDecoder(frame[d.Offset():])
		}
		body := info.Request()
		body.Decode(d)
		if d.Err() != nil {
			c.s.log.Info("malformed request", "op", info.Name, "session", hexID(c.sessionID), "err", d.Err())
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
		c.submitWrite(r)
	} else {
		c.submitRead(r, nil)
	}
	return true
}

// release frees an outstanding-request slot.
func (c *Conn) release() {
	select {
	case <-c.slots:
	default:
	}
}

func (c *Conn) handleAuth(xid int32, d *jute.Decoder) bool {
	var ap proto.AuthPacket
	ap.Decode(d)
	if d.Err() != nil {
		c.enqueue(&proto.ReplyHeader{Xid: xid, Err: proto.ErrAuthFailed}, nil)
		c.closeAfterFlush()
		return true
	}
	ids, err := acl.Authenticate(ap.Scheme, ap.Auth, c.s.opts.SuperDigest)
	if err == nil && ap.Scheme == acl.SchemeDigest && c.s.opts.DisableDigestAuth {
		err = errors.New("digest authentication is disabled")
	}
	if err != nil {
		c.s.log.Info("authentication failed", "scheme", ap.Scheme, "session", hexID(c.sessionID), "err", err)
		c.enqueue(&proto.ReplyHeader{Xid: xid, Err: proto.ErrAuthFailed}, nil)
		c.closeAfterFlush()
		return true
	}
	cur := *c.auth.Load()
	next := make([]proto.Id, 0, len(cur)+len(ids))
	next = append(next, cur...)
	for _, id := range ids {
		dup := false
		for _, have := range next {
			if have == id {
				dup = true
				break
			}
		}
		if !dup {
			next = append(next, id)
		}
	}
	c.auth.Store(&next)
	c.enqueue(&proto.ReplyHeader{Xid: xid}, nil)
	return true
}

// submitWrite proposes a write. Reads that arrive before it is applied
// queue behind it.
func (c *Conn) submitWrite(r *request) {
	c.pipeMu.Lock()
	c.inflight++
	c.queue = append(c.queue, r)
	c.pipeMu.Unlock()
	var e *entry
	if r.op == proto.OpSync {
		e = syncEntry() // a barrier: nothing to apply
	} else {
		e = txnEntry(&tree.Txn{Op: r.op, Session: c.sessionID, Time: time.Now().UnixMilli(), Auth: r.auth, Req: r.body})
	}
	ok := c.s.prop.propose(e, r, c.moreBuffered)
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
type readFunc func(*request) (proto.ErrCode, proto.Record)

// submitRead runs a read now if no write of this connection is in flight,
// and otherwise queues it behind the writes.
func (c *Conn) submitRead(r *request, fn readFunc) {
	if fn != nil {
		r.body = fixedReply(fn)
	}
	c.pipeMu.Lock()
	if c.inflight > 0 {
		c.queue = append(c.queue, r)
		c.pipeMu.Unlock()
		return
	}
	c.pipeMu.Unlock()
	c.s.sm.mu.RLock()
	c.execRead(r, true)
	c.s.sm.mu.RUnlock()
}

// fixedCode is a readFunc answering code without a body.
func fixedCode(code proto.ErrCode) readFunc {
	return func(*request) (proto.ErrCode, proto.Record) { return code, nil }
}

// fixedReply wraps a readFunc as a request body so it can sit in the queue.
type fixedReply readFunc

func (fixedReply) Encode(*jute.Encoder) {}
func (fixedReply) Decode(*jute.Decoder) {}

// applied implements waiter: r (a write or sync) was applied.
func (r *request) applied(zxid int64, res *tree.Result, b *applyBatch) {
	r.c.writeApplied(r, zxid, res, b)
}

// lost implements waiter: the proposal was lost (a leader change, or
// dropped by raft), so whether the write happens is unknown, which the
// client learns as a connection loss, as with ZooKeeper.
func (r *request) lost() { r.c.close("write outcome unknown (proposal lost)") }

// writeApplied runs on the apply goroutine, with the tree locked, once the
// write r has been applied: it queues r's reply, then runs the reads that
// were waiting behind r.
func (c *Conn) writeApplied(r *request, zxid int64, res *tree.Result, b *applyBatch) {
	c.holdKicks(b)
	c.pipeMu.Lock()
	defer c.pipeMu.Unlock()
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
	for len(c.queue) > 0 && !c.queue[0].isWrite {
		rd := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.execRead(rd, false)
	}
	if len(c.queue) == 0 {
		c.queue = nil
	}
}

func (c *Conn) replyWrite(r *request, zxid int64, res *tree.Result) {
	if r.op == proto.OpCreateSession {
		cs := r.body.(*tree.CreateSessionReq)
		c.connectReply(time.Duration(cs.Timeout)*time.Millisecond, c.sessionID, cs.Passwd, zxid)
		return
	}
	if !r.noSlot {
		defer c.release()
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

// SessionID implements watch.Watcher.
func (c *Conn) SessionID() int64 { return c.sessionID }

// Deliver implements watch.Watcher: it queues a notification unless the
// connection lacks READ on the node (CVE-2024-23944).
func (c *Conn) Deliver(ev proto.WatcherEvent, nodeACL []proto.ACL) {
	if nodeACL != nil && !acl.Check(nodeACL, proto.PermRead, *c.auth.Load()) {
		return
	}
	c.enqueue(&proto.ReplyHeader{Xid: proto.XidNotification, Zxid: -1}, &ev)
}

func hexID(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }
