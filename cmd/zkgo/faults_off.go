//go:build !zkgofaults

package main

import (
	"log/slog"

	"github.com/zkgo/zkgo/server"
)

// installFaults does nothing: this zkgo was built without the zkgofaults
// build tag, so it holds no fault-injection code, and the variables that
// a build with the tag reads (ZKGO_FAULT_PEER_VIA, ZKGO_FAULT_DISK; see
// faults_on.go) are ignored.
func installFaults(*server.Options, *slog.Logger) error { return nil }
