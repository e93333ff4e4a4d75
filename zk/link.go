package zk

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk/wire"
)

// request is one request on the wire and its outcome.
type request struct {
	xid  int32
	op   proto.OpCode
	body proto.Record // nil for none
	resp proto.Record // decoded from a successful reply; nil for none
	// onReply, if set, runs in the reader goroutine when the reply arrives
	// (before any later frame is handled), with the reply's code. Watch
	// registration happens here so that no notification can overtake it.
	onReply func(code proto.ErrCode)

	code      proto.ErrCode // the reply's error code
	zxid      int64
	err       error // transport failure: the request has no reply
	done      chan struct{}
	abandoned atomic.Bool // the caller stopped waiting (ctx)
}

func (r *request) complete() { close(r.done) }

func (r *request) fail(err error) {
	r.err = err
	close(r.done)
}

// link is one TCP connection of a session: a reader goroutine that matches
// replies to requests in order and a writer goroutine that sends queued
// requests in batches and pings when idle.
type link struct {
	// Set by newLink, then read-only.
	c            *Conn
	nc           net.Conn
	wc           *wire.Conn // nc's reading side, past the handshake
	addr         string
	readTimeout  time.Duration
	pingInterval time.Duration

	// mu guards out, spare, pending, auths and err. A request moves from
	// out to pending (or auths) under mu, in the writer, before it is
	// written, so that the reader finds it when the reply comes; fail sets
	// err and drains all three under mu, so that send refuses new requests
	// from then on and no request is failed twice or left behind. mu is
	// never held across socket I/O, and no other lock is taken inside it.
	mu      sync.Mutex             // guards out, spare, pending, auths, err
	out     []*request             // queued by send, not yet taken by the writer
	spare   []*request             // the writer's last batch slice, reused for out
	pending wire.Pending[*request] // written (or being written), awaiting replies in order
	auths   wire.Pending[*request] // auth packets awaiting replies (the server answers them out of band)
	err     error                  // non-nil once the link is dead

	kick chan struct{}  // wakes the writer (buffered 1; sends never block)
	dead chan struct{}  // closed by fail, once (by the caller that set err)
	wg   sync.WaitGroup // the reader and writer goroutines
}

func newLink(c *Conn, wc *wire.Conn, addr string, timeout time.Duration) *link {
	rt := timeout * 2 / 3
	return &link{
		c:            c,
		nc:           wc.NetConn(),
		wc:           wc,
		addr:         addr,
		readTimeout:  rt,
		pingInterval: rt / 2,
		kick:         make(chan struct{}, 1),
		dead:         make(chan struct{}),
	}
}

func (l *link) start() {
	l.wg.Add(2)
	go l.readLoop()
	go l.writeLoop()
}

// send queues rs for writing, in order and back to back. It fails
// (without touching them) if the link is dead.
func (l *link) send(rs ...*request) error {
	l.mu.Lock()
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	l.out = append(l.out, rs...)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return nil
}

// fail kills the link: every request queued or awaiting a reply fails with
// err, the socket is closed and the Conn is told.
func (l *link) fail(err error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	out := l.out
	l.out = nil
	pend := l.pending.Drain()
	auths := l.auths.Drain()
	l.mu.Unlock()
	l.nc.Close()
	close(l.dead)
	l.c.linkDown(l)
	for _, r := range pend {
		r.fail(err)
	}
	for _, r := range auths {
		r.fail(err)
	}
	for _, r := range out {
		r.fail(err)
	}
}

// connLoss builds the error given to requests when the connection breaks.
func connLoss(cause error) error {
	e := &Error{Code: proto.ErrConnectionLoss, Err: ErrConnectionLoss}
	if cause != nil {
		e.Detail = cause.Error()
		e.Cause = cause
	}
	return e
}

var errPingTimeout = errors.New("no reply from server within the read timeout")

func (l *link) writeLoop() {
	defer l.wg.Done()
	var enc jute.Encoder
	timer := time.NewTimer(l.pingInterval)
	defer timer.Stop()
	for {
		ping := false
		select {
		case <-l.kick:
			// The goroutines woken by the same batch of replies are
			// likely about to queue requests too: let them, so that
			// one write carries them all.
			runtime.Gosched()
		case <-timer.C:
			ping = true
		case <-l.dead:
			return
		}
		l.mu.Lock()
		if l.err != nil {
			l.mu.Unlock()
			return
		}
		if len(l.out) == 0 && !ping {
			l.mu.Unlock()
			continue // a kick whose requests an earlier batch took
		}
		batch := l.out
		l.out = l.spare[:0]
		l.spare = nil
		for _, r := range batch {
			switch r.xid {
			case proto.XidAuth:
				l.auths.Push(r)
			default:
				l.pending.Push(r)
			}
		}
		l.mu.Unlock()
		enc.Reset(enc.Bytes())
		for _, r := range batch {
			wire.AppendRequest(&enc, r.xid, r.op, r.body)
		}
		if len(batch) == 0 {
			wire.AppendRequest(&enc, proto.XidPing, proto.OpPing, nil)
		}
		clear(batch)
		l.mu.Lock()
		l.spare = batch[:0]
		l.mu.Unlock()
		l.nc.SetWriteDeadline(time.Now().Add(l.readTimeout))
		_, err := l.nc.Write(enc.Bytes())
		if cap(enc.Bytes()) > 1<<20 {
			enc = jute.Encoder{} // do not keep a huge buffer
		}
		if err != nil {
			l.fail(connLoss(err))
			return
		}
		timer.Reset(l.pingInterval)
	}
}

func (l *link) readLoop() {
	defer l.wg.Done()
	var ev proto.WatcherEvent
	for {
		if !l.wc.Buffered() {
			// Only a read that may wait on the socket needs the
			// deadline; setting it costs a clock read and a timer
			// update, per frame otherwise.
			l.nc.SetReadDeadline(time.Now().Add(l.readTimeout))
		}
		rh, d, err := l.wc.ReadReply()
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, wire.ErrShortHeader):
				err = fmt.Errorf("%w: short reply header", ErrProtocol)
			case errors.As(err, &ne) && ne.Timeout():
				err = errPingTimeout
			}
			l.fail(connLoss(err))
			return
		}
		kind := wire.KindOf(rh.Xid)
		switch kind {
		case wire.KindNotification:
			ev.Decode(d)
			if d.Err() != nil {
				l.fail(connLoss(fmt.Errorf("%w: bad notification: %v", ErrProtocol, d.Err())))
				return
			}
			if ev.Type != proto.EventNone {
				if p, ok := l.c.clientPath(ev.Path); ok {
					l.c.watches.dispatch(p, ev.Type, rh.Zxid)
				}
				if l.c.chroot != "" && ev.Path == ConfigNode {
					l.c.watches.dispatchConfig(ev.Type, rh.Zxid)
				}
			}
			continue
		case wire.KindPing:
			continue
		}
		l.mu.Lock()
		var r *request
		if kind == wire.KindAuth {
			r, _ = l.auths.Pop()
		} else {
			r, _ = l.pending.Pop()
		}
		l.mu.Unlock()
		if r == nil {
			l.fail(connLoss(fmt.Errorf("%w: reply xid %d without a request", ErrProtocol, rh.Xid)))
			return
		}
		if r.xid != rh.Xid {
			err := connLoss(fmt.Errorf("%w: reply xid %d, expected %d", ErrProtocol, rh.Xid, r.xid))
			l.fail(err)
			r.fail(err)
			return
		}
		if rh.Zxid > 0 {
			l.c.noteZxid(rh.Zxid)
		}
		r.code, r.zxid = rh.Err, rh.Zxid
		if rh.Err == proto.ErrOk && r.resp != nil {
			r.resp.Decode(d)
			if d.Err() != nil {
				err := connLoss(fmt.Errorf("%w: bad %v reply: %v", ErrProtocol, r.op, d.Err()))
				l.fail(err)
				r.fail(err)
				return
			}
		}
		if r.onReply != nil && !r.abandoned.Load() {
			r.onReply(rh.Err)
		}
		r.complete()
	}
}
