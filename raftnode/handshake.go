package raftnode

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkgo/zkgo/internal/tlssniff"
)

// The accepting side of the peer handshake: TLS (or the first byte that
// tells it from plaintext), quorum SASL's auth frames (peerauth.go), the
// hello and its answer. The dialing side is dialOne (tcp.go).

// serverConn runs an accepted connection over TLS when the transport
// has ServerTLS: the handshake happens on the first read, under accept's
// deadline. With AcceptPlaintext, a connection whose first byte does not
// start a TLS handshake stays plaintext.
func (t *TCPTransport) serverConn(raw net.Conn) (net.Conn, error) {
	if t.cfg.ServerTLS == nil {
		return raw, nil
	}
	if !t.cfg.AcceptPlaintext {
		return tls.Server(raw, t.cfg.ServerTLS), nil
	}
	raw.SetReadDeadline(time.Now().Add(t.cfg.DialTimeout))
	c, isTLS, err := tlssniff.Detect(raw)
	if err != nil {
		return nil, fmt.Errorf("reading the first byte: %w", err)
	}
	if isTLS {
		return tls.Server(c, t.cfg.ServerTLS), nil
	}
	return c, nil
}

// accept reads and checks the hello and answers it. A hello that names
// receiver 0 is a probe (probe.go): it is answered here and the
// connection closed (from is 0).
func (t *TCPTransport) accept(c net.Conn) (from uint64, magic string, err error) {
	c.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	hello, err := readFrame(c, nil, maxAuthFrame)
	if err != nil {
		return 0, "", fmt.Errorf("reading hello: %w", err)
	}
	principal, authed := "", false
	if isAuthFrame(hello) {
		if principal, err = t.serveAuth(c, hello); err != nil {
			return 0, "", err
		}
		authed = true
		if hello, err = readFrame(c, nil, maxControlFrame); err != nil {
			return 0, "", fmt.Errorf("reading hello: %w", err)
		}
	} else if len(hello) > maxControlFrame {
		return 0, "", fmt.Errorf("reading hello: %w: %d bytes", errFrameTooLarge, len(hello))
	}
	requireAuth := t.cfg.Auth != nil && t.cfg.Auth.ServerRequire
	status, reason := byte(ackOK), ""
	detail := "" // for this member's log only
	id, cluster := t.id.Load(), t.cluster.Load()
	t.mu.Lock()
	started := t.started
	t.mu.Unlock()
	h, ok := parseHello(hello)
	if ok && h.magic == snapMagic2 && t.cfg.oldSnapStreams {
		ok = false
	}
	own := t.formation.Load()
	switch {
	case !ok:
		status, reason = ackBadHello, "bad hello"
	case requireAuth && !authed:
		status, reason = ackWrongMember, "this member requires ensemble members to authenticate (quorum.auth.serverRequireSasl=true); the peer did not"
	case h.to == 0 && h.magic == helloMagic:
		return 0, "", t.answerProbe(c)
	case !started || id == 0:
		status, reason = ackWrongMember, "not running raft yet"
	case h.cluster != cluster:
		// The reason names no identity: whoever dialed learns nothing
		// to forge a hello with. The members log theirs.
		status, reason = ackClusterMismatch, "another ensemble (the server.N lists differ: both members log which lines)"
		detail = fmt.Sprintf(" (this member's ensemble is %x, the peer's %x)", cluster, h.cluster)
		if t.cfg.ClusterMismatch != nil && h.from != 0 {
			t.cfg.ClusterMismatch(h.from, false)
		}
	case h.to != id:
		status, reason = ackWrongMember, fmt.Sprintf("member %x, not %x", id, h.to)
	case !formationAccepts(own, h.frm):
		status, reason = ackFormation, fmt.Sprintf("another formation of this ensemble: this member's formation is %s, the peer's %s (none: formed by a zkgo without formations; a member left over from before the ensemble was formed anew?)",
			FormationString(own), FormationString(h.frm))
		if t.cfg.FormationRefused != nil {
			t.cfg.FormationRefused(h.from, h.frm)
		}
	default:
		from = h.from
		if from == 0 || from == id {
			status, reason = ackBadHello, fmt.Sprintf("bad sender id %d", from)
		} else if t.cfg.Admit != nil {
			if err := t.cfg.Admit(from); err != nil {
				status, reason = ackWrongMember, err.Error()
			}
		}
		if status == ackOK && h.frm == FormationPending && h.instance != 0 && t.cfg.VerifyPending != nil {
			if err := t.cfg.VerifyPending(from, h.instance); err != nil {
				status, reason = ackFormation, err.Error()
			}
		}
		if authed && status == ackOK && t.cfg.Auth.Authorize != nil {
			if err := t.cfg.Auth.Authorize(from, principal); err != nil {
				status, reason = ackWrongMember, "quorum SASL: "+err.Error()
			}
		}
		if tc, ok := c.(*tls.Conn); ok && status == ackOK && t.cfg.VerifyPeer != nil {
			cs := tc.ConnectionState()
			if err := t.cfg.VerifyPeer(from, &cs); err != nil {
				status, reason = ackWrongMember, err.Error()
			}
		}
	}
	if err := writeFrame(c, append([]byte{status}, reason...)); err != nil {
		return 0, "", err
	}
	if status != ackOK {
		return 0, "", fmt.Errorf("%w: %s%s", ErrHandshake, reason, detail)
	}
	c.SetDeadline(time.Time{})
	return from, h.magic, nil
}

// Handshake constants; see TCPTransport.
const (
	helloMagic      = "zkgoraft"
	snapMagic       = "zkgosnap" // a connection that carries one snapshot (snapstream.go)
	snapMagic2      = "zkgosnp2" // the same, resumable (snapstream.go)
	helloVersion    = helloV1    // probes
	helloLen        = 8 + 4 + 8 + 8 + 8
	maxControlFrame = 1 << 10

	ackOK              = 0
	ackClusterMismatch = 1
	ackWrongMember     = 2
	ackBadHello        = 3
	ackFormation       = 4
)

// ErrHandshake means a peer connection was refused: wrong cluster, wrong
// member, or not a zkgo raft peer.
var ErrHandshake = errors.New("raftnode: peer handshake failed")

// refusedError is a dialed peer's refusal of the hello; it wraps
// ErrHandshake.
type refusedError struct {
	status []byte // the ack's status byte (none if the ack was empty)
	reason string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%v: peer refused the connection: %q", ErrHandshake, e.reason)
}

func (e *refusedError) Unwrap() error { return ErrHandshake }

// badHello reports whether err is a refusal of the hello itself: what a
// member of an older version answers to a hello it does not know.
func badHello(err error) bool {
	var re *refusedError
	return errors.As(err, &re) && len(re.status) == 1 && re.status[0] == ackBadHello
}
