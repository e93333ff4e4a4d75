package faultnet

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one proxied connection: a, accepted from the dialer, and b,
// dialed to the link's target. Each direction has a reader goroutine
// (source to queue) and a writer goroutine (queue to destination), so a
// delayed or blocked direction never stalls the other.
type conn struct {
	n    *Net
	link Dir    // the dialer's node to the listener's node
	seq  uint64 // the connection's number on its link, from 1
	a, b net.Conn
	// dirs[0] carries a's bytes to b (Dir link), dirs[1] b's to a.
	dirs [2]*direction

	done      chan struct{} // closed by close: every goroutine of c ends
	closeOnce sync.Once
	// ended counts directions whose EOF was delivered (a half-close);
	// at 2 the connection is closed.
	ended atomic.Int32
	// dialerMode is dirs[0]'s streamMode, stored before the unit that
	// decided it is queued. dirs[1] reads it when its first bytes come:
	// the listener answers only what it was sent.
	dialerMode atomic.Int32
}

// direction is one direction of a conn.
type direction struct {
	c        *conn
	idx      int // 0: the dialer's bytes, 1: the answers
	dir      Dir
	src, dst net.Conn
	q        *queue
	stats    *counters
	// lost: bytes (or the end) of this direction were discarded by a
	// partition. The stream has a gap: once the direction flows again
	// the connection is reset instead (see conn.healed).
	lost atomic.Bool

	readRand  *rand.Rand // the reader's draws only
	writeRand *rand.Rand // the writer's draws only
	lastAt    time.Time  // reader only: delivery time of the last unit queued
}

// newConn returns link's connection seq between a and b (b nil: the
// target is down, see blackhole). It starts nothing.
func (n *Net) newConn(link Dir, seq uint64, a, b net.Conn) *conn {
	c := &conn{n: n, link: link, seq: seq, a: a, b: b, done: make(chan struct{})}
	ends := [2][2]net.Conn{{a, b}, {b, a}}
	for i, d := range [2]Dir{link, link.Reverse()} {
		c.dirs[i] = &direction{
			c: c, idx: i, dir: d, src: ends[i][0], dst: ends[i][1],
			q:         newQueue(MaxQueuedBytes),
			stats:     n.counterOf(d),
			readRand:  n.rand(link, seq, i, stageRead),
			writeRand: n.rand(link, seq, i, stageWrite),
		}
	}
	if b == nil {
		c.dirs[0].lost.Store(true)
		c.dirs[1].lost.Store(true)
	}
	return c
}

// start runs the four goroutines of a registered connection.
func (c *conn) start() {
	c.n.wg.Add(4)
	for _, d := range c.dirs {
		go d.readLoop()
		go d.writeLoop()
	}
}

// close ends c once: both sockets are closed (with a TCP reset for a
// fault or a reset passed on, so both ends see an error at once), its
// goroutines end, and it leaves the Net. It must not be called with
// Net.mu held.
func (c *conn) close(why closeReason) {
	c.closeOnce.Do(func() {
		close(c.done)
		// Counted before the sockets close: whoever sees the close may
		// read the stats at once.
		if why == closeHealed || why == closeResetConns {
			c.dirs[0].stats.resets.Add(1)
		}
		rst := why == closePeerReset || why == closeHealed || why == closeResetConns
		for _, s := range [2]net.Conn{c.a, c.b} {
			if s == nil {
				continue
			}
			if tc, ok := s.(*net.TCPConn); ok && rst {
				tc.SetLinger(0)
			}
			s.Close()
		}
		c.n.unregister(c)
		c.n.log.Debug("faultnet: connection closed", "link", c.link.String(), "conn", c.seq, "why", why.String())
	})
}

// healed reports whether c must be reset under f: a direction that lost
// bytes flows again. A black hole (target down) ends once neither
// direction is blocked.
func (c *conn) healed(f *faults) bool {
	if c.b == nil {
		return !f.blocked(c.link) && !f.blocked(c.link.Reverse())
	}
	for _, d := range c.dirs {
		if d.lost.Load() && !f.blocked(d.dir) {
			return true
		}
	}
	return false
}

// blackhole reads and discards the dialer's bytes until c is closed or
// the dialer closes. c must be registered.
func (c *conn) blackhole() {
	buf := make([]byte, ChunkBytes)
	for {
		k, err := c.a.Read(buf)
		c.dirs[0].stats.bytesLost.Add(int64(k))
		if err != nil {
			c.close(closeTargetDown)
			return
		}
	}
}

// readLoop reads the source, cuts it into units and queues them, until
// the source ends (queued as unitEOF or unitReset) or c closes.
func (d *direction) readLoop() {
	defer d.c.n.wg.Done()
	var sp *splitter
	if d.idx == 0 {
		sp = newSplitter(modeUndecided)
	}
	ok := true
	emit := func(u unit) {
		if d.idx == 0 && sp.mode != modeUndecided && d.c.dialerMode.Load() == int32(modeUndecided) {
			d.c.dialerMode.Store(int32(sp.mode))
		}
		if ok {
			ok = d.enqueue(u)
		}
	}
	buf := make([]byte, ChunkBytes)
	for ok {
		k, err := d.src.Read(buf)
		if k > 0 {
			if sp == nil {
				mode := modeOpaque
				if streamMode(d.c.dialerMode.Load()) == modeFrames {
					mode = modeFrames
				}
				sp = newSplitter(mode)
			}
			sp.feed(buf[:k], emit)
		}
		if err != nil {
			select {
			case <-d.c.done:
				return // closed by the proxy
			default:
			}
			if sp != nil {
				sp.flush(emit)
			}
			if errors.Is(err, io.EOF) {
				emit(unit{kind: unitEOF})
			} else {
				emit(unit{kind: unitReset})
			}
			return
		}
	}
}

// enqueue applies the reader's faults to u (frame drop, delay) and
// queues it; false once c is closed.
func (d *direction) enqueue(u unit) bool {
	r := d.c.n.faults.Load().rule(d.dir)
	if u.kind == unitFrame && !u.first && chance(d.readRand, r.drop) {
		d.stats.framesDropped.Add(1)
		return true
	}
	at := time.Now()
	if r.delay > 0 || r.jitter > 0 {
		at = at.Add(r.delay)
		if r.jitter > 0 {
			at = at.Add(time.Duration(d.readRand.Int64N(int64(r.jitter))))
		}
	}
	if at.Before(d.lastAt) {
		at = d.lastAt // order is kept
	}
	d.lastAt = at
	return d.q.push(timedUnit{unit: u, at: at}, d.c.done)
}

// writeLoop delivers queued units at their time, applying the writer's
// faults (partition, frame swaps), until the end of the stream is
// delivered or c closes.
func (d *direction) writeLoop() {
	defer d.c.n.wg.Done()
	for {
		u, ok := d.q.pop(d.c.done, nil)
		if !ok || !d.sleepUntil(u.at) {
			return
		}
		if u.kind != unitFrame || u.first || !chance(d.writeRand, d.c.n.faults.Load().rule(d.dir).reorder) {
			if !d.deliver(u) {
				return
			}
			continue
		}
		// Hold u for the next unit to overtake it.
		t := time.NewTimer(ReorderHold)
		next, ok := d.q.pop(d.c.done, t.C)
		t.Stop()
		switch {
		case !ok:
			// None came in time: u goes alone.
			if !d.deliver(u) {
				return
			}
		case next.kind == unitFrame:
			if !d.sleepUntil(next.at) || !d.deliver(next) || !d.deliver(u) {
				return
			}
			d.stats.framesReordered.Add(1)
		default:
			// The end of the stream, or a switch to opaque: no swap.
			if !d.deliver(u) || !d.sleepUntil(next.at) || !d.deliver(next) {
				return
			}
		}
	}
}

// sleepUntil waits until t; false if c closed first.
func (d *direction) sleepUntil(t time.Time) bool {
	wait := time.Until(t)
	if wait <= 0 {
		return true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-d.c.done:
		return false
	}
}

// deliver hands u to the destination, or discards it if the direction
// is partitioned; false when the writer must end (the stream's end was
// delivered, or c is closed).
//
// A discard marks the direction lost before it looks at the faults
// again; Net.change publishes new faults before it looks at lost flags.
// So a heal that lifts the partition during a discard is seen by one of
// them, and the connection is reset rather than resumed with a gap.
func (d *direction) deliver(u timedUnit) bool {
	faults := &d.c.n.faults
	if faults.Load().blocked(d.dir) {
		d.lost.Store(true)
		if !faults.Load().blocked(d.dir) {
			d.c.close(closeHealed)
			return false
		}
		d.stats.bytesLost.Add(int64(len(u.b)))
		if u.kind == unitFrame {
			d.stats.framesLost.Add(1)
		}
		return true
	}
	if d.lost.Load() {
		d.c.close(closeHealed)
		return false
	}
	switch u.kind {
	case unitChunk, unitFrame:
		// Counted before the write, so that whoever reads the unit
		// sees it counted; taken back if the write fails.
		d.stats.bytes.Add(int64(len(u.b)))
		if u.kind == unitFrame {
			d.stats.frames.Add(1)
		}
		k, err := d.dst.Write(u.b)
		if err != nil {
			d.stats.bytes.Add(int64(k - len(u.b)))
			if u.kind == unitFrame {
				d.stats.frames.Add(-1)
			}
			d.c.close(closePeerReset)
			return false
		}
		return true
	case unitEOF:
		if tc, ok := d.dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		if d.c.ended.Add(1) == 2 {
			d.c.close(closeEOF)
		}
		return false
	default: // unitReset
		d.c.close(closePeerReset)
		return false
	}
}

// chance draws true with probability p (no draw when p is 0 or 1).
func chance(r *rand.Rand, p float64) bool {
	switch {
	case p <= 0:
		return false
	case p >= 1:
		return true
	default:
		return r.Float64() < p
	}
}
