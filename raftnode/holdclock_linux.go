package raftnode

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseThread makes this thread's sleeps end within about 1 µs of
// their time instead of the default 50 µs timer slack.
func preciseThread() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) }

// preciseSleep blocks this thread in the kernel for d (or less, if a
// signal interrupts it: the caller checks the time again).
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}
