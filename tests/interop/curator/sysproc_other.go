//go:build !linux

package curator

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
