//go:build !linux

package raftnode

import "time"

func preciseThread() {}

// preciseSleep is time.Sleep where nanosleep is not used.
func preciseSleep(d time.Duration) { time.Sleep(d) }
