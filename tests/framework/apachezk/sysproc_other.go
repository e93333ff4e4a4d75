//go:build !linux

package apachezk

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
