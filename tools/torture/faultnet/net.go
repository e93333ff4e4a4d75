package faultnet

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the proxy's I/O.
const (
	// ChunkBytes is the size of a direction's read buffer: an opaque
	// stream is delivered in units of at most this many bytes.
	ChunkBytes = 32 << 10
	// DialTimeout bounds the proxy's dial of a link's target.
	DialTimeout = 5 * time.Second
	// ReorderHold is how long ReorderFrames holds a frame for the next
	// one to overtake it; past it the held frame goes alone.
	ReorderHold = 50 * time.Millisecond
)

// Errors Listen returns.
var (
	// ErrClosed: the Net was closed.
	ErrClosed = errors.New("faultnet: closed")
	// ErrLink: the link's node names are empty or equal.
	ErrLink = errors.New("faultnet: bad link")
)

// Net is a set of proxied links between named nodes and the faults on
// them, under one controller. Links are added with Listen; faults are
// set and lifted with the methods of faults.go, from any goroutine, while
// connections run; Close ends everything. A Net must be made by New.
//
// Locks: Net.mu and a queue's mu are never held together; conn.close
// takes Net.mu, so it is never called with Net.mu held.
type Net struct {
	log  *slog.Logger
	seed uint64

	// ctx is cancelled by Close: it ends dials of targets in flight.
	ctx    context.Context
	cancel context.CancelFunc
	// faults is the current state of every fault (never nil). It is
	// replaced, never modified, under mu (Net.change).
	faults atomic.Pointer[faults]
	// wg counts accept loops and connection goroutines.
	wg sync.WaitGroup

	mu        sync.Mutex // guards closed, listeners, conns, counters, resets; serializes fault changes
	closed    bool
	listeners []net.Listener
	conns     map[*conn]struct{} // open connections (including black holes)
	counters  map[Dir]*counters
	// resets counts the ResetConns calls of each pair of nodes (keyed by
	// pairKey): a connection accepted before a reset and registered
	// after it (it was dialing its target) is reset too.
	resets map[Dir]uint64
}

// pairKey names the pair of nodes of link, whichever dialed.
func pairKey(link Dir) Dir {
	if link.From > link.To {
		return Dir{link.To, link.From}
	}
	return link
}

// New returns a Net with no links and no faults. seed seeds every random
// choice (jitter, frame drops and swaps): each direction of each
// connection draws from its own source, derived from seed, the link and
// the connection's number on its link, so a schedule of faults replays
// the same choices for the same frames. Timing is not replayed: which
// frames a fault meets depends on when the harness sets it. logger may be
// nil.
func New(seed uint64, logger *slog.Logger) *Net {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Net{
		log:      logger,
		seed:     seed,
		conns:    map[*conn]struct{}{},
		counters: map[Dir]*counters{},
		resets:   map[Dir]uint64{},
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.faults.Store(&faults{dirs: map[Dir]rule{}, isolated: map[string]bool{}})
	return n
}

// Listen adds a link: a proxy listening on 127.0.0.1 (a free port) whose
// every accepted connection is dialed on to target. from names the node
// that will dial the returned address, to the node listening at target;
// the dialer's bytes are Dir{from, to} and the answers Dir{to, from}.
// Several links may join the same nodes (a peer port and a client port).
// The listener lives until Close.
func (n *Net) Listen(from, to, target string) (addr string, err error) {
	if from == "" || to == "" || from == to {
		return "", fmt.Errorf("%w: %q to %q", ErrLink, from, to)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("faultnet: listen for %s: %w", Dir{from, to}, err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		ln.Close()
		return "", ErrClosed
	}
	n.listeners = append(n.listeners, ln)
	n.counter(Dir{from, to})
	n.counter(Dir{to, from})
	n.wg.Add(1)
	n.mu.Unlock()
	go n.acceptLoop(ln, Dir{from, to}, target)
	n.log.Info("faultnet: link", "from", from, "to", to, "addr", ln.Addr().String(), "target", target)
	return ln.Addr().String(), nil
}

// Close closes every listener and every connection, and returns once
// every goroutine of the Net has ended. Later calls do the same wait and
// return nil; Close always returns nil.
func (n *Net) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.wg.Wait()
		return nil
	}
	n.closed = true
	lns := n.listeners
	n.listeners = nil
	var open []*conn
	for c := range n.conns {
		open = append(open, c)
	}
	n.mu.Unlock()
	n.cancel()
	for _, ln := range lns {
		ln.Close()
	}
	for _, c := range open {
		c.close(closeNet)
	}
	n.wg.Wait()
	return nil
}

// acceptLoop accepts link's connections on ln until Close.
func (n *Net) acceptLoop(ln net.Listener, link Dir, target string) {
	defer n.wg.Done()
	for {
		a, err := ln.Accept()
		if err != nil {
			if n.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			n.log.Warn("faultnet: accept", "link", link.String(), "err", err)
			select {
			case <-time.After(10 * time.Millisecond):
				continue
			case <-n.ctx.Done():
				return
			}
		}
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			a.Close()
			return
		}
		seq := uint64(n.counter(link).conns.Add(1))
		resets := n.resets[pairKey(link)]
		n.wg.Add(1)
		n.mu.Unlock()
		go n.serve(a, link, target, seq, resets)
	}
}

// serve dials target for the accepted connection a and starts the
// connection's four goroutines. When target cannot be dialed, the
// connection is closed, unless link is partitioned (either way): then it
// becomes a black hole that swallows the dialer's bytes until the
// partition is lifted, as a connect across a partition would time out
// rather than be refused.
//
// resets is the pair's ResetConns count when a was accepted.
func (n *Net) serve(a net.Conn, link Dir, target string, seq, resets uint64) {
	defer n.wg.Done()
	d := net.Dialer{Timeout: DialTimeout}
	b, err := d.DialContext(n.ctx, "tcp", target)
	if err != nil {
		b = nil
	}
	c := n.newConn(link, seq, a, b)
	if ok, reset := n.register(c, resets); !ok {
		c.close(closeNet)
		return
	} else if reset {
		c.close(closeResetConns)
		return
	}
	if b == nil {
		n.log.Debug("faultnet: target down", "link", link.String(), "conn", seq, "err", err)
		if c.healed(n.faults.Load()) {
			c.close(closeTargetDown)
			return
		}
		c.blackhole()
		return
	}
	n.log.Debug("faultnet: connection", "link", link.String(), "conn", seq)
	c.start()
}

// register adds c to the open connections; ok is false if the Net is
// closed. reset is true (and c not added) if ResetConns named c's nodes
// since c was accepted (the pair's count is no longer resets).
func (n *Net) register(c *conn, resets uint64) (ok, reset bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false, false
	}
	if n.resets[pairKey(c.link)] != resets {
		return true, true
	}
	n.conns[c] = struct{}{}
	return true, false
}

// unregister removes c from the open connections.
func (n *Net) unregister(c *conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}

// counter returns d's counters, made on first use. n.mu must be held.
func (n *Net) counter(d Dir) *counters {
	c := n.counters[d]
	if c == nil {
		c = &counters{}
		n.counters[d] = c
	}
	return c
}

// counterOf is counter for callers that do not hold n.mu.
func (n *Net) counterOf(d Dir) *counters {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counter(d)
}

// Random stages: each direction of a connection has one source per
// goroutine that draws.
const (
	stageRead  = 1 // the reader: jitter, frame drops
	stageWrite = 2 // the writer: frame swaps
)

// rand returns the random source of one stage of one direction (0: the
// dialer's bytes, 1: the answers) of connection seq of link.
func (n *Net) rand(link Dir, seq uint64, dir, stage int) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%d", link.From, link.To, seq, dir, stage)
	return rand.New(rand.NewPCG(n.seed, h.Sum64()))
}
