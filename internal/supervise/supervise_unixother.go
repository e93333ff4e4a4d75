//go:build unix && !linux

package supervise

import (
	"os"
	"syscall"
)

// setParentDeathSignal: there is no parent-death signal outside Linux; the
// watchdog alone stops the process group when the supervisor dies.
func setParentDeathSignal(*syscall.SysProcAttr) {}

func selfExecutable() (string, error) { return os.Executable() }
