package clientport

import (
	"crypto/tls"
	"crypto/x509"
	"net"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/internal/tlssniff"
	"github.com/zkgo/zkgo/internal/x500"
	"github.com/zkgo/zkgo/proto"
)

// startTLS runs the TLS handshake of a connection on the TLS port, or on a
// unified port when its first byte starts one, under the handshake
// deadline, and sets c.nc. A client certificate becomes the connection's
// x509 identity. It returns false if the connection must close.
func (c *Conn) startTLS() bool {
	if cc, ok := c.raw.(consoleConn); ok && cc.cert != nil {
		// The console's session for an HTTPS client whose certificate
		// the admin port verified (adminhttp.VerifiedCert): its identity, as if
		// the client had presented it here.
		c.certIDs = c.s.X509IDs(cc.cert, string(cc.remote))
		c.addIDs(c.certIDs)
		return true
	}
	cfg := c.s.opts.TLS
	if cfg == nil || !c.secure && !c.s.opts.PortUnification {
		return true
	}
	conn := c.raw
	if !c.secure {
		pc, isTLS, err := tlssniff.Detect(c.raw)
		if err != nil {
			return false
		}
		if !isTLS {
			c.nc = pc // plaintext on the unified port
			c.plainUnified = true
			return true
		}
		conn = pc
	}
	tc := tls.Server(conn, cfg)
	c.s.stats.TLSHandshakes.Add(1)
	err := tc.Handshake()
	c.s.stats.TLSHandshakes.Add(-1)
	if err != nil {
		c.s.stats.AuthFailed.Add(1)
		c.s.log.Info("closing connection: TLS handshake failed", "remote", c.raw.RemoteAddr().String(), "err", err)
		return false
	}
	c.nc = tc
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		c.mtls = true
		c.certIDs = c.s.X509IDs(certs[0], c.raw.RemoteAddr().String())
		c.addIDs(c.certIDs)
	}
	return true
}

// X509IDs are the identities ZooKeeper's X509AuthenticationProvider gives
// a verified client certificate: "super" (whose user whoAmI does not
// show) if its subject is the configured super user, then "x509:<subject>",
// the subject formatted as Java's X500Principal.getName() (RFC 2253, most
// specific first), so that it matches the ACLs Java writes. remote is the
// client's address, for the log.
func (s *Port) X509IDs(cert *x509.Certificate, remote string) []proto.Id {
	subject, err := x500.Name(cert.RawSubject)
	if err != nil {
		// crypto/x509 parsed it, encoding/asn1 does not: a name no ACL
		// written by Java can match; Go's rendering is the best left.
		subject = cert.Subject.String()
		s.log.Warn("client certificate subject not understood; using Go's rendering as its x509 identity",
			"remote", remote, "subject", subject, "err", err)
	}
	var ids []proto.Id
	if su := s.opts.X509SuperUser; su != "" && su == subject {
		ids = append(ids, proto.Id{Scheme: acl.SchemeSuper, ID: subject})
	}
	return append(ids, proto.Id{Scheme: acl.SchemeX509, ID: subject})
}

// addIDs adds ids the connection does not hold yet (ZooKeeper keeps a
// connection's identities in a set). Reader goroutine only.
func (c *Conn) addIDs(ids []proto.Id) {
	cur := *c.auth.Load()
	next := make([]proto.Id, 0, len(cur)+len(ids))
	next = append(next, cur...)
	for _, id := range ids {
		dup := false
		for _, have := range next {
			if have == id {
				dup = true
				break
			}
		}
		if !dup {
			next = append(next, id)
		}
	}
	c.auth.Store(&next)
}

// consoleConn is the server's end of an in-process console connection:
// a pipe whose remote address is the HTTP client's (or the console's anonymous address).
type consoleConn struct {
	net.Conn
	remote consoleAddr
	cert   *x509.Certificate // verified by the admin port; nil without one
}

func (c consoleConn) RemoteAddr() net.Addr { return c.remote }

// consoleAddr is an in-process connection's remote address.
type consoleAddr string

func (consoleAddr) Network() string  { return "tcp" }
func (a consoleAddr) String() string { return string(a) }

// ServeConsoleConn serves nc, the server's end of an in-process console
// session, as an accepted connection (limits, maxClientCnxns per address,
// cons, the ip identity): remote is the HTTP client's address, cert the
// client certificate the admin port verified (nil without one), which
// becomes the session's x509 identity.
func (s *Port) ServeConsoleConn(nc net.Conn, remote string, cert *x509.Certificate) {
	s.newConn(consoleConn{Conn: nc, remote: consoleAddr(remote), cert: cert}, false)
}
