//go:build linux

package apachezk

import "syscall"

// sysProcAttr makes the kernel kill the JVM if the test binary dies without
// calling Stop (for example on a test timeout panic).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
