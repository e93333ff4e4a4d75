// Package tlssniff tells a TLS connection from a plaintext one by its
// first byte, for ports that take both (ZooKeeper's client.portUnification
// on the client port, portUnification on the peer port).
//
// A TLS client's first byte is a handshake record's type, 0x16. Neither
// ZooKeeper's client protocol (a frame length's high byte, or a
// four-letter word) nor zkgo's peer protocol (a frame length's high byte:
// a hello is 36 bytes) starts with it.
package tlssniff

import (
	"io"
	"net"
)

// RecordHandshake is the first byte of a TLS ClientHello.
const RecordHandshake = 0x16

// Detect reads c's first byte and reports whether it starts a TLS
// handshake. The returned connection gives that byte back before the rest
// of c, so it can be handed to tls.Server or read as plaintext. The
// caller sets c's deadline first: Detect blocks until a byte arrives.
func Detect(c net.Conn) (conn net.Conn, isTLS bool, err error) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return nil, false, err
	}
	return &prefixConn{Conn: c, first: b[0], pending: true}, b[0] == RecordHandshake, nil
}

// prefixConn gives back the byte Detect read before the rest of the
// connection.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool // touched by the reading goroutine only
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.pending && len(b) > 0 {
		p.pending = false
		b[0] = p.first
		return 1, nil
	}
	return p.Conn.Read(b)
}
