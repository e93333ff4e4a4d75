package raftnode

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// userTimeout returns a dialer Control that sets TCP_USER_TIMEOUT: the
// kernel closes a connection whose sent data stays unacknowledged for d.
// A peer whose address vanished (a machine or pod gone, a black-holed
// route) never answers with a reset, and writes into the socket buffer
// would go on succeeding for the quarter of an hour TCP retransmits;
// with it, the connection fails after d and the transport dials again.
func userTimeout(d time.Duration) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
		})
		if err != nil {
			return err
		}
		return serr
	}
}
