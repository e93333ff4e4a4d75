package server

import (
	"crypto/tls"
	"io"
	"net"

	"github.com/zkgo/zkgo/proto"
)

// tlsRecordHandshake is the first byte of a TLS ClientHello (a handshake
// record); no ZooKeeper request or four-letter word starts with it (a
// frame length's high byte would make a 360 MiB frame).
const tlsRecordHandshake = 0x16

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
		var b [1]byte
		if _, err := io.ReadFull(c.raw, b[:]); err != nil {
			return false
		}
		pc := &prefixConn{Conn: c.raw, first: b[0], pending: true}
		if b[0] != tlsRecordHandshake {
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

// prefixConn gives back the byte a unified port read to tell TLS from
// plaintext before the rest of the connection.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool // reader goroutine only
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.pending && len(b) > 0 {
		p.pending = false
		b[0] = p.first
		return 1, nil
	}
	return p.Conn.Read(b)
}
