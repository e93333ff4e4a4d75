//go:build unix

package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

const watchdogSupported = true

var (
	termSignal os.Signal = syscall.SIGTERM
	killSignal os.Signal = syscall.SIGKILL
)

// ForwardSignals are the signals a supervisor relays to its child (see
// signal.Notify). SIGINT, SIGTERM and SIGHUP also ask the supervisor
// itself to finish.
var ForwardSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// IsTerminating reports whether sig asks the process to end (SIGINT,
// SIGTERM, SIGHUP) rather than being a notification (SIGUSR1, ...).
func IsTerminating(sig os.Signal) bool {
	return sig == syscall.SIGINT || sig == syscall.SIGTERM || sig == syscall.SIGHUP || sig == syscall.SIGQUIT
}

// SignalNumber returns sig's number (for exit statuses of 128+n), or 0.
func SignalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}

// prepare puts the child in process group pgid (0: a new group led by the
// child) and, where the system has one, asks for the parent-death signal.
func prepare(cmd *exec.Cmd, pgid int) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = pgid
	setParentDeathSignal(cmd.SysProcAttr)
}

// startAndWait starts cmd from a goroutine locked to its OS thread and
// keeps that goroutine (and so the thread) waiting for the child until it
// exits; then it calls exited with Wait's error. The thread is never
// unlocked: Linux sends the parent-death signal when the thread that forked
// the child ends, and the Go runtime ends a thread whose goroutine exits
// while locked — which happens here only once the child was reaped — and
// never reuses a locked thread for other goroutines.
func startAndWait(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}

func groupOf(cmd *exec.Cmd, pgid int) int {
	if pgid != 0 {
		return pgid
	}
	return cmd.Process.Pid
}

func signalGroup(cmd *exec.Cmd, pgid int, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok || pgid <= 0 {
		return cmd.Process.Signal(sig)
	}
	err := syscall.Kill(-pgid, s)
	if errors.Is(err, syscall.ESRCH) {
		return nil // the group is empty: nothing left to signal
	}
	return err
}

func exitStatus(ps *os.ProcessState, waitErr error) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// The watchdog protocol: the supervisor re-executes its own binary with
// watchdogEnv set, with the read end of the control pipe as file
// descriptor 3 and a ready pipe as standard output, in a new process group
// (which the child then joins). The watchdog ignores the catchable
// signals, writes "ready\n" and reads the control pipe; when the read
// returns (end-of-file: every write end is closed, so the supervisor
// exited) it kills its own process group. The supervisor never writes to
// the pipe; on a normal end it kills the group itself (watchdog included)
// before closing its end.
const (
	watchdogEnv   = "ZKGO_SUPERVISE_WATCHDOG"
	watchdogMagic = "1"
	watchdogReady = "ready\n"
)

type watchdog struct {
	pid  int
	ctl  *os.File // the control pipe's write end; only the supervisor has it
	done chan struct{}
}

func startWatchdog() (*watchdog, error) {
	self, err := selfExecutable()
	if err != nil {
		return nil, fmt.Errorf("supervise: watchdog: %w", err)
	}
	// os.Pipe sets close-on-exec on both ends: the supervised command
	// never inherits them.
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervise: watchdog: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("supervise: watchdog: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        self,
		Args:        []string{os.Args[0] + " (watchdog)"},
		Env:         []string{watchdogEnv + "=" + watchdogMagic},
		ExtraFiles:  []*os.File{ctlR},
		Stdout:      readyW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	ctlR.Close()
	readyW.Close()
	if err != nil {
		ctlW.Close()
		readyR.Close()
		return nil, fmt.Errorf("supervise: start watchdog: %w", err)
	}
	wd := &watchdog{pid: cmd.Process.Pid, ctl: ctlW, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(wd.done)
	}()
	readyR.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, len(watchdogReady))
	_, err = io.ReadFull(readyR, buf)
	readyR.Close()
	if err != nil || string(buf) != watchdogReady {
		wd.kill()
		return nil, errors.New("supervise: the watchdog did not start (the program must call supervise.RunWatchdogIfChild at start-up)")
	}
	return wd, nil
}

// kill kills the watchdog's group and reaps the watchdog.
func (w *watchdog) kill() {
	syscall.Kill(-w.pid, syscall.SIGKILL)
	w.finish()
}

// finish closes the control pipe and waits for the watchdog to exit (the
// caller has killed its group, or the watchdog kills it now).
func (w *watchdog) finish() {
	w.ctl.Close()
	<-w.done
}

// RunWatchdogIfChild runs the watchdog and exits if this process was
// started as a watchdog by Start (Options.Watchdog); otherwise it returns
// at once. Programs that use the watchdog call it first in main or in an
// init function.
func RunWatchdogIfChild() {
	if os.Getenv(watchdogEnv) != watchdogMagic {
		return
	}
	os.Exit(watchdogMain())
}

func watchdogMain() int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	pid := syscall.Getpid()
	if syscall.Getpgrp() != pid {
		return 1 // not leading a group of its own: never kill someone else's
	}
	ctl := os.NewFile(3, "supervise-control")
	if ctl == nil {
		return 1
	}
	if _, err := os.Stdout.WriteString(watchdogReady); err != nil {
		return 1
	}
	os.Stdout.Close()
	io.Copy(io.Discard, ctl) // returns when the supervisor is gone
	syscall.Kill(-pid, syscall.SIGKILL)
	return 0
}
