//go:build linux

package torture

import "syscall"

// sysProcAttr makes the kernel kill a member if the harness dies, so an
// interrupted run leaves no servers behind holding ports and directories.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
