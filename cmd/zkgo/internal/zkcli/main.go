package zkcli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zkgo/zkgo/cmd/zkgo/internal/tlsflags"
)

// Main runs "zkgo cli" with the arguments after "cli" and returns the exit
// status:
//
//	zkgo cli [-server host:port[,host:port...][/chroot]] [-timeout 30000|30s] [-r] [COMMAND ARGS...]
//
// With a command it runs it once (one-shot mode) and returns 0, or 1 if it
// failed (127 for an unknown command, 2 for bad flags). Without one it runs
// the interactive shell if stdin is a terminal, or else reads commands line
// by line from stdin (script mode) and returns the status of the last one.
// Flags go before the command, single or double dash.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, version string) int {
	fs := flag.NewFlagSet("cli", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", DefaultServer, "the `host:port[,host:port...][/chroot]` of the servers")
	timeout := fs.String("timeout", "30000", "session and connection timeout: milliseconds (as zkCli) or a Go duration such as 30s")
	readOnly := fs.Bool("r", false, "allow connecting to a read-only server")
	fs.Bool("waitforconnection", false, "accepted for zkCli compatibility (zkgo always waits for the connection)")
	tlsFlags := tlsflags.AddClientFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo cli [flags] [COMMAND ARGS...]

A shell compatible with Apache ZooKeeper's zkCli.sh. With a command, runs
it once and exits (0 on success, 1 on error). Without one, starts an
interactive shell (history in ~/.zkgo_history or $ZKGO_HISTORY, tab
completion of commands and znode paths) when stdin is a terminal, or runs
the commands read from stdin, one per line, otherwise. Type "help" in the
shell for the commands.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	to, err := parseTimeout(*timeout)
	if err != nil {
		fmt.Fprintf(stderr, "zkgo cli: -timeout: %v\n", err)
		return 2
	}
	if strings.TrimSpace(*server) == "" {
		fmt.Fprintf(stderr, "zkgo cli: -server is empty\n")
		return 2
	}
	tlsCfg, warnings, err := tlsFlags.Config()
	for _, w := range warnings {
		fmt.Fprintf(stderr, "zkgo cli: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "zkgo cli: TLS: %v\n", err)
		return 2
	}
	cfg := Config{Timeout: to, ReadOnly: *readOnly, TLS: tlsCfg, Stdout: stdout, Stderr: stderr, Version: version}
	ctx := context.Background()

	if rest := fs.Args(); len(rest) > 0 {
		s := NewShell(cfg)
		defer s.Close()
		if needsConnection(rest[0]) {
			if err := s.Connect(ctx, *server); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
		}
		return ExitCode(s.ExecArgs(ctx, rest))
	}
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		cfg.StateEvents = true
		return interactive(ctx, cfg, *server, f, stdout, stderr)
	}
	s := NewShell(cfg)
	defer s.Close()
	if err := s.Connect(ctx, *server); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return script(ctx, s, stdin)
}

// script runs the commands read from r, one per line, and returns the exit
// status of the last one (as zkCli does).
func script(ctx context.Context, s *Shell, r io.Reader) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	code := 0
	for sc.Scan() {
		err := s.Exec(ctx, strings.TrimSuffix(sc.Text(), "\r"))
		if errors.Is(err, ErrQuit) {
			return code
		}
		if strings.TrimSpace(sc.Text()) != "" {
			code = ExitCode(err)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(s.cfg.Stderr, "zkgo cli: reading commands: %v\n", err)
		return 1
	}
	return code
}

// historyFile is where the interactive shell keeps its line history.
func historyFile() string {
	if p := os.Getenv("ZKGO_HISTORY"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return home + string(os.PathSeparator) + ".zkgo_history"
}
