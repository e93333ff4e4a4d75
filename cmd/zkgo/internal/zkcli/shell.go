// Package zkcli implements "zkgo cli": a shell compatible with Apache
// ZooKeeper's zkCli.sh (ZooKeeperMain, 3.8), over the zkgo client.
//
// A Shell holds one session and runs command lines (Exec) or pre-split
// commands (ExecArgs), writing what zkCli writes, on the same streams:
// results on stdout, "Created /x", errors and usage on stderr, and watch
// events on stdout ("WATCHER::" then "WatchedEvent state:... type:...
// path:..."). Main is the command-line entry point: one-shot mode
// ("zkgo cli -server ADDR get /a"), an interactive shell with history and
// completion when stdin is a terminal, and script mode (commands read line
// by line, no prompt) otherwise.
//
// Output formats follow ZooKeeper 3.8's cli/*.java and ZooKeeperMain; a
// test compares them byte for byte with zkCli.sh when it is installed.
// Deliberate differences (each also noted where it is made):
//   - Only the interactive shell prints the "Connecting to"/"Welcome"
//     banner and connection-state events (type:None); one-shot and script
//     modes print only what the commands print, so scripts need not filter
//     them out.
//   - Failures that zkCli reports on stderr but ends with exit status 0
//     (sync failures, setquota value errors, partial deleteall or setAcl -R
//     failures, "Not connected", listquota of a path without quota) exit
//     with 1. An unknown command exits with 127, as in zkCli.
//   - Parse errors print the commons-cli message without its Java class
//     name ("Unrecognized option: -x"); an unknown command prints
//     "Command not found: foo" (zkCli repeats the prefix); an empty ACL
//     list names the path ("Acl is not valid : /x", zkCli says null).
//   - Bad numbers ("delete -v x", "redo x") give a message, not a stack
//     trace; every path is validated, with the Java client's messages,
//     before any request.
//   - Watch events that a command causes in its own session (a set on a
//     watched node, removewatches) are printed right after the command's
//     output rather than whenever the event thread gets to them, and
//     events caused by closing the session are not printed.
//   - addWatch without -m is always PERSISTENT_RECURSIVE (zkCli 3.8 keeps
//     the mode given to the previous addWatch -m).
//   - addauth waits for the server's answer and reports a refusal;
//     removewatches -l is accepted but the server is always asked;
//     getEphemerals sorts its list; setAcl -R ends each error with a
//     newline; get prints the data bytes as stored.
//   - A command issued while disconnected waits up to -timeout for the
//     reconnection, where the Java client fails it after its next failed
//     attempt (Ctrl-C interrupts it in the shell). Commands that need no
//     server (history, printwatches, ...) do not print "Not connected".
//   - version prints "ZooKeeper CLI version: zkgo VERSION".
//   - Tab completes command names in the first word only, and znode paths
//     without a trailing space, so that a deeper level can follow.
//   - "help" prints the command list.
//   - "watch path [-R]" is zkgo's own: it follows the node (-R: the
//     subtree) with a recipe/cache NodeCache (TreeCache) and prints the
//     cache's events, one line each, until interrupted (cachewatch.go).
package zkcli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// DefaultServer is the server zkCli connects to when -server is not given.
const DefaultServer = "localhost:2181"

// DefaultTimeout is zkCli's default session timeout.
const DefaultTimeout = 30 * time.Second

// Config configures a Shell.
type Config struct {
	// Timeout is the session timeout asked for, the limit on connecting,
	// and the limit on each command. Default DefaultTimeout.
	Timeout time.Duration
	// ReadOnly allows read-only servers (zkCli's -r).
	ReadOnly bool
	// TLS, if set, connects over TLS.
	TLS *tls.Config
	// Stdout and Stderr receive the output (io.Discard if nil).
	Stdout, Stderr io.Writer
	// Version is printed by the version command.
	Version string
	// StateEvents prints connection-state changes as zkCli's default
	// watcher does ("WatchedEvent state:SyncConnected type:None
	// path:null"). The interactive shell sets it.
	StateEvents bool
	// Location is the time zone of ctime/mtime. Default time.Local.
	Location *time.Location
}

// ExitError is the error Exec returns for a failed command; its message
// has already been written to stderr.
type ExitError struct {
	Code int    // exit status for one-shot and script modes
	Msg  string // what was printed on stderr ("" for nothing)
}

func (e *ExitError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Msg
}

// ErrQuit is returned by Exec for "quit": the caller should stop.
var ErrQuit = errors.New("quit")

// ExitCode returns the exit status for the result of Exec: 0 for nil and
// ErrQuit, the ExitError's code, 1 otherwise.
func ExitCode(err error) int {
	var e *ExitError
	switch {
	case err == nil, errors.Is(err, ErrQuit):
		return 0
	case errors.As(err, &e):
		return e.Code
	}
	return 1
}

// outputs serialises writes from commands and watch goroutines.
type outputs struct {
	mu       sync.Mutex // guards writes to out and err
	out, err io.Writer
}

func (o *outputs) write(w io.Writer, s string) {
	o.mu.Lock()
	io.WriteString(w, s)
	o.mu.Unlock()
}

// Shell is a zkCli-compatible shell bound to at most one session at a
// time. Exec and ExecArgs must be called from one goroutine at a time;
// watch events are printed from other goroutines.
type Shell struct {
	cfg Config
	o   outputs
	loc *time.Location

	mu    sync.Mutex // guards conn, host, gen, state
	conn  *zk.Conn
	host  string
	gen   int
	state zk.State

	printWatches atomic.Bool
	history      map[int]string
	count        int
	watches      watchBook
	ctlMu        sync.Mutex  // guards shards, regSeq, closed; held while messaging the shards
	shards       []*shard    // event dispatchers (see watch.go)
	regSeq       int64       // registrations made
	closed       bool        // Close was called: no more shards
	holding      atomic.Bool // a command runs: events wait for flushEvents
	closeOnce    sync.Once

	// onState, if set, is called after every connection state change
	// (the interactive loop refreshes its prompt).
	onState func()
	// eventHook, if set, receives every node event text (tests).
	eventHook func(string)
}

// NewShell returns a Shell that is not connected yet.
func NewShell(cfg Config) *Shell {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	s := &Shell{cfg: cfg, loc: cfg.Location, history: map[int]string{}}
	if s.loc == nil {
		s.loc = time.Local
	}
	s.o.out, s.o.err = cfg.Stdout, cfg.Stderr
	s.printWatches.Store(true)
	s.watches.reset()
	return s
}

func (s *Shell) outf(format string, a ...any) { s.o.write(s.o.out, fmt.Sprintf(format, a...)) }
func (s *Shell) errf(format string, a ...any) { s.o.write(s.o.err, fmt.Sprintf(format, a...)) }

// connectRetry gives up connecting once max has elapsed.
type connectRetry struct{ max time.Duration }

func (p connectRetry) Next(n int, elapsed time.Duration) (time.Duration, bool) {
	if elapsed >= p.max {
		return 0, false
	}
	d, _ := zk.ExponentialBackoff{Base: 10 * time.Millisecond, Max: time.Second}.Next(n, elapsed)
	return min(d, p.max-elapsed), true
}

// Connect closes the current session, if any, and opens a new one with
// server ("host:port[,host:port...][/chroot]"). It fails if no server
// answers within the timeout.
func (s *Shell) Connect(ctx context.Context, server string) error {
	s.closeConn(false)
	s.mu.Lock()
	s.host = server
	s.gen++
	gen := s.gen
	s.state = zk.StateConnecting
	s.mu.Unlock()
	opts := []zk.Option{
		zk.WithSessionTimeout(s.cfg.Timeout),
		zk.WithReadOnly(s.cfg.ReadOnly),
		zk.WithTLS(s.cfg.TLS),
		zk.WithConnectRetry(connectRetry{s.cfg.Timeout}),
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	conn, err := zk.Connect(cctx, server, opts...)
	if err != nil {
		s.mu.Lock()
		s.gen++ // ignore the failed Conn's last states
		s.state = zk.StateConnecting
		s.mu.Unlock()
		if ctx.Err() == nil && cctx.Err() != nil {
			return fmt.Errorf("Unable to connect to %s: no server answered within %v", server, s.cfg.Timeout)
		}
		if u := errors.Unwrap(err); u != nil && strings.HasPrefix(err.Error(), "zk: could not connect") {
			err = u
		}
		return fmt.Errorf("Unable to connect to %s: %v", server, err)
	}
	// Subscribe before reading the state: a transition after the read is
	// then delivered; the channel closes after StateClosed.
	states, _ := conn.NotifyState()
	s.mu.Lock()
	s.conn = conn
	st := conn.State()
	s.state = st
	s.mu.Unlock()
	go func() {
		for st := range states {
			s.stateChanged(gen, st)
		}
	}()
	if s.cfg.StateEvents && s.printWatches.Load() {
		name := "SyncConnected"
		if st == zk.StateReadOnly {
			name = "ConnectedReadOnly"
		}
		s.o.write(s.o.out, watchedEvent(name, "None", "null"))
	}
	return nil
}

// stateChanged follows the session's state and prints the changes as
// zkCli's default watcher does. The first state (printed by Connect) and
// Closed (printed by close/quit) are not printed here.
func (s *Shell) stateChanged(gen int, st zk.State) {
	s.mu.Lock()
	if gen != s.gen {
		s.mu.Unlock()
		return
	}
	s.state = st
	s.mu.Unlock()
	name := ""
	switch st {
	case zk.StateSuspended:
		name = "Disconnected"
	case zk.StateReconnected:
		name = "SyncConnected"
	case zk.StateReadOnly:
		name = "ConnectedReadOnly"
	case zk.StateLost:
		name = "Expired"
	}
	if name != "" && s.cfg.StateEvents && s.printWatches.Load() {
		s.o.write(s.o.out, watchedEvent(name, "None", "null"))
	}
	if f := s.onState; f != nil {
		f()
	}
}

// closeConn ends the session, printing the Closed event if asked and
// state events are on.
func (s *Shell) closeConn(announce bool) {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.gen++
	if c != nil {
		s.state = zk.StateClosed
	}
	s.mu.Unlock()
	if c == nil {
		return
	}
	s.watches.reset() // before Close: its events are not printed
	c.Close()
	if announce && s.cfg.StateEvents && s.printWatches.Load() {
		s.o.write(s.o.out, watchedEvent("Closed", "None", "null"))
	}
}

// Close ends the session, if any, and the Shell's goroutines.
func (s *Shell) Close() error {
	s.closeOnce.Do(func() {
		s.closeConn(false)
		s.stopDispatchers()
	})
	return nil
}

// Conn returns the current session, or nil.
func (s *Shell) Conn() *zk.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// live returns the session if it can serve requests (Java's isAlive: not
// closed, not expired).
func (s *Shell) live() *zk.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil || s.state == zk.StateLost || s.state == zk.StateClosed {
		return nil
	}
	return s.conn
}

// Prompt returns zkCli's prompt: "[zk: host(STATE) N] ".
func (s *Shell) Prompt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Java's ZooKeeper.States names; NOT_CONNECTED when no session could
	// be opened.
	state := "NOT_CONNECTED"
	switch {
	case s.conn == nil:
		if s.state == zk.StateClosed || s.state == zk.StateLost {
			state = "CLOSED"
		}
	case s.state == zk.StateConnected || s.state == zk.StateReconnected:
		state = "CONNECTED"
	case s.state == zk.StateReadOnly:
		state = "CONNECTEDREADONLY"
	case s.state == zk.StateSuspended || s.state == zk.StateConnecting:
		state = "CONNECTING"
	default:
		state = "CLOSED"
	}
	return fmt.Sprintf("[zk: %s(%s) %d] ", s.host, state, s.count)
}

// Exec runs one shell line: it is split into words as zkCli does (quotes
// group words), recorded in the history (unless blank), and run. Output
// and error messages are written to the configured streams; the error
// returned (an *ExitError, or ErrQuit) is for the exit status only.
func (s *Shell) Exec(ctx context.Context, line string) error {
	args := splitLine(line)
	if len(args) == 0 {
		return nil
	}
	s.history[s.count] = line
	err := s.run(ctx, args)
	s.count++
	return err
}

// ExecArgs runs one command given as words (one-shot mode); it is not
// recorded in the history.
func (s *Shell) ExecArgs(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return s.run(ctx, args)
}

// run looks the command up and runs it, printing its error.
func (s *Shell) run(ctx context.Context, args []string) error {
	cmd := lookupCommand(args[0])
	if cmd == nil {
		s.o.write(s.o.err, usageText())
		e := &ExitError{Code: 127, Msg: "Command not found: " + args[0]}
		s.errf("%s\n", e.Msg)
		return e
	}
	if cmd.needsConn && s.live() == nil {
		s.outf("Not connected\n")
		return &ExitError{Code: 1}
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if !untimed[cmd.name] {
		cctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
	}
	defer cancel()
	s.holding.Store(true)
	err := cmd.run(s, cctx, cmd, args)
	s.flushEvents()
	var e *ExitError
	if errors.As(err, &e) && e.Msg != "" {
		s.errf("%s\n", e.Msg)
	}
	return err
}

// needsConnection reports whether the command talks to the server (so
// one-shot mode must connect first).
func needsConnection(name string) bool {
	c := lookupCommand(name)
	return c == nil || c.needsConn
}

// usageText is zkCli's usage: the list of commands with their syntax.
func usageText() string {
	var b strings.Builder
	b.WriteString("ZooKeeper -server host:port[/chroot] [-timeout ms|duration] [-r] cmd args\n")
	for _, c := range sortedCommands() {
		b.WriteString("\t" + c.name + " " + c.syntax + "\n")
	}
	return b.String()
}

// Complete returns the completions of word, the word being typed: command
// names for the first word of a line (with a trailing space, as zkCli's
// completer ends a complete word), the children of the parent node for a
// word starting with "/" (listed through the session). Candidates are
// sorted.
func (s *Shell) Complete(ctx context.Context, word string, first bool) []string {
	var out []string
	switch {
	case strings.HasPrefix(word, "/"):
		c := s.live()
		if c == nil {
			return nil
		}
		i := strings.LastIndexByte(word, '/')
		dir, prefix := word[:i], word[i+1:]
		if dir == "" {
			dir = "/"
		}
		if validatePath(dir, false) != nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, min(s.cfg.Timeout, 5*time.Second))
		defer cancel()
		children, _, err := c.Children(ctx, dir)
		if err != nil {
			return nil
		}
		for _, ch := range children {
			if strings.HasPrefix(ch, prefix) {
				out = append(out, word[:i+1]+ch)
			}
		}
	case first:
		for _, c := range sortedCommands() {
			if strings.HasPrefix(c.name, word) {
				out = append(out, c.name+" ")
			}
		}
	}
	sort.Strings(out)
	return out
}
