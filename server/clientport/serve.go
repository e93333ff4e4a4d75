package clientport

import (
	"context"
	"errors"
	"net"
	"sort"
	"time"
)

// startIdlePoller starts the poller of parked connections (connpark.go);
// without one (not Linux, or it failed) connections do not park.
func (s *Port) startIdlePoller() {
	if s.opts.IdleAfter <= 0 {
		return
	}
	p, err := newIdlePoller(func(c *Conn) {
		if !s.goConn(c.resumeRead) {
			c.close("server shutting down")
		}
	}, s.log)
	if err != nil {
		s.log.Debug("idle connections do not park", "err", err)
		return
	}
	s.idle = p
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		p.run()
	}()
}

func (s *Port) acceptLoop(ln net.Listener, secure bool) {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() || s.draining.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Temporary errors (EMFILE etc.): back off and retry.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff < time.Second {
				backoff *= 2
			}
			s.log.Warn("accept failed", "err", err)
			select {
			case <-time.After(backoff):
				continue
			case <-s.done:
				return
			}
		}
		backoff = 0
		if ok, logNow, refused := s.throttle.take(time.Now()); !ok {
			// Counted before the close, so that a client that sees the
			// connection closed finds it counted.
			s.stats.ThrottledConns.Add(1) // zkgo_connections_rejected_total{reason="throttle"}
			nc.Close()
			if logNow {
				s.log.Warn("new connections throttled (connection_throttle_tokens); closed", "refused", refused)
			}
			continue
		}
		s.newConn(nc, secure)
	}
}

func (s *Port) connList() []*Conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		if c.handshaken.Load() {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out
}

// AbortPendingWrites closes every connection whose oldest write in flight
// was submitted more than olderThan ago (all with pending writes for 0).
func (s *Port) AbortPendingWrites(olderThan time.Duration) {
	now := time.Now()
	for _, c := range s.connList() {
		c.pipeMu.Lock()
		stuck := false
		if c.inflight > 0 {
			for _, r := range c.queue {
				if r.isWrite && !r.reconfig {
					stuck = olderThan == 0 || now.Sub(r.start) > olderThan
					break
				}
			}
		}
		c.pipeMu.Unlock()
		if stuck {
			c.close("write outcome unknown (leadership changed or the write is stuck)")
		}
	}
}

// Drain is the graceful part of the server's Shutdown: the listeners close,
// connections in their handshake close at once, then (unless handedOver)
// it waits for the writes proposed here to apply, and each connection
// closes once its queued replies are written. It waits at most
// drainTimeout, and half of what ctx leaves.
//
// handedOver: this member led and handed leadership over; what it
// proposed and was not applied by then is lost (its outcome is unknown
// to its clients), so drain does not wait for it: the connections close
// once their queued replies are written, and their clients go on
// through another member at once.
func (s *Port) Drain(ctx context.Context, handedOver bool) {
	if s.draining.Swap(true) || s.closing.Load() {
		return
	}
	if s.ln != nil {
		s.ln.Close()
	}
	if s.sln != nil {
		s.sln.Close()
	}
	// A connection still in its handshake gets no session here: it
	// closes at once, and its client connects to another member instead
	// of waiting for this one to stop.
	s.connsMu.Lock()
	var handshaking []*Conn
	for c := range s.conns {
		if !c.handshaken.Load() {
			handshaking = append(handshaking, c)
		}
	}
	s.connsMu.Unlock()
	for _, c := range handshaking {
		c.close("server shutting down")
	}
	deadline := time.Now().Add(drainTimeout)
	if d, ok := ctx.Deadline(); ok {
		if half := time.Now().Add(time.Until(d) / 2); half.Before(deadline) {
			deadline = half
		}
	}
	wait := func(done func() bool) bool {
		for !done() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return false
			}
			select {
			case <-s.done:
				return false
			case <-time.After(5 * time.Millisecond):
			}
		}
		return true
	}
	if !handedOver && !wait(func() bool { return s.prop.Waiting() == 0 }) {
		s.log.Warn("shutting down with writes proposed here not yet applied: their clients see the connection close", "waiting", s.prop.Waiting())
	}
	// Each connection closes once its queued replies are written.
	for _, c := range s.connList() {
		c.closeAfterFlush()
	}
	wait(func() bool {
		s.connsMu.Lock()
		defer s.connsMu.Unlock()
		return len(s.conns) == 0
	})
}

// drainTimeout bounds how long Drain waits for the writes already
// proposed here to apply, and then for their replies to be written.
const drainTimeout = 3 * time.Second

// Listen listens on the configured client addresses (none for an empty
// one).
func (s *Port) Listen() error {
	listen := func(addr string) (net.Listener, error) {
		if addr == "" {
			return nil, nil
		}
		return net.Listen("tcp", addr)
	}
	ln, err := s.opts.Listener, error(nil)
	if ln == nil {
		ln, err = listen(s.opts.Addr)
	}
	var sln net.Listener
	if err == nil {
		sln, err = listen(s.opts.SecureAddr)
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	s.ln, s.sln = ln, sln
	return nil
}

// CloseListeners closes what Listen opened, for a server whose start
// failed after Listen.
func (s *Port) CloseListeners() {
	for _, l := range []net.Listener{s.ln, s.sln} {
		if l != nil {
			l.Close()
		}
	}
}

// Serve starts accepting connections on the listeners and the poller of
// parked connections, in the background.
func (s *Port) Serve() {
	s.startIdlePoller()
	for _, l := range []net.Listener{s.ln, s.sln} {
		if l == nil {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.acceptLoop(l, l == s.sln)
		}()
	}
}

// Addr is the plaintext (or unified) client address; nil without one or
// before Listen.
func (s *Port) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// SecureAddr is the TLS client address; nil without one.
func (s *Port) SecureAddr() net.Addr {
	if s.sln == nil {
		return nil
	}
	return s.sln.Addr()
}

// BeginClose stops accepting: no connection starts after it returns.
func (s *Port) BeginClose() {
	s.spawnMu.Lock()
	s.closing.Store(true)
	s.spawnMu.Unlock()
	if s.idle != nil {
		s.idle.stop()
	}
	s.CloseListeners()
	close(s.done)
}

// Closing reports whether BeginClose was called.
func (s *Port) Closing() bool { return s.closing.Load() }

// Draining reports whether Drain was called.
func (s *Port) Draining() bool { return s.draining.Load() }

// Wait waits until every goroutine of the port has ended (after
// BeginClose and CloseAll).
func (s *Port) Wait() { s.wg.Wait() }

// CloseAll closes every connection, handshaken or not, with reason.
func (s *Port) CloseAll(reason string) {
	s.connsMu.Lock()
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.connsMu.Unlock()
	for _, c := range conns {
		c.close(reason)
	}
}

// DropClients closes every client connection (handshaken) with reason
// and returns how many there were.
func (s *Port) DropClients(reason string) int {
	conns := s.connList()
	for _, c := range conns {
		c.close(reason)
	}
	return len(conns)
}

// Conns are the handshaken connections, oldest first.
func (s *Port) Conns() []*Conn { return s.connList() }

// ReadOnly reports whether the port serves read-only sessions only.
func (s *Port) ReadOnly() bool { return s.readOnly.Load() }

// SwapReadOnly sets read-only mode and returns the previous mode.
func (s *Port) SwapReadOnly(ro bool) bool { return s.readOnly.Swap(ro) }
