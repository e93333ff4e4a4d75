package clientport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/report"
	"github.com/zkgo/zkgo/server/session"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/server/stats"
	"github.com/zkgo/zkgo/tree"
)

// Bounds of a connection. The output bounds are Options.MaxQueuedBytes
// (backpressure) and MaxQueuedBytesHard (close).
const (
	// maxConnectFrame bounds the first frame: a ConnectRequest is 45
	// bytes with ZooKeeper's 16-byte password.
	maxConnectFrame = 256
	// handshakeReadBuffer and readBuffer size the connection's input
	// buffer before and after the handshake (a connection that never
	// completes its handshake costs little).
	handshakeReadBuffer = 512
	smallReadBuffer     = 4 << 10 // until the client pipelines (connpark.go)
	readBuffer          = 64 << 10
	// closeGrace is how long a connection that is to close after its
	// last replies (closeAfterFlush: the session ended, a fatal request)
	// may take to flush them before it is closed anyway.
	closeGrace = 2 * time.Second
	// maxSpare bounds the output buffer a connection keeps between writes.
	maxSpare = 256 << 10
)

// Conn is one client connection.
type Conn struct {
	s *Port
	// raw is the TCP connection: deadlines, Close, the address. nc is
	// what requests are read from and replies written to: raw, or the
	// TLS connection over it. The reader sets nc (startTLS) before it
	// reads the handshake, so before anything can be written.
	raw    net.Conn
	nc     net.Conn
	secure bool // accepted on the TLS port
	// plainUnified: plaintext on the unified port; nc is raw behind the
	// first byte the TLS sniffing read (given back during the
	// handshake), so it may park like raw (set by startTLS).
	plainUnified bool
	// mtls: the client presented a verified certificate (set by the
	// reader's startTLS before the handshake completes; read by others
	// only once handshaken is set).
	mtls     bool
	remoteIP string
	created  time.Time

	// Set by the handshake before any request is read; read-only after.
	sessionID  int64
	timeout    time.Duration
	sendRO     bool // the client sent the readOnly byte; answer with one
	live       *session.Live
	handshaken atomic.Bool
	// localSession: the session was made by this member in read-only
	// mode and exists nowhere else (ZooKeeper's local sessions); it ends
	// with the connection. Set by the handshake, read by the reader.
	localSession bool

	// moved: the session was resumed on another member (SessionMoved).
	moved atomic.Bool

	// claim is the log position of this connection's claim on its
	// session (statemachine/entry.go): the createSession's zxid, or the index of the
	// move that resumed the session here; 0: none (a standalone server's
	// resumed session, a local session). Its writes carry it
	// (tree.Txn.Claim). Set once, by the apply goroutine (replyWrite),
	// before claimReady is closed.
	claim atomic.Int64
	// claimReady, if set (by the handshake, before the proposal that
	// makes the claim), is closed once claim is set: the reader holds
	// writes pipelined behind the handshake until then, so that they
	// carry the claim. claimKnown: the reader saw it closed (reader
	// goroutine only).
	claimReady chan struct{}
	claimKnown bool
	// peerGone reports, during the handshake (reader goroutine), whether
	// the client has already closed its end after its connect request.
	peerGone func() bool

	auth atomic.Pointer[[]proto.Id] // copy-on-write authenticated ids
	// certIDs are the identities of the verified client certificate (nil
	// without one): set by startTLS, read by addauth x509 (reader
	// goroutine only).
	certIDs []proto.Id
	saslEx  *saslExchange // SASL state (sasl.go); reader goroutine only

	// wmu serialises taking bytes out of out and writing them to nc, so
	// batches reach the socket in order whether the writer goroutine or
	// the reader (flushing its own read replies inline) writes them; it
	// also guards spareIn.
	wmu       sync.Mutex
	outMu     sync.Mutex // guards out, outSince, outClosed, closeAfter, holdKick, kickHeld, readerParked
	out       jute.Encoder
	outSince  time.Time // when out last went from empty to not (stats.StageReply)
	outClosed bool
	flushKick chan struct{}
	// drained is signalled by the writer each time it has written what it
	// took; a reader waiting on backpressure wakes on it.
	drained chan struct{}
	// writing is the size of the batch the writer goroutine (or the
	// reader's flushInline) took and is writing (it counts against the
	// backpressure bound as much as out).
	writing atomic.Int64
	// closeAfter makes the writer close the connection once the queued
	// bytes are written (after a closeSession reply or a fatal error).
	closeAfter bool
	// holdKick: the apply goroutine is queuing replies of one batch of
	// writes here; it wakes the writer once, after the batch, so that
	// they leave in one write (kickHeld: a wake-up is owed).
	holdKick, kickHeld bool

	pipeMu   sync.Mutex // guards inflight, queue, drainAt
	inflight int        // writes proposed and not yet applied
	queue    []*request // in order: the in-flight writes and reads waiting behind them
	// drainAt, when not nil, is the tree of the batch being applied: the
	// reads queued behind this connection's last write in it run at the
	// batch's end (drainLater), seeing all of it (pipeline.go).
	drainAt *tree.Tree

	slots chan struct{} // outstanding-request semaphore

	// slotMu guards held and slotsFreed. A request holds a slot of the
	// connection (slots) and one of the server (Server.inflight) from
	// acquireSlot until release; held counts them. A request whose
	// connection closes may never be answered (its proposal was lost, or
	// it waits behind one that was), so close hands the server's slots
	// back for all of them at once (freeSlots), and a later release of
	// one of them does nothing. slotMu is taken alone.
	slotMu     sync.Mutex // guards held, slotsFreed
	held       int
	slotsFreed bool

	closeOnce sync.Once
	closed    chan struct{}

	// Reader goroutine only (a parked connection has none; connpark.go):
	// br is the input buffer (nil while parked); leftover holds what the
	// handshake's small buffer read past the connect request; rdDeadline
	// is the idle deadline set (zero: none); lastWait is when the reader
	// last began waiting after a request other than a ping, and lastPing
	// whether the last request was one (parkAfter); parkFailed: do not
	// try parking again.
	br         *bufio.Reader
	leftover   *bytes.Reader
	rdDeadline time.Time
	lastWait   time.Time
	lastPing   bool
	parkFailed bool
	// parkID, parkRegistered: the connection's id in the idle poller and
	// whether its socket is in the poller's set; guarded by the poller's
	// mu.
	parkID         uint64
	parkRegistered bool
	// writerOn: a writer goroutine runs (it is started on demand by kick
	// and ends when the reader is parked and nothing is queued).
	// readerParked is guarded by outMu.
	writerOn     atomic.Bool
	readerParked bool

	inlinePending bool // reader goroutine only: replies appended, not flushed
	// Reader goroutine only: more whole requests are buffered (writes are
	// proposed held, see proposer.propose), and some are held.
	moreBuffered, holding bool
	spareIn               []byte // guarded by wmu: buffer reused by flushInline

	// statistics for cons/stat
	packetsIn, packetsOut atomic.Int64
	lastZxid              atomic.Int64
	lastXid               atomic.Int32
	lastResp              atomic.Int64 // unix ms of the last reply
	lastOp                atomic.Int64 // 1<<32 | the opcode of the last reply; 0: none yet

	lat stats.Latency
}

func (s *Port) newConn(nc net.Conn, secure bool) {
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		host = nc.RemoteAddr().String()
	}
	c := &Conn{
		s:         s,
		raw:       nc,
		nc:        nc,
		secure:    secure,
		remoteIP:  host,
		created:   time.Now(),
		flushKick: make(chan struct{}, 1),
		drained:   make(chan struct{}, 1),
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
	if max := s.opts.MaxConnections; max > 0 && len(s.conns) >= max {
		s.connsMu.Unlock()
		s.stats.RejectedMaxCnxns.Add(1)
		s.log.Warn("too many connections (maxCnxns); closing", "ip", host, "max", max)
		nc.Close()
		return
	}
	if max := s.opts.MaxClientCnxns; max > 0 && s.perIP[host] >= max {
		s.connsMu.Unlock()
		s.stats.RejectedPerIP.Add(1)
		s.log.Warn("too many connections from client; closing", "ip", host, "max", max)
		nc.Close()
		return
	}
	s.perIP[host]++
	s.conns[c] = struct{}{}
	s.connsMu.Unlock()

	// The writer starts with the first output (kick).
	s.wg.Add(1)
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
		c.raw.Close()
		c.freeSlots()
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
		if s.idle != nil {
			s.idle.forget(c)
		}
		s.watches.RemoveWatcher(c)
		if c.handshaken.Load() {
			if c.localSession {
				s.sessions.Forget(c.sessionID)
			} else {
				s.sessions.Detach(c.sessionID, c)
			}
		}
		s.log.Debug("connection closed", "remote", c.raw.RemoteAddr().String(), "session", proto.SessionIDHex(c.sessionID), "reason", reason)
	})
}

// closeAfterFlush closes the connection once everything queued so far has
// been written, or after closeGrace if the client does not take it.
func (c *Conn) closeAfterFlush() {
	c.outMu.Lock()
	first := !c.closeAfter
	c.closeAfter = true
	c.outMu.Unlock()
	c.kick()
	if first {
		time.AfterFunc(closeGrace, func() { c.close("final replies not taken in time") })
	}
}

// setWriteDeadline bounds the next write: a client that takes no bytes
// for a session timeout (the handshake timeout before it has a session)
// is closed, so a writer never blocks forever.
func (c *Conn) setWriteDeadline() {
	d := c.s.opts.HandshakeTimeout
	if c.handshaken.Load() {
		d = c.timeout
	}
	c.raw.SetWriteDeadline(time.Now().Add(d))
}

// waitBackpressure blocks the reader while the connection's unsent output
// exceeds MaxQueuedBytes: no further request is read until the client has
// taken enough. It returns false if the connection closed meanwhile.
func (c *Conn) waitBackpressure() bool {
	throttled := false
	defer func() {
		if throttled {
			c.s.stats.Throttled.Add(-1)
		}
	}()
	for {
		if c.QueuedBytes() <= c.s.opts.MaxQueuedBytes {
			return true
		}
		if !throttled {
			throttled = true
			c.s.stats.Throttled.Add(1)
			c.s.stats.ThrottleEvents.Add(1)
		}
		// What is held must go to raft, and the replies the reader
		// queued itself must go to the writer, or nothing drains.
		c.releaseHeld()
		c.inlinePending = false
		c.kick()
		select {
		case <-c.drained:
		case <-c.closed:
			return false
		}
	}
}

// kick wakes the writer, starting one if none runs.
func (c *Conn) kick() {
	c.signalWriter()
	if c.writerOn.Load() {
		return
	}
	c.outMu.Lock()
	start := !c.outClosed && !c.writerOn.Load()
	if start {
		c.writerOn.Store(true)
	}
	c.outMu.Unlock()
	if start && !c.s.goConn(c.writeLoop) {
		c.close("server shutting down")
	}
}

// signalWriter wakes a running writer.
func (c *Conn) signalWriter() {
	select {
	case c.flushKick <- struct{}{}:
	default:
	}
}

// Close implements session.Conn: it closes the connection now, for
// reason (the session moved to another connection here).
func (c *Conn) Close(reason string) { c.close(reason) }

// SessionClosed implements session.Conn: the apply loop calls it when
// the connection's session has been closed or expired.
func (c *Conn) SessionClosed() { c.closeAfterFlush() }

// SessionMoved implements session.Conn: the apply loop calls it when the
// client resumed the connection's session on another member: requests
// that still arrive here are answered SessionMoved, and the connection
// closes.
func (c *Conn) SessionMoved() {
	c.moved.Store(true)
	c.closeAfterFlush()
}

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
func (c *Conn) holdKicks(b *statemachine.Batch) {
	c.outMu.Lock()
	held := c.holdKick
	c.holdKick = true
	c.outMu.Unlock()
	if !held {
		b.Join(c)
	}
}

// endBatch implements batchWaker: wake the writer if replies were queued
// while held.
func (c *Conn) EndBatch() {
	c.pipeMu.Lock()
	later := c.drainAt != nil
	c.pipeMu.Unlock()
	if later {
		return // drainLater wakes it, after the reads
	}
	c.wakeHeld()
}

// drainLater runs, after every connection's EndBatch (the other
// connections' replies and notifications are on their way), the reads
// that waited behind this connection's last write of the batch
// (writeApplied), then wakes the writer for all of its replies.
func (c *Conn) drainLater() {
	c.pipeMu.Lock()
	if t := c.drainAt; t != nil {
		c.drainAt = nil
		c.drainQueueLocked(t)
	}
	c.pipeMu.Unlock()
	c.wakeHeld()
}

// wakeHeld ends the batch's hold on the writer: it wakes it if replies
// were queued meanwhile.
func (c *Conn) wakeHeld() {
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
	before := c.out.Len()
	if before == 0 {
		c.outSince = time.Now()
	}
	proto.AppendReply(&c.out, hdr, body)
	size := int64(c.out.Len() - before) // the frame, length prefix included
	over := c.out.Len() > c.s.opts.MaxQueuedBytesHard
	if c.holdKick {
		c.kickHeld, held = true, true
	}
	c.outMu.Unlock()
	c.packetsOut.Add(1)
	st := c.s.stats
	st.PacketsSent.Add(1)
	if hdr.Xid == proto.XidNotification {
		st.WatchNotifications.Add(1)
		st.WatchBytes.Add(size)
	} else {
		st.ResponseBytes.Add(size)
		st.Response.Add(size - proto.FrameHeaderSize)
	}
	if over {
		c.s.log.Warn("client is not reading its replies; closing connection", "session", proto.SessionIDHex(c.sessionID))
		c.close("outgoing queue over limit")
		return false, false
	}
	return true, held
}

// flushInline writes the queued bytes from the reader goroutine, saving a
// hand-off to the writer for the common read-reply case. Output over
// MaxQueuedBytes goes to the writer instead, and the reader on to
// waitBackpressure: a reader never blocks writing more than the bound to
// a client that does not read (it is then counted as throttled).
func (c *Conn) flushInline() {
	if !c.wmu.TryLock() {
		// The writer is writing (perhaps blocked on a client that does
		// not read): it takes these bytes next. The reader goes on, and
		// backpressure (waitBackpressure) bounds what it queues.
		c.kick()
		return
	}
	defer c.wmu.Unlock()
	c.outMu.Lock()
	if c.closeAfter || c.outClosed || c.out.Len() > c.s.opts.MaxQueuedBytes {
		c.outMu.Unlock()
		c.kick()
		return
	}
	buf := c.out.Bytes()
	since := c.outSince
	c.outSince = time.Time{}
	c.out.Reset(c.spareIn)
	c.writing.Store(int64(len(buf)))
	c.outMu.Unlock()
	if len(buf) > 0 {
		c.setWriteDeadline()
		_, err := c.nc.Write(buf)
		c.writing.Store(0)
		if err != nil {
			c.close("write: " + err.Error())
			return
		}
		if !since.IsZero() {
			c.s.noteStage(stats.StageReply, time.Since(since))
		}
	}
	if cap(buf) <= maxSpare {
		c.spareIn = buf[:0]
	} else {
		c.spareIn = nil
		jute.PutBig(buf) // written: nothing refers to it any more
	}
}

// writeLoop writes queued frames in batches: whatever accumulated while the
// previous write was in progress goes out in one write call. kick starts
// it; it ends when the connection closes, or when the reader is parked and
// nothing is queued.
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
		since := c.outSince
		c.outSince = time.Time{}
		closeAfter := c.closeAfter
		c.out.Reset(spare)
		c.writing.Store(int64(len(buf)))
		c.outMu.Unlock()
		if len(buf) > 0 {
			c.setWriteDeadline()
			if _, err := c.nc.Write(buf); err != nil {
				c.wmu.Unlock()
				c.close("write: " + err.Error())
				return
			}
			if !since.IsZero() {
				c.s.noteStage(stats.StageReply, time.Since(since))
			}
		}
		c.writing.Store(0)
		c.wmu.Unlock()
		select {
		case c.drained <- struct{}{}:
		default:
		}
		if cap(buf) <= maxSpare {
			spare = buf[:0]
		} else {
			spare = nil
			jute.PutBig(buf) // written: nothing refers to it any more
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
		// A parked connection keeps no writer once nothing is queued.
		c.outMu.Lock()
		if c.readerParked && c.out.Len() == 0 && !c.closeAfter {
			c.writerOn.Store(false)
			c.out.Reset(nil)
			c.outMu.Unlock()
			return
		}
		c.outMu.Unlock()
	}
}

func (c *Conn) readLoop() {
	if !c.readHandshake() {
		c.endRead()
		return
	}
	c.serve()
}

// readHandshake reads and answers the connect request (or a four-letter
// word) with a small buffer and a deadline, then sets up the reader's
// full-size buffer. It returns false if the connection is done.
func (c *Conn) readHandshake() bool {
	// Until its handshake is complete a connection has a deadline and a
	// small input buffer.
	c.raw.SetReadDeadline(time.Now().Add(c.s.opts.HandshakeTimeout))
	if !c.startTLS() {
		return false
	}
	br := bufio.NewReaderSize(c.nc, handshakeReadBuffer)
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		c.noteHandshakeTimeout(err)
		return false
	}
	if cmd := string(hdr[:]); report.IsFourLetterWord(cmd) {
		if text, ok := c.s.word(cmd, br); ok {
			c.raw.SetWriteDeadline(time.Now().Add(10 * time.Second))
			c.nc.Write([]byte(text))
		}
		return false
	}
	n, err := proto.FrameLen(hdr, maxConnectFrame)
	if err != nil {
		c.s.log.Warn("closing connection: bad connect frame", "remote", c.raw.RemoteAddr().String(), "err", err)
		return false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		c.noteHandshakeTimeout(err)
		return false
	}
	c.s.stats.ConnectRequests.Add(1)
	c.s.stats.BytesReceived.Add(int64(n))
	c.peerGone = func() bool { return peerGone(c.raw, br, c.s.opts.HandshakeTimeout) }
	ok := c.handshake(body)
	c.peerGone = nil
	if !ok {
		return false
	}
	c.raw.SetReadDeadline(time.Time{})
	// The full-size buffer, starting with what the small one holds.
	var src io.Reader = c.nc
	if k := br.Buffered(); k > 0 {
		rest, _ := br.Peek(k)
		c.leftover = bytes.NewReader(bytes.Clone(rest))
		src = io.MultiReader(c.leftover, c.nc)
	}
	c.br = getReader(src)
	return true
}

// serve reads and handles requests until the connection fails or parks
// (connpark.go): on the goroutine that made the handshake, or on one the
// idle poller started.
func (c *Conn) serve() {
	if c.serveFrames() {
		return // parked: another goroutine may own the reader state now
	}
	c.releaseHeld()
	if c.br != nil {
		putReader(c.br)
		c.br = nil
	}
	c.endRead()
}

// serveFrames is serve's loop; it returns true if the connection parked.
func (c *Conn) serveFrames() (parked bool) {
	var hdr [4]byte
	for {
		if !c.waitBackpressure() {
			return false
		}
		c.growReader()
		br := c.br
		if br.Buffered() == 0 && c.canPark() {
			switch c.waitRequest() {
			case waitParked:
				return true
			case waitErr:
				return false
			}
			br = c.br // a failed park takes a fresh buffer
		} else if !c.rdDeadline.IsZero() && !wholeFrameBuffered(br) {
			// The idle deadline must not cut a frame short.
			c.clearReadDeadline()
		}
		frame, err := proto.ReadFrame(br, &hdr, c.s.opts.MaxBuffer)
		if err != nil {
			if errors.Is(err, proto.ErrFrameTooLarge) || errors.Is(err, proto.ErrNegativeFrameLength) {
				c.s.log.Warn("closing connection: frame exceeds jute.maxbuffer", "session", proto.SessionIDHex(c.sessionID), "err", err)
			}
			return false
		}
		if c.s.draining.Load() {
			// Shutdown began: requests read from now on are not
			// served (the client sees the connection close and
			// resends elsewhere or after the restart); what was
			// already proposed is handed to raft and finishes.
			c.releaseHeld()
			<-c.closed
			return false
		}
		if !c.acquireSlot() {
			return false
		}
		// The writes of requests already buffered behind this one are
		// handed to raft together, after the last of them.
		c.moreBuffered = wholeFrameBuffered(br)
		c.packetsIn.Add(1)
		c.s.stats.PacketsReceived.Add(1)
		c.s.stats.BytesReceived.Add(int64(len(frame)))
		if c.live != nil {
			c.live.Touch()
		}
		if !c.handleFrame(frame) {
			return false
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

// noteHandshakeTimeout counts a connection whose handshake deadline
// expired before its connect request (or four-letter word) was read
// (sessionless_connections_expired).
func (c *Conn) noteHandshakeTimeout(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.s.stats.SessionlessExpired.Add(1)
	}
}

// releaseHeld hands the writes held by proposeHeld to raft.
func (c *Conn) releaseHeld() {
	if c.holding {
		c.holding = false
		c.s.prop.Release()
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
// written (or closeAfterFlush's timer, after closeGrace); otherwise close
// now.
func (c *Conn) endRead() {
	c.outMu.Lock()
	flushing := c.closeAfter
	c.outMu.Unlock()
	if !flushing {
		c.close("read loop ended")
	}
}

// SessionID implements watch.Watcher.
func (c *Conn) SessionID() int64 { return c.sessionID }

// Deliver implements watch.Watcher: it queues a notification unless the
// connection lacks READ on the node (CVE-2024-23944). The reply header
// carries zxid, the change's zxid, as ZooKeeper 3.9 sends it
// (ZOOKEEPER-4655); clients before 3.9 ignore a notification's zxid.
func (c *Conn) Deliver(ev proto.WatcherEvent, zxid int64, nodeACL []proto.ACL) {
	if nodeACL != nil && !acl.Check(nodeACL, proto.PermRead, *c.auth.Load()) {
		return
	}
	c.enqueue(&proto.ReplyHeader{Xid: proto.XidNotification, Zxid: zxid}, &ev)
}

// DeliverHeld implements watch.HeldWatcher: Deliver without waking the
// writer. It reports whether Wake is owed (not when the connection's
// kicks are held for a batch already: its EndBatch wakes it).
func (c *Conn) DeliverHeld(ev proto.WatcherEvent, zxid int64, nodeACL []proto.ACL) bool {
	if nodeACL != nil && !acl.Check(nodeACL, proto.PermRead, *c.auth.Load()) {
		return false
	}
	ok, held := c.appendFrame(&proto.ReplyHeader{Xid: proto.XidNotification, Zxid: zxid}, &ev)
	return ok && !held
}

// Wake implements watch.HeldWatcher: it wakes the writer for what
// DeliverHeld queued.
func (c *Conn) Wake() { c.kick() }

// QueuedBytes returns the size of the connection's unsent output: what is
// queued and what the writer is writing.
func (c *Conn) QueuedBytes() int {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	return c.out.Len() + int(c.writing.Load())
}

// peerGone reports whether the client behind br has closed the connection
// after what br holds: nothing buffered, and a read that waits at most a
// millisecond finds the end of the stream. A connect request that sat in
// the accept queue of a paused member while its client gave up and went
// elsewhere is such a request: served, it would move the session away
// from the connection the client really uses. It then sets the handshake
// deadline again.
func peerGone(raw net.Conn, br *bufio.Reader, handshake time.Duration) bool {
	if br.Buffered() > 0 {
		return false
	}
	raw.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := br.Peek(1)
	raw.SetReadDeadline(time.Now().Add(handshake))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}
