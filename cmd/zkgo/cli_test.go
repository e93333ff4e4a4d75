package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// runCLIBinary runs "zkgo cli args..." and returns its exit status and output.
func runCLIBinary(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"cli"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("running zkgo cli: %v", err)
	return 0, "", ""
}

func TestCLIOneShot(t *testing.T) {
	srv := zktest.Start(t)
	addr := srv.Addr()
	// The binary's version (stamped by go build), as zkgo version -short says.
	short, err := exec.Command(binary, "version", "-short").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(short))
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"-server", addr, "create", "/a", "x y"}, 0, "", "Created /a\n"},
		{[]string{"-server", addr, "get", "/a"}, 0, "x y\n", ""},
		{[]string{"-server", addr, "ls", "/"}, 0, "[a, zookeeper]\n", ""},
		{[]string{"-server", addr, "get", "/nope"}, 1, "", "Node does not exist: /nope\n"},
		{[]string{"-server", addr, "create", "/a"}, 1, "", "Node already exists: /a\n"},
		{[]string{"-server", addr, "delete", "-v", "3", "/a"}, 1, "", "version No is not valid : /a\n"},
		{[]string{"-server", addr, "-timeout", "10s", "delete", "/a"}, 0, "", ""},
		{[]string{"-server", addr, "ls"}, 1, "", "ls [-s] [-w] [-R] path\n"},
		{[]string{"version"}, 0, "ZooKeeper CLI version: zkgo " + version + "\n", ""},
	} {
		code, out, errs := runCLIBinary(t, "", tc.args...)
		if code != tc.code || out != tc.out || errs != tc.err {
			t.Errorf("zkgo cli %q: exit %d stdout %q stderr %q; want %d %q %q", tc.args, code, out, errs, tc.code, tc.out, tc.err)
		}
	}
	code, _, errs := runCLIBinary(t, "", "-server", addr, "nosuchcommand")
	if code != 127 || !strings.HasSuffix(errs, "Command not found: nosuchcommand\n") {
		t.Errorf("unknown command: exit %d stderr %q", code, errs)
	}
	// A server that is not there: a clear message within the timeout.
	dead, err := zktest.New()
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr()
	dead.Close()
	start := time.Now()
	code, _, errs = runCLIBinary(t, "", "-server", deadAddr, "-timeout", "500", "get", "/a")
	if code != 1 || !strings.HasPrefix(errs, "Unable to connect to "+deadAddr+": ") {
		t.Errorf("dead server: exit %d stderr %q", code, errs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("dead server: took %v", d)
	}
	// Script mode: commands on stdin, no prompt.
	code, out, errs := runCLIBinary(t, "create /s v\nget /s\n", "-server", addr)
	if code != 0 || out != "v\n" || errs != "Created /s\n" {
		t.Errorf("script: exit %d stdout %q stderr %q", code, out, errs)
	}
}

// screen collects what a program writes to its terminal.
type screen struct {
	mu     sync.Mutex
	buf    strings.Builder
	notify chan struct{}
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(p)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\r`)

// text returns the output with terminal control sequences removed.
func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansiRE.ReplaceAllString(s.buf.String(), "")
}

// waitFor waits until the output contains want (after offset, a position
// in text()), and returns the position after it.
func (s *screen) waitFor(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		txt := s.text()
		if from <= len(txt) {
			if i := strings.Index(txt[from:], want); i >= 0 {
				return from + i + len(want)
			}
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			s.mu.Lock()
			raw := s.buf.String()
			s.mu.Unlock()
			t.Fatalf("terminal never showed %q; screen after offset %d:\n%s\nraw end: %q", want, from, txt[min(from, len(txt)):], raw[max(0, len(raw)-400):])
		}
	}
}

func TestCLIInteractive(t *testing.T) {
	srv := zktest.Start(t)
	addr := srv.Addr()
	ctx := context.Background()
	c, err := zk.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/app", "/app/x", "/app/x/y"} {
		if _, err := c.Create(ctx, p, []byte("v"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	hist := filepath.Join(dir, "history")
	cmd := exec.Command(binary, "cli", "-server", addr)
	cmd.Env = append(os.Environ(), "ZKGO_HISTORY="+hist, "HOME="+dir, "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	scr := &screen{notify: make(chan struct{}, 1)}
	copied := make(chan struct{})
	go func() {
		io.Copy(scr, tty)
		close(copied)
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	typeText := func(s string) {
		t.Helper()
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	prompt := func(n int) string { return "[zk: " + addr + "(CONNECTED) " + strconv.Itoa(n) + "] " }

	pos := scr.waitFor(t, 0, "Connecting to "+addr+"\nWelcome to ZooKeeper!\n")
	pos = scr.waitFor(t, pos, "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n")
	pos = scr.waitFor(t, pos, prompt(0))

	// A command and its output.
	typeText("ls /\r")
	pos = scr.waitFor(t, pos, "[app, zookeeper]\n")
	pos = scr.waitFor(t, pos, prompt(1))

	// Tab completes a command name, then a znode path.
	typeText("getAl\t")
	pos = scr.waitFor(t, pos, "getAllChildrenNumber ")
	typeText("/ap\t")
	pos = scr.waitFor(t, pos, "getAllChildrenNumber /app")
	typeText("\r")
	pos = scr.waitFor(t, pos, "\n2\n")
	pos = scr.waitFor(t, pos, prompt(2))

	// A path below: the only child is completed.
	typeText("get /app/x/\t\r")
	pos = scr.waitFor(t, pos, "\nv\n")
	pos = scr.waitFor(t, pos, prompt(3))

	// An error line.
	typeText("get /nope\r")
	pos = scr.waitFor(t, pos, "Node does not exist: /nope\n")
	pos = scr.waitFor(t, pos, prompt(4))

	// A watch fired by another session is printed while the prompt waits.
	typeText("get -w /app\r")
	pos = scr.waitFor(t, pos, "\nv\n")
	pos = scr.waitFor(t, pos, prompt(5))
	if _, err := c.Set(ctx, "/app", []byte("w"), -1); err != nil {
		t.Fatal(err)
	}
	pos = scr.waitFor(t, pos, "WatchedEvent state:SyncConnected type:NodeDataChanged path:/app\n")
	pos = scr.waitFor(t, pos, prompt(5))

	typeText("history\r")
	pos = scr.waitFor(t, pos, "0 - ls /\n1 - getAllChildrenNumber /app\n2 - get /app/x/y\n3 - get /nope\n4 - get -w /app\n5 - history\n")
	scr.waitFor(t, pos, prompt(6))

	typeText("quit\r")
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("zkgo cli exited with %v", waitErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("zkgo cli did not exit after quit")
	}
	tty.Close()
	<-copied
	if !strings.Contains(scr.text(), "WatchedEvent state:Closed type:None path:null") {
		t.Errorf("no Closed event at quit:\n%s", scr.text())
	}
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); !strings.Contains(got, "get /nope\n") || !strings.Contains(got, "getAllChildrenNumber /app\n") {
		t.Errorf("history file:\n%s", got)
	}
}
