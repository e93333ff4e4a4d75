package raftnode

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Defaults for TCPConfig fields left zero.
const (
	DefaultMaxFrameBytes = 64 << 20
	DefaultQueueSize     = 4096
	DefaultDialTimeout   = time.Second
	DefaultWriteTimeout  = 10 * time.Second
	DefaultBackoffMin    = 20 * time.Millisecond
	DefaultBackoffMax    = time.Second
)

// TCPConfig configures a TCPTransport.
type TCPConfig struct {
	// ID and ClusterID identify this member in the handshake.
	ID, ClusterID uint64
	// Listener accepts the peers' connections. Listen first, then give
	// its address to the other members (tests listen on 127.0.0.1:0).
	// The transport closes it in Stop.
	Listener net.Listener
	// MaxFrameBytes bounds one message on the wire, in both directions
	// (default 64 MiB). A snapshot is one message, so this also bounds
	// the state-machine snapshots that can be sent to lagging members.
	MaxFrameBytes int
	// QueueSize bounds the messages waiting for each peer (default 4096);
	// when it is full, further messages are dropped.
	QueueSize int
	// DialTimeout bounds connecting and the handshake (default 1 s).
	DialTimeout time.Duration
	// WriteTimeout bounds one batch of writes to a peer (default 10 s); a
	// peer that does not read is disconnected.
	WriteTimeout time.Duration
	// BackoffMin and BackoffMax bound the exponential backoff between
	// connection attempts (defaults 20 ms and 1 s).
	BackoffMin, BackoffMax time.Duration
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// ServerTLS and ClientTLS, if set, run every peer connection over
	// mutual TLS (ZooKeeper's sslQuorum): ServerTLS for the connections
	// this member accepts (it should require and verify client
	// certificates), ClientTLS for those it dials (unless it sets
	// ServerName or skips verification, the peer's certificate is checked
	// against the host of its address). The handshake runs under
	// DialTimeout; a peer whose certificate is refused is logged on both
	// sides, like any refused handshake.
	ServerTLS, ClientTLS *tls.Config
	// ClientTLSFunc, if set, replaces ClientTLS: it is asked for the
	// configuration of each connection this member dials, so that a
	// certificate replaced on disk is used from the next connection on.
	ClientTLSFunc func() *tls.Config
	// AcceptPlaintext, with ServerTLS set, accepts connections that do not
	// start a TLS handshake too, in plaintext (ZooKeeper's
	// portUnification): during the rolling switch of an ensemble between
	// plaintext and TLS, members that dial in plaintext and members that
	// dial over TLS are both let in. The first byte tells them apart
	// (internal/tlssniff); it must arrive within DialTimeout. Plaintext
	// peers are not authenticated (VerifyPeer is not called for them).
	AcceptPlaintext bool
	// Probe, if set, answers probes (probe.go): connections that ask
	// about the member rather than carry raft messages. With Probe set,
	// ID may be 0 until SetIdentity.
	Probe ProbeHandler
	// Resolve, if set, gives the address of a member that was not added
	// with AddPeer when raft first sends it a message (a member that
	// joined the group, known from the log or a snapshot). It must not
	// block.
	Resolve func(id uint64) (addr string, ok bool)
	// Admit, if set, may refuse a peer that passed the handshake's checks
	// (a stale incarnation of a member): its error is the reason the
	// refusal gives and both sides log.
	Admit func(from uint64) error
	// VerifyPeer, if set, checks a TLS peer's certificate against the
	// member it claims to be (from), after the TLS and id checks: a
	// certificate of the ensemble's CA must not let one host speak as
	// another member. Its error refuses the connection.
	VerifyPeer func(from uint64, cs *tls.ConnectionState) error
	// FormationRefused, if set, is told (on the accepting goroutine; it
	// must not block) that a dialer of another formation than this
	// member's was refused (formation.go).
	FormationRefused func(from, formation uint64)
	// Instance is this transport's instance token (helloV3 in
	// formation.go); NewTCPTransport picks a random one if it is 0.
	Instance uint64
	// VerifyPending, if set, checks a dialer whose formation is pending
	// (helloV3): that the member this one knows under the dialer's id
	// runs with the dialer's instance token. Its error refuses the
	// connection. It runs on the accepting goroutine and must not block
	// for long: it may refuse while it finds out, and let the dialer's
	// next attempt in.
	VerifyPending func(from, instance uint64) error
	// ClusterMismatch, if set, is told (it must not block) that peer, a
	// member of another ensemble by the handshake's cluster id, refused
	// this member's connection (dialed) or was refused by it, each time
	// it happens: the server logs which membership lines differ.
	ClusterMismatch func(peer uint64, dialed bool)
	// DialAddr, if set, gives the address to dial to reach member id,
	// whose address is addr, for every connection this member dials to
	// it (raft messages, snapshot streams). For tests that put a proxy
	// on each link (cmd/zkgo's zkgofaults build): the addresses members
	// know each other by, hence the ensemble's identity, stay the same;
	// a TLS peer's certificate is still checked against addr. It is
	// called on the dialing goroutine and must not block.
	DialAddr func(id uint64, addr string) string

	// Auth, if set, authenticates peer connections (quorum SASL;
	// peerauth.go), in both directions, probes and snapshot streams
	// included.
	Auth *PeerAuth

	// oldSnapStreams makes the transport send snapshots as members
	// before resumable streams did, and refuse resumable ones as they
	// do (tests of mixed versions).
	oldSnapStreams bool
}

// TCPTransport is the production Transport: each member listens on one
// address; for each peer it keeps one outbound connection, which carries
// only this member's messages to that peer. Inbound connections only
// carry messages to this member.
//
// Wire format: every frame is a 4-byte big-endian length and that many
// bytes. The dialer's first frame is the hello (36 bytes: magic
// "zkgoraft", version uint32 = 1, cluster id, sender id, receiver id, all
// big-endian uint64; version 2 adds the formation, 8 more bytes, see
// formation.go); the listener answers with one frame: a status byte (0
// accepted, 1 cluster mismatch, 2 wrong receiver, 3 bad hello, 4 another
// formation) and a reason text. Every later frame is one marshalled raftpb.Message from
// the sender to the receiver. A hello naming receiver 0 is a probe
// (probe.go). A frame longer than MaxFrameBytes, a
// message from or to another member than the hello named, or a bad hello
// closes the connection.
type TCPTransport struct {
	cfg TCPConfig
	log *slog.Logger

	ctx    context.Context // cancelled by Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loop, peer writers, inbound readers

	// id and cluster are this member's raft id and the cluster id the
	// handshake checks (SetIdentity may set them after NewTCPTransport);
	// formation is the ensemble's formation (formation.go).
	id, cluster, formation atomic.Uint64

	mu          sync.Mutex // guards h, started, accepting, stopped, peers, inbound, snapStreams, plain
	h           Handler
	started     bool
	accepting   bool // the accept loop runs (Listen or Start)
	stopped     bool
	peers       map[uint64]*tcpPeer
	inbound     map[net.Conn]struct{}
	snapStreams map[uint64]net.Conn  // each peer's current inbound snapshot stream
	plain       map[string]time.Time // peers that do not authenticate, until when (peerauth.go)

	limit    acceptLimiter // per-source connection rate (ratelimit.go)
	limitLog everyLimiter  // its log line

	// snapRecvMu is held while a snapshot stream is received: the
	// Handler keeps one partial snapshot (SnapshotResumer). It guards
	// no field.
	snapRecvMu sync.Mutex // guards no field: one snapshot stream received at a time
}

// NewTCPTransport returns a transport that accepts connections on
// cfg.Listener once started.
func NewTCPTransport(cfg TCPConfig) (*TCPTransport, error) {
	if (cfg.ID == 0 && cfg.Probe == nil) || cfg.Listener == nil {
		return nil, fmt.Errorf("%w: TCP transport needs an ID (or a Probe handler) and a Listener", ErrConfig)
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = DefaultBackoffMin
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffMin)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for cfg.Instance == 0 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("raftnode: instance token: %w", err)
		}
		cfg.Instance = binary.BigEndian.Uint64(b[:])
	}
	t := &TCPTransport{
		cfg:     cfg,
		log:     cfg.Logger,
		peers:   map[uint64]*tcpPeer{},
		inbound: map[net.Conn]struct{}{},
	}
	t.id.Store(cfg.ID)
	t.cluster.Store(cfg.ClusterID)
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// Addr returns the listening address.
func (t *TCPTransport) Addr() net.Addr { return t.cfg.Listener.Addr() }

// Start implements Transport.
func (t *TCPTransport) Start(h Handler) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.stopped {
		return errors.New("raftnode: TCP transport started twice or after Stop")
	}
	if t.id.Load() == 0 {
		return fmt.Errorf("%w: TCP transport started without an ID", ErrConfig)
	}
	t.h, t.started = h, true
	t.startAccepting()
	for _, p := range t.peers {
		t.startPeer(p)
	}
	return nil
}

// AddPeer implements Transport.
func (t *TCPTransport) AddPeer(id uint64, addr string) {
	if id == t.id.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.addPeerLocked(id, addr)
}

// addPeerLocked adds or readdresses peer id. t.mu is held.
func (t *TCPTransport) addPeerLocked(id uint64, addr string) *tcpPeer {
	if old := t.peers[id]; old != nil {
		if old.addr == addr {
			return old
		}
		old.close()
	}
	p := &tcpPeer{id: id, addr: addr, q: make(chan raftpb.Message, t.cfg.QueueSize)}
	p.ctx, p.cancel = context.WithCancel(t.ctx)
	t.peers[id] = p
	if t.started {
		t.startPeer(p)
	}
	return p
}

// RemovePeer implements Transport.
func (t *TCPTransport) RemovePeer(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.peers[id]; p != nil {
		p.close()
		delete(t.peers, id)
	}
}

// Send implements Transport. It never blocks: a message for a full queue
// is dropped (and the peer reported unreachable).
func (t *TCPTransport) Send(msgs []raftpb.Message) {
	var dropped []*raftpb.Message
	t.mu.Lock()
	h := t.h
	for i := range msgs {
		p := t.peers[msgs[i].To]
		if p == nil && t.cfg.Resolve != nil && !t.stopped && msgs[i].To != t.id.Load() {
			if addr, ok := t.cfg.Resolve(msgs[i].To); ok {
				p = t.addPeerLocked(msgs[i].To, addr)
			}
		}
		if p != nil {
			select {
			case p.q <- msgs[i]:
				continue
			default:
			}
		}
		dropped = append(dropped, &msgs[i]) // unknown peer or full queue
	}
	t.mu.Unlock()
	if h == nil {
		return
	}
	for _, m := range dropped {
		h.ReportUnreachable(m.To)
		switch m.Type {
		case raftpb.MsgSnap:
			h.ReportSnapshot(m.To, raft.SnapshotFailure)
		case raftpb.MsgProp:
			h.ReportProposalLost(m.To)
		}
	}
}

// Stop implements Transport.
func (t *TCPTransport) Stop() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.stopped = true
	t.cancel()
	t.cfg.Listener.Close()
	for _, p := range t.peers {
		p.close()
	}
	for c := range t.inbound {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// --- outbound ---

// tcpPeer is the outbound side of one peer: a queue and the goroutine
// that owns the connection.
type tcpPeer struct {
	id     uint64
	addr   string
	q      chan raftpb.Message
	ctx    context.Context // cancelled when the peer is removed or the transport stops
	cancel context.CancelFunc
}

func (p *tcpPeer) close() { p.cancel() }

// startPeer starts p's writer. t.mu is held.
func (t *TCPTransport) startPeer(p *tcpPeer) {
	t.wg.Add(1)
	go t.writeLoop(p)
}

// writeLoop connects to p (with backoff), then writes queued messages in
// batches until the connection fails or p is closed.
func (t *TCPTransport) writeLoop(p *tcpPeer) {
	defer t.wg.Done()
	log := t.log.With("peer", p.id, "addr", p.addr)
	backoff := t.cfg.BackoffMin
	var (
		conn      net.Conn
		unwatch   func() bool // stops closing conn when p.ctx is cancelled
		bw        *bufio.Writer
		buf       []byte
		snaps     []uint64 // MsgSnap destinations in the current batch
		props     bool     // the unflushed batch holds a forwarded proposal
		connected bool
		lastWhy   string    // the last dial error logged
		lastSaid  time.Time // when
	)
	disconnect := func() {
		unwatch()
		conn.Close()
		conn = nil
	}
	defer func() {
		if conn != nil {
			disconnect()
		}
	}()
	for {
		if conn == nil {
			c, err := t.dial(p)
			if err != nil {
				// Said once per outage, and again when the reason
				// changes (a refusal after "try again", say) or every
				// minute: a member kept out says why.
				if why := err.Error(); connected || backoff == t.cfg.BackoffMin || why != lastWhy || time.Since(lastSaid) >= time.Minute {
					if errors.Is(err, ErrHandshake) {
						log.Warn("raftnode: peer unreachable", "err", err)
					} else {
						log.Info("raftnode: peer unreachable", "err", err)
					}
					lastWhy, lastSaid = why, time.Now()
				}
				connected = false
				t.h.ReportUnreachable(p.id)
				if !t.dropFor(p, backoff) {
					return
				}
				backoff = min(2*backoff, t.cfg.BackoffMax)
				continue
			}
			log.Info("raftnode: connected to peer")
			conn, bw, connected, backoff = c, bufio.NewWriterSize(c, 64<<10), true, t.cfg.BackoffMin
			// Closing the connection unblocks a write to a peer that does
			// not read when the peer is removed or the transport stops.
			unwatch = context.AfterFunc(p.ctx, func() { c.Close() })
			// The peer never writes on this connection: a read ends only
			// when it closed it (its process died, or it refused us
			// later). Close it then, so that the next message dials
			// again — and resolves the peer's name again: a member
			// rescheduled on another address (a Kubernetes pod) would
			// otherwise keep receiving nothing on a connection whose
			// writes still succeed into the kernel's buffers.
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				io.Copy(io.Discard, c)
				c.Close()
				t.checkGone(p)
			}()
		}
		var m raftpb.Message
		select {
		case m = <-p.q:
		case <-p.ctx.Done():
			return
		}
		conn.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
		snaps = snaps[:0]
		var err error
		for n := 0; ; n++ {
			buf, err = t.writeMessage(bw, buf, &m)
			if err != nil {
				break
			}
			switch m.Type {
			case raftpb.MsgSnap:
				snaps = append(snaps, m.To)
			case raftpb.MsgProp:
				props = true
			}
			if n == 255 || bw.Buffered() > 1<<20 {
				break
			}
			select {
			case m = <-p.q:
				continue
			default:
			}
			break
		}
		if err == nil {
			err = bw.Flush()
		}
		if len(buf) > 1<<20 {
			buf = nil // do not keep a snapshot-sized buffer around
		}
		if err != nil {
			if errors.Is(err, errFrameTooLarge) {
				log.Error("raftnode: message too large to send; dropped", "type", m.Type, "err", err)
				if m.Type == raftpb.MsgSnap {
					t.h.ReportSnapshot(p.id, raft.SnapshotFailure)
				}
				if bw.Flush() == nil {
					t.reportSnaps(snaps, raft.SnapshotFinish)
					continue
				}
			}
			if p.ctx.Err() != nil {
				t.reportSnaps(snaps, raft.SnapshotFailure)
				return
			}
			log.Info("raftnode: connection to peer lost", "err", err)
			disconnect()
			t.h.ReportUnreachable(p.id)
			t.reportSnaps(snaps, raft.SnapshotFailure)
			if props || m.Type == raftpb.MsgProp {
				t.h.ReportProposalLost(p.id)
			}
			props = false
			continue
		}
		t.reportSnaps(snaps, raft.SnapshotFinish)
		// A flushed proposal can still be lost if the peer dies before
		// reading it; that shows as a broken connection on a later
		// write, or as a change of leader or term.
		props = false
	}
}

func (t *TCPTransport) reportSnaps(ids []uint64, status raft.SnapshotStatus) {
	for _, id := range ids {
		t.h.ReportSnapshot(id, status)
	}
}

// dropFor waits d while dropping p's queued messages (raft resends what
// matters); it returns false if p was closed.
func (t *TCPTransport) dropFor(p *tcpPeer, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case m := <-p.q:
			switch m.Type {
			case raftpb.MsgSnap:
				t.h.ReportSnapshot(m.To, raft.SnapshotFailure)
			case raftpb.MsgProp:
				t.h.ReportProposalLost(m.To)
			}
		case <-timer.C:
			return true
		case <-p.ctx.Done():
			return false
		}
	}
}

var errFrameTooLarge = errors.New("raftnode: frame too large")

// writeMessage frames m into bw, using buf as scratch space.
func (t *TCPTransport) writeMessage(bw *bufio.Writer, buf []byte, m *raftpb.Message) ([]byte, error) {
	size := m.Size()
	if size > t.cfg.MaxFrameBytes {
		return buf, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, size, t.cfg.MaxFrameBytes)
	}
	if cap(buf) < 4+size {
		buf = make([]byte, 4+size)
	}
	buf = buf[:4+size]
	binary.BigEndian.PutUint32(buf, uint32(size))
	if _, err := m.MarshalTo(buf[4:]); err != nil {
		return buf, err
	}
	_, err := bw.Write(buf)
	return buf, err
}

// clientTLS runs c over TLS when cfg is set: the peer's certificate is
// checked against the host of addr unless cfg names a server or skips
// verification.
func clientTLS(c net.Conn, addr string, cfg *tls.Config) net.Conn {
	if cfg == nil {
		return c
	}
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	return tls.Client(c, cfg)
}

// checkGone is called when a connection to or from p ended other than
// by this side (p closed it, or its process died): if p's peer
// port now refuses connections (its host answers, but nothing listens:
// the member's process is gone), the Handler is told at once
// (PeerDownHandler) instead of learning it from an election timeout of
// silence. A dial that succeeds is closed again (the writer dials anew
// when it has something to send).
func (t *TCPTransport) checkGone(p *tcpPeer) {
	pd, ok := t.h.(PeerDownHandler)
	if !ok || p.ctx.Err() != nil {
		return
	}
	// A process being killed closes its connections and its listener
	// one after the other: a dial in between is taken into the dying
	// listener's backlog and then reset. So a dial that fails otherwise
	// than refused is tried again, a few times, shortly after.
	for attempt := 0; attempt < goneProbes; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(goneProbeGap):
			case <-p.ctx.Done():
				return
			}
		}
		c, err := t.dial(p)
		if err == nil {
			c.Close()
			return
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			if p.ctx.Err() == nil {
				pd.PeerDown(p.id)
			}
			return
		}
	}
}

// How often, and how far apart, checkGone dials a peer whose connection
// ended before it gives up deciding (the election timeout then decides).
const (
	goneProbes   = 5
	goneProbeGap = 20 * time.Millisecond
)

// dial connects to p and performs the handshake.
func (t *TCPTransport) dial(p *tcpPeer) (net.Conn, error) {
	return t.dialAs(p.ctx, p.addr, p.id, helloMagic)
}

// dialAs connects to member to at addr and performs the handshake with
// the given magic (raft messages, or a snapshot stream). addr may list
// several addresses separated by '|' (ZooKeeper's multiAddress): they are
// tried in turn, each for DialTimeout, until one answers; host names are
// resolved again on every attempt.
func (t *TCPTransport) dialAs(pctx context.Context, addr string, to uint64, magic string) (net.Conn, error) {
	if !strings.Contains(addr, "|") {
		return t.dialOne(pctx, addr, to, magic)
	}
	var errs []error
	for _, a := range strings.Split(addr, "|") {
		c, err := t.dialOne(pctx, a, to, magic)
		if err == nil {
			return c, nil
		}
		var re *refusedError
		if errors.As(err, &re) || pctx.Err() != nil {
			return nil, err // it answered, and refused: another address is the same member
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
	}
	return nil, errors.Join(errs...)
}

// dialOne is dialAs for one address.
func (t *TCPTransport) dialOne(pctx context.Context, addr string, to uint64, magic string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(pctx, t.cfg.DialTimeout)
	defer cancel()
	dial := addr
	if t.cfg.DialAddr != nil {
		dial = t.cfg.DialAddr(to, addr)
	}
	d := net.Dialer{Control: userTimeout(t.cfg.WriteTimeout)}
	c, err := d.DialContext(ctx, "tcp", dial)
	if err != nil {
		return nil, err
	}
	cfg := t.cfg.ClientTLS
	if t.cfg.ClientTLSFunc != nil {
		cfg = t.cfg.ClientTLSFunc()
	}
	c = clientTLS(c, addr, cfg)
	stop := context.AfterFunc(ctx, func() { c.Close() }) // unblocks the handshake on Stop
	defer stop()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	if pa := t.cfg.Auth; pa != nil && pa.NewClient != nil && !t.plainPeer(addr) {
		if err := pa.authenticate(c, to, addr); err != nil {
			c.Close()
			if !errors.Is(err, errNoPeerAuth) || pa.LearnerRequire {
				if errors.Is(err, errNoPeerAuth) {
					err = fmt.Errorf("%w; this member requires it (quorum.auth.learnerRequireSasl=true)", err)
				}
				return nil, err
			}
			// ZooKeeper's rolling switch-on: a member that does not
			// authenticate peers yet is dialed without.
			t.setPlainPeer(addr)
			return t.dialOne(pctx, addr, to, magic)
		}
	}
	if err := writeFrame(c, t.hello(magic, to)); err != nil {
		c.Close()
		return nil, err
	}
	ack, err := readFrame(c, nil, maxControlFrame)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if len(ack) == 0 || ack[0] != ackOK {
		c.Close()
		if len(ack) > 0 && ack[0] == ackClusterMismatch && t.cfg.ClusterMismatch != nil {
			t.cfg.ClusterMismatch(to, true)
		}
		return nil, &refusedError{status: ack[0:min(1, len(ack))], reason: string(ack[min(1, len(ack)):])}
	}
	if !stop() {
		c.Close()
		return nil, ctx.Err()
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// --- inbound ---

func (t *TCPTransport) acceptLoop() {
	defer t.wg.Done()
	for {
		c, err := t.cfg.Listener.Accept()
		if err != nil {
			if t.ctx.Err() != nil {
				return
			}
			t.log.Warn("raftnode: accept", "err", err)
			select {
			case <-time.After(t.cfg.BackoffMin):
				continue
			case <-t.ctx.Done():
				return
			}
		}
		if !t.limit.allow(c.RemoteAddr(), time.Now()) {
			c.Close()
			if t.limitLog.Allow() {
				t.log.Warn("raftnode: closed peer-port connections from a source that opens them too fast", "remote", c.RemoteAddr().String(),
					"limit_per_second", acceptRate, "burst", acceptBurst)
			}
			continue
		}
		t.mu.Lock()
		if t.stopped {
			t.mu.Unlock()
			c.Close()
			return
		}
		t.inbound[c] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.readLoop(c)
	}
}

// readLoop checks the hello, then steps every message into raft.
func (t *TCPTransport) readLoop(raw net.Conn) {
	defer t.wg.Done()
	defer func() {
		raw.Close()
		t.mu.Lock()
		delete(t.inbound, raw)
		t.mu.Unlock()
	}()
	log := t.log.With("remote", raw.RemoteAddr().String())
	c, err := t.serverConn(raw)
	if err != nil {
		log.Warn("raftnode: refused a peer connection", "err", err)
		return
	}
	from, magic, err := t.accept(c)
	if err != nil {
		log.Warn("raftnode: refused a peer connection", "err", err)
		return
	}
	if from == 0 {
		return // a probe, answered
	}
	if magic == snapMagic || magic == snapMagic2 {
		t.receiveSnapshot(c, from, magic == snapMagic2, log.With("peer", from))
		return
	}
	log = log.With("peer", from)
	br := bufio.NewReaderSize(c, 64<<10)
	var buf []byte
	got := false // a message arrived on this connection
	for {
		frame, err := readFrame(br, buf, t.cfg.MaxFrameBytes)
		if err != nil {
			if t.ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				log.Info("raftnode: inbound connection closed", "err", err)
			}
			if got && t.ctx.Err() == nil && !errors.Is(err, errFrameTooLarge) {
				// The peer closed it (or its process died): the leader's
				// heartbeats come this way, so this is where a follower
				// first sees its leader gone. Only a connection that
				// carried messages counts: checkGone's own dials carry
				// none, and two members must not answer each other's
				// probes with probes.
				t.mu.Lock()
				p := t.peers[from]
				t.mu.Unlock()
				if p != nil {
					t.checkGone(p)
				}
			}
			return
		}
		var m raftpb.Message
		if err := m.Unmarshal(frame); err != nil {
			log.Warn("raftnode: undecodable message; closing", "err", err)
			return
		}
		if m.From != from || m.To != t.id.Load() {
			log.Warn("raftnode: message not from the handshake's sender to us; closing", "from", m.From, "to", m.To)
			return
		}
		if cap(frame) <= 1<<20 {
			buf = frame // reuse: Unmarshal copies the bytes it keeps
		} else {
			buf = nil
		}
		got = true
		if err := t.h.Process(t.ctx, m); err != nil && t.ctx.Err() != nil {
			return
		}
	}
}

func writeFrame(w io.Writer, b []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(append(hdr[:], b...)); err != nil {
		return err
	}
	return nil
}

// readFrame reads one frame into buf (grown as needed). The length is
// checked against max before anything is allocated.
func readFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
