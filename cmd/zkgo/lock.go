package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/cmd/zkgo/internal/tlsflags"
	"github.com/zkgo/zkgo/internal/supervise"
	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/zk"
)

// "zkgo lock" and "zkgo elect" run a command under a supervisor
// (internal/supervise) while holding a lock or leadership. Their exit
// statuses:
const (
	exitConn     = 1   // could not connect, or the session was lost while waiting
	exitUsage    = 2   // bad flags or arguments
	exitWait     = 3   // lock: -wait expired before the lock was acquired
	exitLost     = 4   // the lock or leadership was lost and the command was stopped
	exitNoExec   = 126 // the command exists but cannot be run
	exitNotFound = 127 // the command was not found
)

// maxGrace caps the default grace period between SIGTERM and SIGKILL.
const maxGrace = 10 * time.Second

func init() {
	// The supervisor re-executes this binary as its watchdog (see package
	// supervise); such a process runs the watchdog and exits here.
	supervise.RunWatchdogIfChild()
}

// runner holds what "zkgo lock" and "zkgo elect" share: the connection
// flags, the grace period and the signal handling.
type runner struct {
	name    string // "lock" or "elect", for messages
	server  string
	timeout time.Duration
	grace   time.Duration // -grace; < 0: automatic
	tls     *tls.Config   // -tls-*, -client-configuration; nil: plaintext
	sigs    chan os.Signal
}

// connFlags registers -server, -timeout and -grace on fs; finish parses
// their values into r after fs.Parse.
func (r *runner) connFlags(fs *flag.FlagSet) (finish func() bool) {
	server := fs.String("server", "127.0.0.1:2181", "servers to connect to: `host:port[,host:port...][/chroot]`")
	timeout := fs.String("timeout", "30000", "session timeout: milliseconds (as zkCli) or a Go duration such as 30s")
	tlsFlags := tlsflags.AddClientFlags(fs)
	grace := fs.String("grace", "", "time between SIGTERM and SIGKILL when the command must stop (`duration`; default and maximum: a third of the session timeout minus a margin, at most 10s)")
	return func() bool {
		r.server = strings.TrimSpace(*server)
		if r.server == "" {
			r.errorf("-server is empty")
			return false
		}
		to, err := parseSessionTimeout(*timeout)
		if err != nil {
			r.errorf("-timeout: %v", err)
			return false
		}
		r.timeout = to
		cfg, warnings, err := tlsFlags.Config()
		for _, w := range warnings {
			r.errorf("%s", w)
		}
		if err != nil {
			r.errorf("TLS: %v", err)
			return false
		}
		r.tls = cfg
		r.grace = -1
		if *grace != "" {
			g, err := time.ParseDuration(*grace)
			if err != nil || g < 0 {
				r.errorf("-grace: want a duration such as 500ms, not %q", *grace)
				return false
			}
			r.grace = g
		}
		return true
	}
}

func (r *runner) errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "zkgo %s: %s\n", r.name, fmt.Sprintf(format, args...))
}

// parseSessionTimeout reads -timeout: an integer number of milliseconds
// (zkCli's form) or a Go duration such as "30s".
func parseSessionTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d := time.Duration(0)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > int64(24*time.Hour/time.Millisecond) {
			return 0, fmt.Errorf("too large: %q", s)
		}
		d = time.Duration(n) * time.Millisecond
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("want milliseconds (30000) or a duration (30s), not %q", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive: %q", s)
	}
	return d, nil
}

// splitCommand splits the positional arguments "PATH [--] COMMAND ARGS..."
func splitCommand(args []string) (path string, argv []string, err error) {
	if len(args) == 0 {
		return "", nil, errors.New("missing PATH")
	}
	path, argv = args[0], args[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if err := checkPath(path); err != nil {
		return "", nil, err
	}
	if len(argv) == 0 {
		return "", nil, errors.New("missing COMMAND (after PATH and --)")
	}
	return path, argv, nil
}

func checkPath(path string) error {
	if !strings.HasPrefix(path, "/") || path == "/" || strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
		return fmt.Errorf("invalid path %q: want an absolute znode path such as /app/lock", path)
	}
	return nil
}

// command builds the exec.Cmd for argv; a command that cannot be found
// is reported (with status 127 or 126) before anything is acquired.
func (r *runner) command(argv []string) (*exec.Cmd, int) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		r.errorf("%v", cmd.Err)
		if errors.Is(cmd.Err, exec.ErrNotFound) || errors.Is(cmd.Err, os.ErrNotExist) {
			return nil, exitNotFound
		}
		return nil, exitNoExec
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd, 0
}

// notify starts catching the signals that are forwarded to the command.
func (r *runner) notify() {
	r.sigs = make(chan os.Signal, 8)
	signal.Notify(r.sigs, supervise.ForwardSignals...)
}

// untilSignal returns a context cancelled by the first terminating signal
// (SIGINT, SIGTERM, SIGHUP), and a function that stops watching and
// returns that signal (nil if none came).
func (r *runner) untilSignal(parent context.Context) (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	got := make(chan os.Signal, 1)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case s := <-r.sigs:
				if supervise.IsTerminating(s) {
					got <- s
					cancel()
					return
				}
			case <-stop:
				return
			}
		}
	}()
	return ctx, func() os.Signal {
		close(stop)
		<-done
		cancel()
		select {
		case s := <-got:
			return s
		default:
			return nil
		}
	}
}

// connect opens a session, waiting at most the session timeout.
func (r *runner) connect(ctx context.Context) (*zk.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	conn, err := zk.Connect(cctx, r.server,
		zk.WithSessionTimeout(r.timeout),
		zk.WithTLS(r.tls),
		zk.WithConnectRetry(zk.UntilElapsed{Max: r.timeout, Delay: 100 * time.Millisecond}))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if cctx.Err() != nil {
			return nil, fmt.Errorf("cannot connect to %s: no server answered within %v", r.server, r.timeout)
		}
		return nil, fmt.Errorf("cannot connect to %s: %v", r.server, err)
	}
	return conn, nil
}

// graceBound is the longest grace period that still ends before the
// server can expire a session that this client saw as suspended: under the
// strict policy a lost connection is noticed when reads have timed out, at
// two thirds of the session timeout, so a third of it remains; the margin
// covers network delay and scheduling.
func graceBound(sessionTimeout time.Duration) time.Duration {
	margin := max(100*time.Millisecond, sessionTimeout/10)
	return max(sessionTimeout/3-margin, 0).Truncate(time.Millisecond)
}

// graceFor returns the grace period to use with the negotiated session
// timeout, clamping -grace (with a warning) to graceBound.
func (r *runner) graceFor(conn *zk.Conn) time.Duration {
	to := conn.SessionTimeout()
	if to <= 0 {
		to = r.timeout
	}
	bound := graceBound(to)
	if r.grace < 0 {
		return min(bound, maxGrace)
	}
	if r.grace > bound {
		r.errorf("warning: -grace %v is longer than the safe bound %v for the negotiated session timeout %v (another process could be granted the %s before the command is stopped); using %v",
			r.grace, bound, to, r.held(), bound)
		return bound
	}
	return r.grace
}

func (r *runner) held() string {
	if r.name == "elect" {
		return "leadership"
	}
	return "lock"
}

// outcome is how a supervised run ended.
type outcome struct {
	status int       // the command's exit status
	lost   bool      // the grant was lost and the command stopped
	sig    os.Signal // a terminating signal zkgo received (and forwarded)
}

// supervise starts cmd with env added, while g is held, and waits for it to
// end: by itself (its status), or because g was lost (the command is
// stopped: SIGTERM to its process group, SIGKILL after grace). Signals to
// zkgo are forwarded to the command's process group.
func (r *runner) supervise(cmd *exec.Cmd, env []string, g *recipe.Grant, grace time.Duration) (outcome, error) {
	cmd.Env = append(os.Environ(), env...)
	child, err := supervise.Start(cmd, supervise.Options{Watchdog: true})
	if err != nil {
		return outcome{}, err
	}
	var out outcome
	for {
		select {
		case <-child.Done():
			out.status = child.Wait()
			return out, nil
		case s := <-r.sigs:
			if supervise.IsTerminating(s) && out.sig == nil {
				out.sig = s
			}
			child.Signal(s)
		case <-g.Done():
			r.errorf("lost the %s on %s (%s); stopping the command (pid %d, grace %v)", r.held(), g.Path(), lossReason(g.Err()), child.Pid(), grace)
			killed := child.Stop(grace)
			out.status = child.Wait()
			out.lost = true
			if killed {
				r.errorf("the command did not exit within %v of SIGTERM: killed", grace)
			}
			return out, nil
		}
	}
}

func lossReason(err error) string {
	switch {
	case errors.Is(err, recipe.ErrSuspended):
		return "connection to the server suspended"
	case errors.Is(err, zk.ErrSessionExpired):
		return "session expired"
	case errors.Is(err, recipe.ErrNodeDeleted):
		return "its node was deleted"
	case errors.Is(err, zk.ErrClosing):
		return "connection closed"
	case err == nil:
		return "unknown reason"
	}
	return err.Error()
}

func sessionGone(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing)
}

func defaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// signalStatus is the conventional exit status after signal s: 128+n.
func signalStatus(s os.Signal) int {
	if n := supervise.SignalNumber(s); n > 0 {
		return 128 + n
	}
	return 1
}

func runLock(args []string) int {
	r := &runner{name: "lock"}
	fs := flag.NewFlagSet("lock", flag.ContinueOnError)
	finish := r.connFlags(fs)
	wait := fs.Duration("wait", 0, "give up waiting for the lock after this `duration` (exit status 3); 0: wait as long as it takes")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo lock [flags] PATH [flags] -- COMMAND [ARGS...]

Acquires the distributed mutex at PATH (Apache Curator's InterProcessMutex
layout: PATH/_c_<uuid>-lock-<seq>), runs COMMAND while holding it, and
releases it when COMMAND exits. COMMAND finds in its environment
ZKGO_FENCING_TOKEN (a decimal number larger than that of every earlier
holder) and ZKGO_LOCK_PATH (the lock node).

If the lock is lost (connection suspended, session expired, node deleted)
COMMAND's process group gets SIGTERM, then SIGKILL after the grace period,
which ends before the server can give the lock to someone else. SIGINT,
SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to zkgo are forwarded to
COMMAND's process group. COMMAND runs in a process group of its own; if
zkgo dies (even by kill -9) the group is killed.

Exit status: COMMAND's (128+n if it was killed by signal n); 1 connection
error; 2 usage error; 3 -wait expired; 4 the lock was lost and COMMAND
stopped; 126/127 COMMAND cannot be run / was not found; 128+n if zkgo got
signal n while waiting for the lock.

Flags go before or after PATH; from COMMAND on (or the -- before it)
every argument is COMMAND's.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 2); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if !finish() {
		return exitUsage
	}
	if *wait < 0 {
		r.errorf("-wait must not be negative")
		return exitUsage
	}
	path, argv, err := splitCommand(fs.Args())
	if err != nil {
		r.errorf("%v", err)
		fs.Usage()
		return exitUsage
	}
	cmd, code := r.command(argv)
	if cmd == nil {
		return code
	}
	r.notify()

	sigCtx, stopSignals := r.untilSignal(context.Background())
	conn, err := r.connect(sigCtx)
	if err != nil {
		if s := stopSignals(); s != nil {
			r.errorf("interrupted (%v) while connecting", s)
			return signalStatus(s)
		}
		r.errorf("%v", err)
		return exitConn
	}
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()

	ctx := sigCtx
	if *wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(sigCtx, *wait)
		defer cancel()
	}
	var m *lock.Mutex
	var g *recipe.Grant
	for {
		m = lock.NewMutex(conn, path, lock.WithData([]byte(defaultID())))
		g, err = m.Lock(ctx)
		if err == nil || !sessionGone(err) || ctx.Err() != nil {
			break
		}
		// The session ended while we waited: start over with a new one.
		conn.Close()
		if conn, err = r.connect(ctx); err != nil {
			if ctx.Err() == nil {
				r.errorf("the session ended while waiting for the lock on %s; %v", path, err)
				stopSignals()
				return exitConn
			}
			break
		}
	}
	if s := stopSignals(); s != nil {
		if err == nil {
			m.Unlock(context.Background())
		}
		r.errorf("interrupted (%v) while waiting for the lock on %s", s, path)
		return signalStatus(s)
	}
	if err != nil {
		if *wait > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.errorf("timed out after %v waiting for the lock on %s", *wait, path)
			return exitWait
		}
		r.errorf("acquiring the lock on %s: %v", path, err)
		return exitConn
	}
	if g.Err() != nil {
		r.errorf("lost the lock on %s (%s) before the command started", g.Path(), lossReason(g.Err()))
		m.Unlock(context.Background())
		return exitLost
	}

	grace := r.graceFor(conn)
	out, err := r.supervise(cmd, []string{
		"ZKGO_FENCING_TOKEN=" + strconv.FormatInt(g.Token(), 10),
		"ZKGO_LOCK_PATH=" + g.Path(),
	}, g, grace)
	if err != nil {
		m.Unlock(context.Background())
		r.errorf("%v", err)
		return exitNoExec
	}
	if out.lost {
		// Closing the session (deferred) removes the node if the server
		// still has it; Unlock could wait for a reconnection first.
		return exitLost
	}
	if err := m.Unlock(context.Background()); err != nil {
		r.errorf("warning: releasing the lock on %s: %v (it goes when the session closes)", path, err)
	}
	return out.status
}
