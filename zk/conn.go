package zk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk/wire"
)

// Conn is a ZooKeeper session. It is safe for concurrent use; requests from
// many goroutines are pipelined on one connection.
type Conn struct {
	// Set by Connect, then read-only.
	cfg    config
	chroot string
	hosts  HostProvider // WithHostProvider, or a HostList of the connect string's servers

	xid         atomic.Int32
	lastZxid    atomic.Int64
	suspensions atomic.Uint64 // times the Conn entered StateSuspended (incremented under mu)

	// mu guards the fields from state to seenRW: the state, the live link
	// and its ready channel (replaced and closed only with mu held), the
	// session (id, password, negotiated timeout, server), termErr and
	// closed, the credentials re-sent on reconnection (auths) and the
	// StateChanges subscribers (subs). Transitions are made with it held
	// (setStateLocked), which is what keeps them in order in listeners and
	// subs: their queues are pushed to under mu (queue.mu and callQueue.mu
	// are taken inside it, never the reverse). It is never held while
	// taking watches.mu or a link's mu, nor across network I/O.
	mu        sync.Mutex // guards the fields from state to seenRW
	state     State
	link      *link         // the live link, nil while disconnected
	ready     chan struct{} // closed when link is set or the Conn is finished
	readyShut bool          // ready is closed
	sessionID int64
	passwd    []byte
	timeout   time.Duration // negotiated session timeout
	server    string        // address of the current (or last) server
	termErr   error         // once set, every operation fails with it
	closed    bool          // Close was called
	auths     []authInfo
	subs      []*queue[State]
	seenRW    bool // a read-write server accepted this Conn (ClientCnxn's seenRwServerBefore)

	watches   watchManager      // has its own lock (watchManager.mu)
	deletes   guaranteedDeletes // has its own lock (guaranteedDeletes.mu)
	listeners *callQueue[State] // has its own lock; pushed to under mu

	// Set by Connect, then read-only.
	ctx       context.Context // canceled by Close, after closeSession
	cancel    context.CancelFunc
	first     chan error    // the first connection's outcome
	runDone   chan struct{} // closed when run returns
	trackDone chan struct{} // closed when trackEnsemble returns (or is not to run)
	once      sync.Once     // runs Close's shutdown once; guards no field
}

// Connect opens a session with one of the servers and returns once it is
// established, or fails when ctx is done or the server list has been tried
// as often as the connect retry policy allows.
//
// servers is either a string ("host:port,host:port/chroot") or a []string
// of addresses (an element may carry the "/chroot" suffix too).
func Connect[S string | []string](ctx context.Context, servers S, opts ...Option) (*Conn, error) {
	var list []string
	switch v := any(servers).(type) {
	case string:
		list = []string{v}
	case []string:
		list = v
	}
	cfg := defaultConfig()
	hosts, chroot, perr := parseServers(list)
	cfg.chroot = chroot
	for _, o := range opts {
		o(&cfg)
	}
	if perr != nil && (cfg.provider == nil || !errors.Is(perr, errNoServers)) {
		return nil, perr
	}
	root, err := normChroot(cfg.chroot)
	if err != nil {
		return nil, err
	}
	provider := cfg.provider
	if provider == nil {
		provider = NewHostList(hosts, cfg.shuffle)
	} else if len(hosts) > 0 {
		provider.Update(hosts)
	}
	c := &Conn{
		cfg:     cfg,
		chroot:  root,
		hosts:   provider,
		ready:   make(chan struct{}),
		auths:   append([]authInfo(nil), cfg.auths...),
		first:   make(chan error, 1),
		runDone: make(chan struct{}),
	}
	c.trackDone = make(chan struct{})
	close(c.trackDone) // replaced below if the tracking starts
	c.watches.init(c)
	c.listeners = newCallQueue(func(s State) {
		for _, fn := range c.cfg.listeners {
			fn(s)
		}
	})
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.run()
	select {
	case err := <-c.first:
		if err != nil {
			c.Close()
			return nil, err
		}
		if !cfg.noTrack {
			c.trackDone = make(chan struct{})
			go c.trackEnsemble()
		}
		return c, nil
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
	}
}

// SessionID returns the session id (0 before the first session).
func (c *Conn) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// SessionPassword returns a copy of the session password.
func (c *Conn) SessionPassword() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.passwd...)
}

// SessionTimeout returns the negotiated session timeout.
func (c *Conn) SessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timeout
}

// State returns the current state.
func (c *Conn) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Server returns the address of the server the Conn is (or was last)
// connected to.
func (c *Conn) Server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server
}

// Suspensions returns how many times the Conn has been suspended (lost its
// connection). Comparing two readings tells whether the connection broke in
// between, even if it has been re-established since.
func (c *Conn) Suspensions() uint64 { return c.suspensions.Load() }

// LastZxid returns the last zxid seen in a reply.
func (c *Conn) LastZxid() int64 { return c.lastZxid.Load() }

// StateChanges returns a channel that receives every state transition from
// now on, in order, and is closed after StateClosed. Nothing is dropped: the
// queue behind the channel is unbounded, so receive until it is closed (a
// goroutine feeds the channel while a backlog exists).
//
// Deprecated: Use NotifyState, whose stop function ends the subscription;
// a StateChanges channel lives as long as the Conn.
func (c *Conn) StateChanges() <-chan State {
	q := newQueue[State](16)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed && c.state == StateClosed {
		q.finish()
		return q.ch
	}
	c.subs = append(c.subs, q)
	return q.ch
}

// NotifyState returns a channel that receives every state transition from
// now on, in order, and is closed after StateClosed, and a stop function
// that removes the subscription and closes the channel (undelivered states
// are discarded). Nothing is dropped before that: the queue behind the
// channel is unbounded, so receive until it is closed or call stop (a
// goroutine feeds the channel while a backlog exists). The states before
// Connect returned are not delivered; read State for where the Conn is.
// Recipes use it to follow the connection only while they hold something.
func (c *Conn) NotifyState() (ch <-chan State, stop func()) {
	q := newQueue[State](16)
	c.mu.Lock()
	if c.closed && c.state == StateClosed {
		c.mu.Unlock()
		q.finish()
		return q.ch, func() {}
	}
	c.subs = append(c.subs, q)
	c.mu.Unlock()
	return q.ch, func() {
		c.mu.Lock()
		for i, s := range c.subs {
			if s == q {
				c.subs = append(c.subs[:i:i], c.subs[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		q.stop()
	}
}

func (c *Conn) noteZxid(z int64) {
	for {
		cur := c.lastZxid.Load()
		if z <= cur || c.lastZxid.CompareAndSwap(cur, z) {
			return
		}
	}
}

// setStateLocked records a transition and queues it for listeners. c.mu held.
func (c *Conn) setStateLocked(s State) {
	if c.state == s && s != StateReconnected {
		return
	}
	c.state = s
	if s == StateSuspended {
		c.suspensions.Add(1)
	}
	c.cfg.logger.Info("zk: state", "state", s.String(), "session", fmt.Sprintf("0x%x", c.sessionID), "server", c.server)
	if len(c.cfg.listeners) > 0 {
		c.listeners.push(s)
	}
	for _, q := range c.subs {
		q.push(s)
	}
}

// nextXid returns a positive request xid.
func (c *Conn) nextXid() int32 {
	for {
		x := c.xid.Add(1) & 0x7fffffff
		if x != 0 {
			return x
		}
	}
}

// openReadyLocked wakes the requests waiting for a link. c.mu held.
func (c *Conn) openReadyLocked() {
	if !c.readyShut {
		c.readyShut = true
		close(c.ready)
	}
}

// linkDown is called by a link that died.
func (c *Conn) linkDown(l *link) {
	c.mu.Lock()
	if c.link == l {
		c.link = nil
		if c.termErr == nil {
			c.ready = make(chan struct{})
			c.readyShut = false
		}
	}
	c.mu.Unlock()
}

// waitLink returns the live link, waiting for one while disconnected.
func (c *Conn) waitLink(ctx context.Context) (*link, error) {
	for {
		c.mu.Lock()
		if c.termErr != nil {
			err := c.termErr
			c.mu.Unlock()
			return nil, err
		}
		if l := c.link; l != nil {
			c.mu.Unlock()
			return l, nil
		}
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// call sends a request and waits for its reply. It returns the transport
// error, ctx's error, or the reply's code as an *Error.
func (c *Conn) call(ctx context.Context, op proto.OpCode, body, resp proto.Record, onReply func(proto.ErrCode)) (*request, error) {
	r := &request{xid: c.nextXid(), op: op, body: body, resp: resp, onReply: onReply, done: make(chan struct{})}
	return r, c.roundTrip(ctx, r)
}

func (c *Conn) roundTrip(ctx context.Context, r *request) error {
	if err := c.send(ctx, r); err != nil {
		return err
	}
	return c.wait(ctx, r)
}

// send queues rs on one connection, in order and back to back: the
// server answers a session's requests in that order, each seeing what
// the ones before it did.
func (c *Conn) send(ctx context.Context, rs ...*request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for {
		l, err := c.waitLink(ctx)
		if err != nil {
			return err
		}
		if l.send(rs...) == nil {
			return nil
		}
		// The link died before the requests were queued: they were never
		// sent, so wait for the next one.
	}
}

// wait waits for r's reply (r was sent) and returns the transport error,
// ctx's error, or the reply's code as an *Error.
func (c *Conn) wait(ctx context.Context, r *request) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		r.abandoned.Store(true)
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	if r.code != proto.ErrOk {
		return &Error{Code: r.code, Err: CodeError(r.code)}
	}
	return nil
}

// send queues a request without waiting for its reply (the reply is
// matched and dropped). It is used for best-effort requests.
func (c *Conn) sendAsync(op proto.OpCode, body proto.Record) {
	c.mu.Lock()
	l := c.link
	c.mu.Unlock()
	if l == nil {
		return
	}
	r := &request{xid: c.nextXid(), op: op, body: body, done: make(chan struct{})}
	l.send(r)
}

// run connects, reconnects and reports state until the session ends or
// Close is called.
func (c *Conn) run() {
	defer close(c.runDone)
	var (
		connected      bool      // a session was established once
		disconnectedAt time.Time // when the current disconnection began
		tries          int       // connection attempts since the last success
		passes         int       // full passes over the host list
		passStart      = time.Now()
		preferred      string // the read-write server seekRW found, tried next
		lastErr        error
		lastDelay      time.Duration
	)
	for {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed || c.ctx.Err() != nil {
			c.finishRun(ErrClosing)
			return
		}
		if connected {
			c.mu.Lock()
			to, seenRW := c.timeout, c.seenRW
			c.mu.Unlock()
			// A Conn that only ever had read-only sessions has nothing to
			// lose: they were local to their server, and the next
			// connection asks for a new session anyway (Java's client does
			// not expire them either). It keeps trying, for as long as a
			// read-write quorum takes to come back.
			if seenRW && time.Since(disconnectedAt) >= to {
				c.cfg.logger.Warn("zk: session timeout elapsed while disconnected", "timeout", to, "err", lastErr)
				c.lose(ErrSessionExpired)
				return
			}
		}
		var (
			addr string
			l    *link
			resp *proto.ConnectResponse
			err  error
		)
		if preferred != "" {
			addr, preferred = preferred, ""
		} else {
			addr, err = c.hosts.Next(c.ctx)
		}
		if err == nil {
			l, resp, err = c.connect(addr)
		}
		if err != nil {
			lastErr = err
			if c.ctx.Err() != nil {
				continue
			}
			c.cfg.logger.Debug("zk: connect failed", "server", addr, "err", err)
			if addr != "" {
				c.hosts.Failed(addr, err)
			}
			if errors.Is(err, ErrSessionExpired) {
				c.lose(ErrSessionExpired)
				return
			}
			if errors.Is(err, ErrAuthFailed) {
				if !connected {
					c.first <- err
					c.finishRun(err)
				} else {
					c.lose(err)
				}
				return
			}
			tries++
			if tries < len(c.hosts.Servers()) {
				continue
			}
			tries = 0
			passes++
			delay, ok := c.cfg.retry.Next(passes, time.Since(passStart))
			if !ok {
				if !connected {
					c.first <- fmt.Errorf("zk: could not connect to %v: %w", c.hosts.Servers(), err)
					c.finishRun(ErrClosing)
					return
				}
				delay = lastDelay
			}
			lastDelay = delay
			if connected {
				c.mu.Lock()
				left := c.timeout - time.Since(disconnectedAt)
				c.mu.Unlock()
				if left < delay {
					delay = max(left, 0)
				}
			}
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
			}
			continue
		}
		tries, passes, passStart = 0, 0, time.Now()
		c.hosts.Connected(addr)
		c.mu.Lock()
		c.link = l
		c.openReadyLocked()
		switch {
		case resp.ReadOnly:
			c.setStateLocked(StateReadOnly)
		case connected:
			c.setStateLocked(StateReconnected)
		default:
			c.setStateLocked(StateConnected)
		}
		c.mu.Unlock()
		if !connected {
			connected = true
			c.first <- nil
		}
		var (
			rwFound  chan string
			stopSeek chan struct{}
			seekDone chan struct{}
		)
		if resp.ReadOnly && len(c.hosts.Servers()) > 1 {
			rwFound, stopSeek, seekDone = make(chan string, 1), make(chan struct{}), make(chan struct{})
			go c.seekRW(addr, stopSeek, rwFound, seekDone)
		}
		select {
		case <-l.dead:
		case <-c.ctx.Done():
			l.fail(&Error{Err: ErrClosing})
		case rw := <-rwFound:
			c.cfg.logger.Info("zk: found a read-write server; leaving the read-only one", "server", rw, "readOnly", addr)
			l.fail(connLoss(errFoundRW))
			preferred = rw
		}
		if stopSeek != nil {
			close(stopSeek)
			<-seekDone
		}
		l.wg.Wait()
		lastErr = l.err
		disconnectedAt = time.Now()
		c.mu.Lock()
		if c.ctx.Err() == nil && c.termErr == nil {
			c.setStateLocked(StateSuspended)
		}
		c.mu.Unlock()
	}
}

var errFoundRW = errors.New("zk: moving to a read-write server")

// seekRW runs while the Conn is connected to the read-only server current:
// it asks the other servers "isro" with a growing pause between passes
// (100 ms doubling up to a minute, as ZooKeeper's client does) and reports
// the first one that answers "rw" on found. It returns when stop closes.
func (c *Conn) seekRW(current string, stop <-chan struct{}, found chan<- string, done chan<- struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	pause := 100 * time.Millisecond
	for {
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		for _, h := range c.hosts.Servers() {
			if h == current {
				continue
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			ans, err := fourLetterWord(pctx, c.cfg.dial, h, "isro", 16)
			pcancel()
			if ctx.Err() != nil {
				return
			}
			if err == nil && ans == "rw" {
				found <- h
				return
			}
		}
		pause = min(2*pause, time.Minute)
	}
}

// lose ends the session: StateLost, every operation fails with err.
func (c *Conn) lose(err error) {
	c.mu.Lock()
	if c.termErr == nil {
		c.termErr = err
		c.openReadyLocked()
	}
	c.link = nil
	c.setStateLocked(StateLost)
	c.mu.Unlock()
	c.watches.terminate(StateLost, err)
}

// finishRun marks the Conn finished because of Close (or a failed first
// connection).
func (c *Conn) finishRun(err error) {
	c.mu.Lock()
	if c.termErr == nil {
		c.termErr = err
		c.openReadyLocked()
	}
	c.link = nil
	c.mu.Unlock()
}

// connect dials addr and performs the handshake, then re-sends the
// credentials and re-registers the watches. The returned link is running
// but not yet published.
func (c *Conn) connect(addr string) (*link, *proto.ConnectResponse, error) {
	c.mu.Lock()
	sid, passwd, to := c.sessionID, c.passwd, c.timeout
	if to == 0 {
		to = c.cfg.sessionTimeout
	}
	if !c.seenRW {
		// A session made by a read-only server is local to it: until a
		// read-write server has accepted us, ask for a new session each
		// time, as ZooKeeper's client does.
		sid, passwd = 0, nil
	}
	auths := append([]authInfo(nil), c.auths...)
	c.mu.Unlock()
	connTimeout := max(to/time.Duration(max(len(c.hosts.Servers()), 1)), 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(c.ctx, connTimeout)
	defer cancel()
	nc, err := c.cfg.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	wc := wire.NewConn(nc, wire.Options{MaxFrame: c.cfg.maxFrame, ReadBuffer: 32 << 10})
	resp, err := wc.Handshake(proto.ConnectRequest{
		LastZxidSeen: c.lastZxid.Load(),
		TimeOut:      int32(c.cfg.sessionTimeout / time.Millisecond),
		SessionID:    sid,
		Passwd:       passwd,
		ReadOnly:     c.cfg.readOnly,
	}, time.Now().Add(connTimeout))
	if err != nil {
		return nil, nil, handshakeError(err, sid)
	}
	if sid != 0 && resp.SessionID != sid {
		nc.Close()
		return nil, nil, &Error{Code: proto.ErrSessionExpired, Err: ErrSessionExpired, Op: "connect",
			Detail: fmt.Sprintf("server answered with session 0x%x", resp.SessionID)}
	}
	timeout := time.Duration(resp.TimeOut) * time.Millisecond
	c.mu.Lock()
	c.sessionID, c.passwd, c.timeout, c.server = resp.SessionID, resp.Passwd, timeout, addr
	if !resp.ReadOnly {
		c.seenRW = true
	}
	c.mu.Unlock()
	c.cfg.logger.Debug("zk: session established", "server", addr, "session", fmt.Sprintf("0x%x", resp.SessionID), "timeout", timeout, "readOnly", resp.ReadOnly)

	l := newLink(c, wc, addr, timeout)
	l.start()
	// SASL first, as ZooKeeper's client holds everything else back until it
	// completes (sasl.go).
	if err := c.saslAuth(ctx, l); err != nil {
		return nil, nil, err
	}
	// Credentials next, and wait for them: a refused credential fails the
	// connection.
	var authReqs []*request
	for _, a := range auths {
		r := &request{xid: proto.XidAuth, op: proto.OpAuth, body: &proto.AuthPacket{Scheme: a.scheme, Auth: a.auth}, done: make(chan struct{})}
		if err := l.send(r); err != nil {
			break
		}
		authReqs = append(authReqs, r)
	}
	for _, r := range authReqs {
		select {
		case <-r.done:
		case <-ctx.Done():
			l.fail(connLoss(ctx.Err()))
			<-r.done
		}
		if r.err == nil && r.code != proto.ErrOk {
			l.fail(connLoss(ErrAuthFailed))
			l.wg.Wait()
			return nil, nil, &Error{Code: r.code, Err: CodeError(r.code), Op: "auth"}
		}
		if r.err != nil {
			l.wg.Wait()
			return nil, nil, r.err
		}
	}
	// Then the watches, in chunks; their replies are not awaited.
	for _, sw := range c.watches.setWatches(c.lastZxid.Load()) {
		r := &request{xid: proto.XidSetWatches, op: proto.OpSetWatches2, body: sw, done: make(chan struct{})}
		if err := l.send(r); err != nil {
			break
		}
	}
	return l, &resp, nil
}

// handshakeError is the error of a failed wire.Handshake as zk reports it:
// the socket's error as it is for a failed write, "handshake: ..." for a
// failed read, ErrProtocol for an undecodable answer, and an *Error with
// ErrSessionExpired when the session to resume is refused.
func handshakeError(err error, sid int64) error {
	var he *wire.HandshakeError
	if !errors.As(err, &he) {
		return err
	}
	switch he.Step {
	case wire.StepWrite:
		return he.Err
	case wire.StepRead:
		return fmt.Errorf("handshake: %w", he.Err)
	case wire.StepDecode:
		return fmt.Errorf("handshake: %w: %v", ErrProtocol, he.Err)
	}
	if sid != 0 {
		return &Error{Code: proto.ErrSessionExpired, Err: ErrSessionExpired, Op: "connect"}
	}
	return fmt.Errorf("handshake: server refused a new session")
}

// Close ends the session: it sends closeSession (waiting briefly for the
// reply), stops every goroutine of the Conn, reports StateClosed, and ends
// every watch with an EventNotWatching event carrying ErrClosing. It is
// safe to call more than once and from several goroutines.
func (c *Conn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		l := c.link
		alive := c.termErr == nil
		if alive {
			c.termErr = &Error{Err: ErrClosing}
			c.openReadyLocked()
		}
		wait := c.timeout
		c.mu.Unlock()
		if alive && l != nil {
			r := &request{xid: c.nextXid(), op: proto.OpCloseSession, done: make(chan struct{})}
			if l.send(r) == nil {
				wait = min(max(wait/2, 200*time.Millisecond), 2*time.Second)
				t := time.NewTimer(wait)
				select {
				case <-r.done:
				case <-t.C:
				}
				t.Stop()
			}
		}
		c.cancel()
		<-c.runDone
		c.watches.terminate(StateClosed, ErrClosing)
		<-c.trackDone
		c.mu.Lock()
		c.setStateLocked(StateClosed)
		subs := c.subs
		c.mu.Unlock()
		for _, q := range subs {
			q.finish()
		}
		if cr := c.cfg.sasl; cr != nil && cr.kerberos != nil {
			cr.kerberos.close()
		}
	})
	<-c.runDone
	return nil
}
