// zkCli commands about the shell's session and connection, watches,
// history and help.

package zkcli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/zk"
)

func cmdRemoveWatches(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"c", false, "child watcher type"}, {"d", false, "data watcher type"}, {"a", false, "any watcher type"}, {"l", false, "remove locally when there is no server connection"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() < 2 {
		return c.usage()
	}
	path := cl.arg(1)
	typ := zk.WatcherAny
	switch {
	case cl.has("c"):
		typ = zk.WatcherChildren
	case cl.has("d"):
		typ = zk.WatcherData
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	// -l is accepted; the Go client always asks the server (it waits for a
	// reconnection rather than removing the watches locally).
	if err := s.live().RemoveWatches(ctx, path, typ); err != nil {
		return zkFail(err, path)
	}
	return nil
}

func cmdAddWatch(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"m", true, ""}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() != 2 {
		return c.usage()
	}
	mode := zk.AddWatchPersistentRecursive
	if cl.has("m") {
		switch strings.ToUpper(cl.val("m")) {
		case "PERSISTENT":
			mode = zk.AddWatchPersistent
		case "PERSISTENT_RECURSIVE":
		default:
			return c.usage()
		}
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	w, err := s.live().AddWatch(ctx, path, mode)
	if err != nil {
		return zkFail(err, path)
	}
	s.addPersistent(w, path, mode == zk.AddWatchPersistentRecursive)
	return nil
}

func cmdClose(s *Shell, ctx context.Context, c *command, args []string) error {
	s.closeConn(true)
	return nil
}

func cmdQuit(s *Shell, ctx context.Context, c *command, args []string) error {
	s.closeConn(true)
	return ErrQuit
}

func cmdConnect(s *Shell, ctx context.Context, c *command, args []string) error {
	s.mu.Lock()
	host := s.host
	s.mu.Unlock()
	if len(args) >= 2 {
		host = args[1]
	}
	if host == "" {
		return c.usage()
	}
	if err := s.Connect(ctx, host); err != nil {
		return fail("%v", err)
	}
	return nil
}

func cmdHistory(s *Shell, ctx context.Context, c *command, args []string) error {
	var b strings.Builder
	for i := s.count - 10; i <= s.count; i++ {
		line, ok := s.history[i]
		if i < 0 || !ok {
			continue
		}
		fmt.Fprintf(&b, "%d - %s\n", i, line)
	}
	s.outf("%s", b.String())
	return nil
}

func cmdRedo(s *Shell, ctx context.Context, c *command, args []string) error {
	if len(args) < 2 {
		return c.usage()
	}
	// Integer.decode: decimal, 0x/# hex, leading-0 octal.
	t := args[1]
	if strings.HasPrefix(t, "#") {
		t = "0x" + t[1:]
	}
	n, err := strconv.ParseInt(t, 0, 32)
	if err != nil {
		return fail("redo: the command number must be an integer: %s", args[1])
	}
	i := int(n)
	if s.count <= i || i < 0 {
		return fail("Command index out of range")
	}
	line := s.history[i]
	words := splitLine(line)
	if len(words) == 0 {
		return fail("Command index out of range")
	}
	if words[0] == "redo" {
		return fail("No redoing redos")
	}
	s.history[s.count] = line
	err = s.run(ctx, words)
	var e *ExitError
	if errors.As(err, &e) { // already printed by run
		return &ExitError{Code: e.Code}
	}
	return err
}

func cmdPrintWatches(s *Shell, ctx context.Context, c *command, args []string) error {
	if len(args) == 1 {
		state := "off"
		if s.printWatches.Load() {
			state = "on"
		}
		s.outf("printwatches is %s\n", state)
		return nil
	}
	s.printWatches.Store(args[1] == "on")
	return nil
}

func cmdHelp(s *Shell, ctx context.Context, c *command, args []string) error {
	s.outf("%s", usageText())
	return nil
}
