//go:build unix

package server

import "syscall"

func maxFDs() int64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return -1
	}
	return int64(rl.Cur)
}
