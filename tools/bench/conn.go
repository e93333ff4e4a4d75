package bench

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk/wire"
)

// Conn is the load generator's own ZooKeeper session: a thin pipelined
// client over the wire protocol (packages proto and zk/wire), so that the
// benchmark measures the server and not a client library. Any number of goroutines may
// call Do and Go at once: requests are written in xid order by whichever
// caller finds the socket idle (writes of concurrent callers are coalesced
// into one system call), and one reader goroutine matches replies to
// requests in order (a ZooKeeper server answers a session's requests in the
// order it sent them).
//
// Conn does not reconnect: a broken connection fails every pending and
// later request with the same error, which ends the benchmark.
type Conn struct {
	nc      net.Conn
	wc      *wire.Conn // nc's reading side, read by readLoop
	session proto.ConnectResponse
	onEvent func(*Conn, proto.WatcherEvent)

	mu      sync.Mutex // guards the fields below
	enc     jute.Encoder
	spare   []byte
	writing bool
	xid     int32
	pending wire.Pending[*call]
	err     error // sticky: set once the connection is broken or closed

	readDone chan struct{}
}

// call is one request waiting for its reply.
type call struct {
	xid  int32
	resp proto.Record
	code proto.ErrCode
	err  error
	done chan struct{}              // Do: signalled on completion (cap 1)
	cb   func(proto.ErrCode, error) // Go: called from the reader goroutine
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// ErrConnClosed is returned by requests on a Conn after Close.
var ErrConnClosed = errors.New("bench: connection closed")

// dialOptions configure Dial.
type dialOptions struct {
	tls     *tls.Config                     // nil: plaintext
	timeout time.Duration                   // session timeout to ask for
	onEvent func(*Conn, proto.WatcherEvent) // watch notifications (reader goroutine; must not block)
}

// Dial connects to addr and opens a session.
func Dial(addr string, sessionTimeout time.Duration) (*Conn, error) {
	return dial(addr, dialOptions{timeout: sessionTimeout})
}

func dial(addr string, o dialOptions) (*Conn, error) {
	if o.timeout <= 0 {
		o.timeout = 30 * time.Second
	}
	nd := &net.Dialer{Timeout: 10 * time.Second}
	var nc net.Conn
	var err error
	if o.tls != nil {
		nc, err = tls.DialWithDialer(nd, "tcp", addr, o.tls)
	} else {
		nc, err = nd.Dial("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	// Replies are read into one buffer, as large as the largest so far.
	wc := wire.NewConn(nc, wire.Options{MaxFrame: maxReply, MaxConnectFrame: jute.DefaultMaxBuffer, KeepBuffer: maxReply})
	session, err := wc.Handshake(proto.ConnectRequest{TimeOut: int32(o.timeout / time.Millisecond)}, time.Now().Add(15*time.Second))
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, fmt.Errorf("bench: %s: %w (does the server limit connections per client? set maxClientCnxns=0)", addr, err)
		}
		return nil, fmt.Errorf("bench: %s: %w", addr, err)
	}
	c := &Conn{nc: nc, wc: wc, session: session, onEvent: o.onEvent, readDone: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// maxReply bounds a reply's frame (the ConnectResponse's is
// jute.DefaultMaxBuffer).
const maxReply = 16 << 20

// SessionID returns the session id.
func (c *Conn) SessionID() int64 { return c.session.SessionID }

// SessionTimeout returns the negotiated session timeout.
func (c *Conn) SessionTimeout() time.Duration {
	return time.Duration(c.session.TimeOut) * time.Millisecond
}

// Do sends one request and waits for its reply. A reply with a non-zero
// error code returns that code and a nil error; resp (if not nil) is decoded
// only from a successful reply. err is set only when the connection failed.
func (c *Conn) Do(op proto.OpCode, req, resp proto.Record) (proto.ErrCode, error) {
	cl := callPool.Get().(*call)
	cl.resp, cl.cb = resp, nil
	if err := c.send(cl, op, req); err != nil {
		cl.resp = nil
		callPool.Put(cl)
		return 0, err
	}
	<-cl.done
	code, err := cl.code, cl.err
	cl.resp, cl.code, cl.err = nil, 0, nil
	callPool.Put(cl)
	return code, err
}

// Go sends one request without waiting; cb is called with the outcome from
// the connection's reader goroutine (it must not block on this Conn's
// replies). If the request cannot be sent, Go returns the error and cb is
// not called.
func (c *Conn) Go(op proto.OpCode, req, resp proto.Record, cb func(proto.ErrCode, error)) error {
	cl := &call{resp: resp, cb: cb}
	return c.send(cl, op, req)
}

// Ping sends a ping (its reply is discarded).
func (c *Conn) Ping() error { return c.send(nil, proto.OpPing, nil) }

func (c *Conn) send(cl *call, op proto.OpCode, req proto.Record) error {
	return c.enqueue(cl, op, req, true)
}

// Queue is Go without the write: the request leaves with the next Flush, or
// when the reader goroutine has handled every reply it holds. A closed-loop
// worker that queues its next request from cb thus joins the requests of the
// other callbacks of the same read in one write, as a pipelining client
// does, and no goroutine is woken per request.
func (c *Conn) Queue(op proto.OpCode, req, resp proto.Record, cb func(proto.ErrCode, error)) error {
	return c.enqueue(&call{resp: resp, cb: cb}, op, req, false)
}

// Flush writes the queued requests (unless another caller is writing; it
// writes them too).
func (c *Conn) Flush() {
	c.mu.Lock()
	if c.writing || c.enc.Len() == 0 {
		c.mu.Unlock()
		return
	}
	c.flushLocked()
}

func (c *Conn) enqueue(cl *call, op proto.OpCode, req proto.Record, write bool) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	xid, ok := wire.ReservedXid(op)
	if !ok {
		c.xid++
		xid = c.xid
	}
	wire.AppendRequest(&c.enc, xid, op, req)
	if cl != nil {
		cl.xid = xid
		c.pending.Push(cl)
	}
	if !write || c.writing {
		c.mu.Unlock()
		return nil
	}
	c.flushLocked()
	return nil
}

// flushLocked writes the encoder's contents, also what others append
// meanwhile; it is called with c.mu held and returns with it released.
func (c *Conn) flushLocked() {
	c.writing = true
	for c.enc.Len() > 0 && c.err == nil {
		buf := c.enc.Bytes()
		c.enc.Reset(c.spare)
		c.mu.Unlock()
		_, err := c.nc.Write(buf)
		if err != nil {
			c.fail(err)
		}
		c.mu.Lock()
		c.spare = buf[:0]
	}
	c.writing = false
	c.mu.Unlock()
}

// fail breaks the connection: every pending request fails with err.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.nc.Close()
	failed := c.pending.Drain()
	c.enc.Reset(c.enc.Bytes())
	c.mu.Unlock()
	for _, cl := range failed {
		cl.err = err
		c.complete(cl)
	}
}

func (c *Conn) complete(cl *call) {
	if cl.cb != nil {
		cl.cb(cl.code, cl.err)
		return
	}
	cl.done <- struct{}{}
}

func (c *Conn) readLoop() {
	defer close(c.readDone)
	for {
		if !c.wc.Buffered() {
			// The next read may block: requests queued by the
			// callbacks so far leave now, in one write.
			c.Flush()
		}
		h, d, err := c.wc.ReadReply()
		if err != nil {
			c.fail(err)
			return
		}
		switch wire.KindOf(h.Xid) {
		case wire.KindNotification:
			var ev proto.WatcherEvent
			ev.Decode(d)
			if c.onEvent != nil && d.Err() == nil {
				c.onEvent(c, ev)
			}
			continue
		case wire.KindPing:
			continue
		}
		c.mu.Lock()
		cl, _ := c.pending.Pop()
		c.mu.Unlock()
		if cl == nil || cl.xid != h.Xid {
			err := fmt.Errorf("bench: unexpected reply xid %d", h.Xid)
			if cl != nil {
				cl.err = err
				c.complete(cl)
			}
			c.fail(err)
			return
		}
		cl.code = h.Err
		if h.Err == proto.ErrOk && cl.resp != nil && d.Remaining() > 0 {
			cl.resp.Decode(d)
			if d.Err() != nil {
				cl.err = fmt.Errorf("bench: decoding reply to xid %d: %w", h.Xid, d.Err())
			}
		}
		c.complete(cl)
	}
}

// Close closes the session (closeSession, waiting at most 10 s for the
// reply) and the connection.
func (c *Conn) Close() error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(proto.OpCloseSession, nil, nil)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		err = errors.New("bench: closeSession timed out")
	}
	c.abort()
	return err
}

// CloseAsync sends closeSession and closes the connection when the reply
// arrives; cb (if not nil) is called then.
func (c *Conn) CloseAsync(cb func(error)) {
	err := c.Go(proto.OpCloseSession, nil, nil, func(_ proto.ErrCode, err error) {
		go c.abort()
		if cb != nil {
			cb(err)
		}
	})
	if err != nil {
		c.abort()
		if cb != nil {
			cb(err)
		}
	}
}

// abort closes the TCP connection without closing the session.
func (c *Conn) abort() {
	c.fail(ErrConnClosed)
	<-c.readDone
}
