//go:build !linux

package javaprog

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
