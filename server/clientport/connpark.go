package clientport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// Parking idle connections.
//
// A served connection has a reader goroutine (blocked reading the next
// request), a writer goroutine (blocked until there is output) and a
// 64 KiB input buffer. With thousands of sessions that mostly ping, that
// is most of the server's memory. So a plain-TCP connection on Linux that
// has had no request for Options.IdleAfter parks: its reader returns its
// input buffer to a pool and ends, the writer ends once nothing is queued,
// and the idle poller (idlepoll_linux.go) watches the socket; the first
// byte that arrives (or the client closing) starts a reader again. Output
// for a parked connection (a watch notification, the session expiring)
// starts a writer, which ends again once it has written it.
//
// A connection over TLS does not park: its TLS layer may hold decrypted
// bytes the socket no longer shows.

// Input buffers come from two pools: a connection starts reading (after
// its handshake, and each time it resumes) with a small one and moves to a
// large one when requests arrive faster than it handles them (growReader).
var (
	smallReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, smallReadBuffer) }}
	largeReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBuffer) }}
)

// getReader returns a small input buffer reading from src.
func getReader(src io.Reader) *bufio.Reader {
	br := smallReaders.Get().(*bufio.Reader)
	br.Reset(src)
	return br
}

// putReader returns br to its pool.
func putReader(br *bufio.Reader) {
	br.Reset(nil)
	if br.Size() == smallReadBuffer {
		smallReaders.Put(br)
	} else {
		largeReaders.Put(br)
	}
}

// growReader moves the reader (at a frame boundary) to a large buffer once
// the small one is half full: the client pipelines. What the small buffer
// holds is read first.
func (c *Conn) growReader() {
	br := c.br
	if br.Size() != smallReadBuffer || br.Buffered() < smallReadBuffer/2 {
		return
	}
	rest, _ := br.Peek(br.Buffered())
	rest = bytes.Clone(rest)
	if c.leftover != nil && c.leftover.Len() > 0 {
		// (What the handshake's buffer read, not read yet.)
		more, _ := io.ReadAll(c.leftover)
		rest = append(rest, more...)
	}
	c.leftover = bytes.NewReader(rest)
	large := largeReaders.Get().(*bufio.Reader)
	large.Reset(io.MultiReader(c.leftover, c.nc))
	putReader(br)
	c.br = large
}

// waitResult is what waitRequest saw.
type waitResult int

const (
	waitData   waitResult = iota // a request (or part of one) is buffered
	waitParked                   // the connection parked: the reader must end
	waitErr                      // the connection failed or closed
)

// canPark reports whether the reader may park this connection (reader
// goroutine, after the handshake).
func (c *Conn) canPark() bool {
	if c.s.idle == nil || c.s.opts.IdleAfter <= 0 || c.nc != c.raw && !c.plainUnified || c.parkFailed {
		return false
	}
	if c.leftover != nil && c.leftover.Len() > 0 {
		return false
	}
	_, ok := c.raw.(syscall.Conn)
	return ok
}

// activeParkFactor: a connection whose last two requests other than pings
// came less than activeParkFactor × IdleAfter apart, the last of them just
// answered, waits that long, not IdleAfter, before it parks. Parking costs
// a registration with the idle poller, and waking a new reader goroutine
// and an input buffer on the next byte; for a client that sends a request
// every few hundred milliseconds (watchers that set their watch again on
// each notification, a cache, a lock waiter) that cost comes on every
// request and is worth more CPU than the memory it saves. After a ping a
// connection parks after IdleAfter, whatever its session timeout: idle
// sessions are what parking is for.
const activeParkFactor = 4

// parkAfter returns how long the reader waits for a request before it
// parks the connection: IdleAfter, or activeParkFactor × IdleAfter when the
// request just answered came less than that after the one before it
// (pings aside).
func parkAfter(idle, sinceLastWait time.Duration) time.Duration {
	if active := activeParkFactor * idle; sinceLastWait < active {
		return active
	}
	return idle
}

// waitRequest waits, with nothing buffered, for the next request to start
// arriving. A wait longer than parkAfter parks the connection.
func (c *Conn) waitRequest() waitResult {
	br := c.br
	now := time.Now()
	idle := c.s.opts.IdleAfter
	if !c.lastPing {
		idle = parkAfter(idle, now.Sub(c.lastWait))
		c.lastWait = now
	}
	// The deadline is moved only when it is more than half used (or
	// further than the wait), so that a busy connection does not reset
	// its timer on every request.
	if left := c.rdDeadline.Sub(now); c.rdDeadline.IsZero() || left < idle/2 || left > idle {
		c.rdDeadline = now.Add(idle)
		c.raw.SetReadDeadline(c.rdDeadline)
	}
	_, err := br.Peek(1)
	if err == nil {
		if !wholeFrameBuffered(br) {
			// The rest of the frame is read without a deadline.
			c.clearReadDeadline()
		}
		return waitData
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) || br.Buffered() > 0 {
		return waitErr
	}
	c.clearReadDeadline()
	if c.park() {
		return waitParked
	}
	return waitData // go on reading without parking (canPark is now false)
}

func (c *Conn) clearReadDeadline() {
	if !c.rdDeadline.IsZero() {
		c.rdDeadline = time.Time{}
		c.raw.SetReadDeadline(time.Time{})
	}
}

// park hands the connection to the idle poller. On success the reader
// must return at once without touching the connection's reader state: a
// new reader may already be running.
func (c *Conn) park() bool {
	// Nothing may stay pending on the reader's side.
	c.releaseHeld()
	if c.inlinePending {
		c.inlinePending = false
		c.flushInline()
	}
	rc, err := c.raw.(syscall.Conn).SyscallConn()
	if err != nil {
		c.parkFailed = true
		return false
	}
	// Idle buffers go: the writer's (it ends once nothing is queued) and
	// the reader's.
	c.outMu.Lock()
	c.readerParked = true
	if c.out.Len() == 0 {
		c.out.Reset(nil)
	}
	c.outMu.Unlock()
	if c.wmu.TryLock() {
		c.spareIn = nil
		c.wmu.Unlock()
	}
	c.leftover = nil
	putReader(c.br)
	c.br = nil
	if c.writerOn.Load() {
		c.signalWriter()
	}
	if c.s.idle.park(c, rc) {
		c.s.stats.ConnectionParks.Add(1)
		return true
	}
	c.parkFailed = true
	c.outMu.Lock()
	c.readerParked = false
	c.outMu.Unlock()
	c.br = getReader(c.nc)
	return false
}

// resumeRead is started by the idle poller when a parked connection's
// socket becomes readable.
func (c *Conn) resumeRead() {
	c.outMu.Lock()
	c.readerParked = false
	c.outMu.Unlock()
	c.br = getReader(c.nc)
	c.serve()
}

// goConn starts fn on a connection goroutine the server waits for on
// Close; it returns false once the server is closing.
func (s *Port) goConn(fn func()) bool {
	s.spawnMu.RLock()
	defer s.spawnMu.RUnlock()
	if s.closing.Load() {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}
