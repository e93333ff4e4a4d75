package raftnode

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"
)

// Peer authentication (ZooKeeper's quorum SASL). A dialer that
// authenticates sends, before its hello, an auth frame:
//
//	"zkgoauth"  8 bytes
//	len         1 byte: the length of the mechanism's name
//	mechanism   its name ("DIGEST-MD5", "GSSAPI")
//	token       the rest: the mechanism's initial token (maybe empty)
//
// and the acceptor answers each token with a frame: a status byte and a
// token (or, on failure, a reason):
//
//	authContinue  the acceptor's challenge; the dialer answers with a frame
//	              holding its next token
//	authOK        authenticated; the token is the acceptor's last one (its
//	              proof, for mutual authentication), maybe empty
//	authFail      refused; the reason
//	authNone      this member does not authenticate peers (quorum SASL is
//	              off); the reason
//
// then the hello follows as on any connection. A member of an older
// release answers the auth frame as a bad hello: to the dialer, that is
// authNone. The exchange runs under the handshake's deadline, in at most
// maxAuthRounds round trips, each frame at most maxAuthFrame bytes.
//
// The rolling switch-on of ZooKeeper's guide works because each side
// only insists when told to: with PeerAuth set, a member authenticates
// to acceptors that can (it dials again without the auth frame after
// authNone, unless LearnerRequire) and authenticates dialers that offer
// it (and lets in those that do not, unless ServerRequire). Probes and
// snapshot streams are connections like the others: authenticated alike.
type PeerAuth struct {
	// NewClient starts the dialer's side of an exchange with member to,
	// dialed at addr: the mechanism's name and its exchange. Nil: this
	// member does not authenticate to its peers.
	NewClient func(to uint64, addr string) (mech string, c AuthClient, err error)
	// LearnerRequire (quorum.auth.learnerRequireSasl) refuses a peer that
	// does not authenticate this member's connection, or does not prove
	// itself back (mutual authentication) where the mechanism can.
	LearnerRequire bool
	// NewServer starts the acceptor's side of an exchange in mechanism
	// mech. Nil: this member does not authenticate dialers.
	NewServer func(mech string) (AuthServer, error)
	// ServerRequire (quorum.auth.serverRequireSasl) refuses dialers that
	// do not authenticate (probes included).
	ServerRequire bool
	// Authorize, if set, checks that principal (an authenticated dialer)
	// may be member from, the sender its hello names. Its error refuses
	// the connection.
	Authorize func(from uint64, principal string) error
}

// AuthClient is the dialer's side of a SASL exchange (internal/sasl's
// DIGEST-MD5 client, internal/krb's GSSAPI initiator).
type AuthClient interface {
	// Start returns the initial token.
	Start() ([]byte, error)
	// Next takes the acceptor's token and returns the next one to send.
	Next(token []byte) ([]byte, error)
	// Done reports whether the acceptor proved itself (mutual
	// authentication).
	Done() bool
}

// AuthServer is the acceptor's side of a SASL exchange.
type AuthServer interface {
	// Next takes the dialer's token and returns the one to send back.
	Next(token []byte) ([]byte, error)
	// Done reports whether the dialer is authenticated.
	Done() bool
	// Principal is the authenticated name, once Done.
	Principal() string
}

const (
	authMagic     = "zkgoauth"
	maxAuthFrame  = 64 << 10 // a Kerberos AP-REQ with a large PAC fits
	maxAuthRounds = 8

	authContinue = 0x10
	authOK       = 0x11
	authFail     = 0x12
	authNone     = 0x13
)

// errNoPeerAuth is a dialed peer's answer that it does not authenticate
// peers; the dialer dials again without authenticating, unless
// LearnerRequire.
var errNoPeerAuth = errors.New("the peer does not authenticate ensemble members (quorum SASL is off there, or it runs an older zkgo)")

// authenticate runs the dialer's side on c, before the hello. It returns
// errNoPeerAuth (wrapped) if the acceptor does not authenticate peers.
func (pa *PeerAuth) authenticate(c net.Conn, to uint64, addr string) error {
	mech, cl, err := pa.NewClient(to, addr)
	if err != nil {
		return fmt.Errorf("quorum SASL: %w", err)
	}
	tok, err := cl.Start()
	if err != nil {
		return fmt.Errorf("quorum SASL %s: %w", mech, err)
	}
	if len(mech) == 0 || len(mech) > 255 {
		return fmt.Errorf("quorum SASL: bad mechanism name %q", mech)
	}
	first := append(append(append([]byte(authMagic), byte(len(mech))), mech...), tok...)
	if len(first) > maxAuthFrame {
		return fmt.Errorf("quorum SASL %s: initial token of %d bytes", mech, len(tok))
	}
	if err := writeFrame(c, first); err != nil {
		return err
	}
	for range maxAuthRounds {
		ans, err := readFrame(c, nil, maxAuthFrame)
		if err != nil {
			return fmt.Errorf("quorum SASL: reading the peer's answer: %w", err)
		}
		if len(ans) == 0 {
			return errors.New("quorum SASL: empty answer")
		}
		switch st, body := ans[0], ans[1:]; st {
		case authContinue:
			tok, err := cl.Next(body)
			if err != nil {
				return fmt.Errorf("quorum SASL %s: %w", mech, err)
			}
			if err := writeFrame(c, tok); err != nil {
				return err
			}
		case authOK:
			// The acceptor's last token (DIGEST-MD5's rspauth), or
			// none: GSSAPI's initiator is told of the success so.
			if !cl.Done() {
				if _, err := cl.Next(body); err != nil {
					return fmt.Errorf("quorum SASL %s: the peer's proof: %w", mech, err)
				}
			}
			if pa.LearnerRequire && !cl.Done() {
				return fmt.Errorf("quorum SASL %s: the peer did not prove itself (quorum.auth.learnerRequireSasl=true)", mech)
			}
			return nil
		case authFail:
			return &refusedError{status: []byte{ackWrongMember}, reason: "quorum SASL: " + string(body)}
		case authNone, ackBadHello:
			return fmt.Errorf("%w: %s", errNoPeerAuth, body)
		default:
			return fmt.Errorf("quorum SASL: unknown answer %#x", st)
		}
	}
	return fmt.Errorf("quorum SASL %s: no outcome after %d rounds", mech, maxAuthRounds)
}

// isAuthFrame reports whether a connection's first frame is an auth
// frame.
func isAuthFrame(b []byte) bool { return bytes.HasPrefix(b, []byte(authMagic)) }

// serveAuth runs the acceptor's side of the exchange whose first frame
// is first, and returns the authenticated principal. It answers a
// refusal itself; its error closes the connection.
func (t *TCPTransport) serveAuth(c net.Conn, first []byte) (string, error) {
	pa := t.cfg.Auth
	if pa == nil || pa.NewServer == nil {
		writeFrame(c, append([]byte{authNone}, "this member does not authenticate ensemble members (quorum.auth.enableSasl is off)"...))
		return "", errors.New("a peer offered quorum SASL, which is off here")
	}
	fail := func(err error) (string, error) {
		writeFrame(c, append([]byte{authFail}, truncate(err.Error(), maxControlFrame)...))
		return "", fmt.Errorf("quorum SASL: %w", err)
	}
	rest := first[len(authMagic):]
	if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
		return fail(errors.New("bad auth frame"))
	}
	mech, tok := string(rest[1:1+int(rest[0])]), rest[1+int(rest[0]):]
	srv, err := pa.NewServer(mech)
	if err != nil {
		return fail(err)
	}
	for range maxAuthRounds {
		out, err := srv.Next(tok)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", mech, err))
		}
		if srv.Done() {
			if err := writeFrame(c, append([]byte{authOK}, out...)); err != nil {
				return "", err
			}
			return srv.Principal(), nil
		}
		if err := writeFrame(c, append([]byte{authContinue}, out...)); err != nil {
			return "", err
		}
		if tok, err = readFrame(c, nil, maxAuthFrame); err != nil {
			return "", fmt.Errorf("quorum SASL: reading the peer's token: %w", err)
		}
	}
	return fail(fmt.Errorf("%s: no outcome after %d rounds", mech, maxAuthRounds))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// probeAuth authenticates a probe's connection as dialAs does a peer
// connection: with pa set, it dials, authenticates, and, if the member
// does not authenticate peers (and pa does not require it), dials again
// without. dial makes a fresh connection, with the deadline set.
func probeAuth(pa *PeerAuth, to uint64, addr string, dial func() (net.Conn, error)) (net.Conn, error) {
	c, err := dial()
	if err != nil || pa == nil || pa.NewClient == nil {
		return c, err
	}
	err = pa.authenticate(c, to, addr)
	if err == nil {
		return c, nil
	}
	c.Close()
	if errors.Is(err, errNoPeerAuth) && !pa.LearnerRequire {
		return dial()
	}
	return nil, err
}

// plainPeerFor is how long a peer that answered it does not authenticate
// ensemble members is dialed without trying (it may be switched on).
const plainPeerFor = 30 * time.Second

// plainPeer reports whether addr answered recently that it does not
// authenticate peers.
func (t *TCPTransport) plainPeer(addr string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	until, ok := t.plain[addr]
	return ok && time.Now().Before(until)
}

func (t *TCPTransport) setPlainPeer(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.plain == nil || len(t.plain) > 1024 {
		t.plain = map[string]time.Time{}
	}
	t.plain[addr] = time.Now().Add(plainPeerFor)
}
