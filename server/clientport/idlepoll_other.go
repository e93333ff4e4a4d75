//go:build !linux

package clientport

import (
	"errors"
	"log/slog"
	"syscall"
)

// idlePoller parks idle connections on Linux only (idlepoll_linux.go);
// elsewhere every connection keeps its reader.
type idlePoller struct{}

func newIdlePoller(func(c *Conn), *slog.Logger) (*idlePoller, error) {
	return nil, errors.New("parking idle connections needs Linux")
}

func (p *idlePoller) park(*Conn, syscall.RawConn) bool { return false }
func (p *idlePoller) forget(*Conn)                     {}
func (p *idlePoller) count() int                       { return 0 }
func (p *idlePoller) run()                             {}
func (p *idlePoller) stop()                            {}
