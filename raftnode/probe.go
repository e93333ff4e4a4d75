package raftnode

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
)

// Probes let a member that has no raft state yet ask the others about
// the group before it decides how to start: bootstrap with them, or join
// a group that already exists under a new raft id (see the server's
// rejoin). A probe is a connection to a member's peer address whose hello
// names receiver 0; it carries one request frame and gets one answer
// frame, both at most MaxProbeBytes, and is then closed. The cluster id
// is not checked: the prober may not know it yet (the answer tells it).
// What a probe may ask and what the answer holds is the ProbeHandler's
// business; the transport only moves the bytes, under DialTimeout.

// MaxProbeBytes bounds a probe's request and its answer.
const MaxProbeBytes = 64 << 10

// ProbeHandler answers a probe's request. It is called on the transport's
// goroutine for the connection and should return quickly; an answer
// longer than MaxProbeBytes is cut to an error.
// peer is the prober's TLS connection state (nil without TLS).
type ProbeHandler func(req []byte, peer *tls.ConnectionState) []byte

// SetIdentity sets the member's raft id and the cluster id its handshake
// checks, when they were not known at NewTCPTransport (a member that
// answers probes while it decides how to start). Call it before Start.
func (t *TCPTransport) SetIdentity(id, cluster uint64) {
	t.id.Store(id)
	t.cluster.Store(cluster)
}

// Listen starts accepting connections before Start: probes are answered,
// raft connections refused (their dialers retry) until Start.
func (t *TCPTransport) Listen() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.startAccepting()
	}
}

// startAccepting starts the accept loop once. t.mu is held.
func (t *TCPTransport) startAccepting() {
	if t.accepting {
		return
	}
	t.accepting = true
	t.wg.Add(1)
	go t.acceptLoop()
}

// answerProbe acknowledges a probe's hello, reads its request and writes
// the handler's answer. The connection's deadline (DialTimeout) bounds
// the whole exchange.
func (t *TCPTransport) answerProbe(c net.Conn) error {
	if t.cfg.Probe == nil {
		writeFrame(c, append([]byte{ackBadHello}, "probes are not answered here"...))
		return fmt.Errorf("%w: probe refused", ErrHandshake)
	}
	if err := writeFrame(c, []byte{ackOK}); err != nil {
		return err
	}
	req, err := readFrame(c, nil, MaxProbeBytes)
	if err != nil {
		return fmt.Errorf("reading a probe: %w", err)
	}
	var cs *tls.ConnectionState
	if tc, ok := c.(*tls.Conn); ok {
		st := tc.ConnectionState()
		cs = &st
	}
	ans := t.cfg.Probe(req, cs)
	if len(ans) > MaxProbeBytes {
		ans = []byte("error: answer too large")
	}
	return writeFrame(c, ans)
}

// Probe sends req to the member listening at addr (over TLS if tlsCfg is
// set, as for peer connections) and returns its answer. ctx bounds the
// whole exchange.
func Probe(ctx context.Context, addr string, tlsCfg *tls.Config, req []byte) ([]byte, error) {
	return ProbeVia(ctx, addr, addr, tlsCfg, req)
}

// ProbeVia is Probe of the member at addr over a connection to dial (a
// proxy in front of it; see TCPConfig.DialAddr). The member's TLS
// certificate is checked against addr's host.
func ProbeVia(ctx context.Context, dial, addr string, tlsCfg *tls.Config, req []byte) ([]byte, error) {
	return ProbeAuth(ctx, dial, addr, tlsCfg, nil, req)
}

// ProbeAuth is ProbeVia that authenticates the probe's connection with
// auth (quorum SASL; see PeerAuth), as the member's peer connections do.
func ProbeAuth(ctx context.Context, dial, addr string, tlsCfg *tls.Config, auth *PeerAuth, req []byte) ([]byte, error) {
	if len(req) > MaxProbeBytes {
		return nil, fmt.Errorf("raftnode: probe request of %d bytes over %d", len(req), MaxProbeBytes)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDialTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	c, err := probeAuth(auth, 0, addr, func() (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", dial)
		if err != nil {
			return nil, err
		}
		c = clientTLS(c, addr, tlsCfg)
		c.SetDeadline(deadline)
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	var hello [helloLen]byte
	copy(hello[:], helloMagic)
	binary.BigEndian.PutUint32(hello[8:], helloVersion)
	// cluster, sender and receiver 0: a probe
	if err := writeFrame(c, hello[:]); err != nil {
		return nil, err
	}
	ack, err := readFrame(c, nil, maxControlFrame)
	if err != nil {
		return nil, fmt.Errorf("probe handshake: %w", err)
	}
	if len(ack) == 0 || ack[0] != ackOK {
		return nil, fmt.Errorf("%w: peer refused the probe: %q", ErrHandshake, ack[min(1, len(ack)):])
	}
	if err := writeFrame(c, req); err != nil {
		return nil, err
	}
	ans, err := readFrame(c, nil, MaxProbeBytes)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("reading the probe's answer: %w", err)
	}
	return ans, nil
}
