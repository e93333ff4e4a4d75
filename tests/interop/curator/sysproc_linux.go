//go:build linux

package curator

import "syscall"

// sysProcAttr makes the kernel kill the check JVM if the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
