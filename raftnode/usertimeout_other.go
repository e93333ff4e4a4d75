//go:build !linux

package raftnode

import (
	"syscall"
	"time"
)

// userTimeout sets nothing outside Linux (see usertimeout_linux.go).
func userTimeout(time.Duration) func(network, address string, c syscall.RawConn) error { return nil }
