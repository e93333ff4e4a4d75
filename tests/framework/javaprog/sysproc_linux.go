//go:build linux

package javaprog

import "syscall"

// sysProcAttr makes the kernel kill the JVM if the Go process dies, and
// puts the JVM in a process group of its own, so that a terminal's Ctrl-C
// (SIGINT to the foreground group) reaches only the Go program, which
// then stops the JVM its own way.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
