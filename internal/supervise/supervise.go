// Package supervise runs one command as a child process whose life is bound
// to the supervisor's: it is what "zkgo lock" and "zkgo elect" use to run a
// command only while they hold a lock or leadership.
//
// On Unix systems the child runs in a process group of its own, so that a
// signal (Signal, Stop) reaches everything it started, grandchildren
// included (sh -c 'x &'). When the supervisor dies without cleaning up — a
// kill -9, a crash — two mechanisms stop the group:
//
//   - On Linux the child gets the kernel's parent-death signal (SIGKILL).
//     The kernel sends it when the thread that forked the child exits, not
//     the process, so Start forks from a goroutine locked to its OS thread
//     (runtime.LockOSThread, never unlocked) that stays alive, waiting for
//     the child, for as long as the child runs.
//   - The parent-death signal reaches only the child, not its own
//     children. With Options.Watchdog, Start first re-executes the
//     program as a small watchdog process that leads the child's process
//     group and holds the read end of a pipe whose only writer is the
//     supervisor. When the supervisor dies, for whatever reason, the pipe
//     reports end-of-file and the watchdog kills the whole group
//     (kill(-pgid, SIGKILL)), itself included. A program that uses the
//     watchdog must call RunWatchdogIfChild first thing in main (or in an
//     init function).
//
// Elsewhere (other operating systems) the package falls back to starting
// the command as a plain child and signalling that process alone.
package supervise

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Options configure Start.
type Options struct {
	// Watchdog starts the watchdog process described in the package
	// documentation (Unix only; ignored elsewhere). Start fails if the
	// watchdog does not come up.
	Watchdog bool
}

// Child is a running (or finished) supervised command.
type Child struct {
	cmd  *exec.Cmd
	pgid int // process group to signal; 0: signal the process only
	wd   *watchdog

	done    chan struct{} // closed once the command was reaped
	waitErr error         // cmd.Wait's error, set before done closes

	finishOnce sync.Once
}

// Start starts cmd as a supervised child. cmd must not have been started;
// its SysProcAttr, if set, is extended (process group, parent-death
// signal). The caller must eventually call Wait (after Stop, or when Done
// is closed) to reap what is left of the child's process group.
func Start(cmd *exec.Cmd, opts Options) (*Child, error) {
	if cmd.Process != nil {
		return nil, errors.New("supervise: command already started")
	}
	c := &Child{cmd: cmd, done: make(chan struct{})}
	if opts.Watchdog && watchdogSupported {
		wd, err := startWatchdog()
		if err != nil {
			return nil, err
		}
		c.wd = wd
	}
	pgid := 0
	if c.wd != nil {
		pgid = c.wd.pid
	}
	prepare(cmd, pgid)
	if err := startAndWait(cmd, func(err error) {
		c.waitErr = err
		close(c.done)
	}); err != nil {
		if c.wd != nil {
			c.wd.kill()
		}
		return nil, err
	}
	c.pgid = groupOf(cmd, pgid)
	return c, nil
}

// Pid returns the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Pgid returns the id of the child's process group (0 where there are no
// process groups).
func (c *Child) Pgid() int { return c.pgid }

// Done is closed when the child has exited (and was reaped).
func (c *Child) Done() <-chan struct{} { return c.done }

// Signal sends sig to the child's whole process group (to the child alone
// where there are no process groups). A watchdog in the group ignores
// every signal but SIGKILL.
func (c *Child) Signal(sig os.Signal) error {
	return signalGroup(c.cmd, c.pgid, sig)
}

// Stop stops the child: SIGTERM to its process group, then, if the child
// has not exited after grace, SIGKILL to the group. It returns once the
// child has exited, and reports whether SIGKILL was needed. Call Wait
// afterwards.
func (c *Child) Stop(grace time.Duration) (killed bool) {
	select {
	case <-c.done:
		return false
	default:
	}
	if grace <= 0 {
		c.Signal(killSignal)
		<-c.done
		return true
	}
	c.Signal(termSignal)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return false
	case <-t.C:
		c.Signal(killSignal)
		<-c.done
		return true
	}
}

// Wait waits for the child to exit, then kills whatever is left of its
// process group (processes it started in the background and left behind,
// and the watchdog) so that nothing it started outlives it, and returns
// the exit status: the exit code, or 128+n if the child was killed by
// signal n (as shells report it).
func (c *Child) Wait() int {
	<-c.done
	c.finishOnce.Do(func() {
		if c.pgid > 0 {
			c.Signal(killSignal)
		}
		if c.wd != nil {
			c.wd.finish()
		}
	})
	return c.ExitStatus()
}

// ExitStatus returns the child's exit status (as Wait does) once Done is
// closed, and -1 before.
func (c *Child) ExitStatus() int {
	select {
	case <-c.done:
	default:
		return -1
	}
	return exitStatus(c.cmd.ProcessState, c.waitErr)
}
