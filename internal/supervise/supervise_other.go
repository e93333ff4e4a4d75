//go:build !unix

package supervise

import (
	"os"
	"os/exec"
)

// Outside Unix there are no process groups to signal and no watchdog: the
// child is a plain child process, signalled alone, and Stop kills it (there
// is no SIGTERM to send first).

const watchdogSupported = false

var (
	termSignal os.Signal = os.Kill
	killSignal os.Signal = os.Kill
)

// ForwardSignals are the signals a supervisor relays to its child.
var ForwardSignals = []os.Signal{os.Interrupt}

// IsTerminating reports whether sig asks the process to end.
func IsTerminating(sig os.Signal) bool { return sig == os.Interrupt || sig == os.Kill }

// SignalNumber returns 2 for os.Interrupt, 9 for os.Kill, else 0.
func SignalNumber(sig os.Signal) int {
	switch sig {
	case os.Interrupt:
		return 2
	case os.Kill:
		return 9
	}
	return 0
}

func prepare(*exec.Cmd, int) {}

func startAndWait(cmd *exec.Cmd, exited func(error)) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { exited(cmd.Wait()) }()
	return nil
}

func groupOf(*exec.Cmd, int) int { return 0 }

func signalGroup(cmd *exec.Cmd, _ int, sig os.Signal) error {
	if sig == os.Interrupt {
		// Windows cannot deliver an interrupt to another process.
		sig = os.Kill
	}
	return cmd.Process.Signal(sig)
}

func exitStatus(ps *os.ProcessState, _ error) int {
	if ps == nil {
		return 1
	}
	return ps.ExitCode()
}

type watchdog struct{ pid int }

func startWatchdog() (*watchdog, error) { return nil, nil }
func (*watchdog) kill()                 {}
func (*watchdog) finish()               {}

// RunWatchdogIfChild returns at once: there is no watchdog here.
func RunWatchdogIfChild() {}
