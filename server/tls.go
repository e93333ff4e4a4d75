package server

import (
	"crypto/tls"

	"github.com/zkgo/zkgo/internal/tlssniff"
	"github.com/zkgo/zkgo/proto"
)

// startTLS runs the TLS handshake of a connection on the TLS port, or on a
// unified port when its first byte starts one, under the handshake
// deadline, and sets c.nc. A client certificate becomes the connection's
// x509 identity. It returns false if the connection must close.
func (c *Conn) startTLS() bool {
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
			return true
		}
		conn = pc
	}
	tc := tls.Server(conn, cfg)
	if err := tc.Handshake(); err != nil {
		c.s.log.Info("closing connection: TLS handshake failed", "remote", c.raw.RemoteAddr().String(), "err", err)
		return false
	}
	c.nc = tc
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
		// ZooKeeper's X509AuthenticationProvider: the subject's
		// distinguished name, RFC 2253, most specific first.
		subject := certs[0].Subject.String()
		ids := append([]proto.Id(nil), *c.auth.Load()...)
		ids = append(ids, proto.Id{Scheme: "x509", ID: subject})
		if su := c.s.opts.X509SuperUser; su != "" && su == subject {
			ids = append(ids, proto.Id{Scheme: "super", ID: subject})
		}
		c.auth.Store(&ids)
	}
	return true
}
