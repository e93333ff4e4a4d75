package supervise

import (
	"os"
	"syscall"
)

// setParentDeathSignal makes the kernel SIGKILL the child when the thread
// that forked it ends (see startAndWait).
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// selfExecutable returns a path that executes this very binary, even if
// its file was replaced or deleted since it started.
func selfExecutable() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}
