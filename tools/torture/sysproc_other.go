//go:build !linux

package torture

import "syscall"

// sysProcAttr: no parent-death signal outside Linux.
func sysProcAttr() *syscall.SysProcAttr { return nil }
