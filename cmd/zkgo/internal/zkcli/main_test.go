package zkcli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zktest"
)

// runMain runs Main with stdin text and returns the exit status and output.
func runMain(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errb, "test")
	return code, out.String(), errb.String()
}

func TestMainOneShot(t *testing.T) {
	srv := zktest.Start(t)
	addr := srv.Addr()
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"-server", addr, "create", "/m", "hello world"}, 0, "", "Created /m\n"},
		{[]string{"-server", addr, "get", "/m"}, 0, "hello world\n", ""},
		{[]string{"--server", addr, "-timeout", "5s", "get", "/nope"}, 1, "", "Node does not exist: /nope\n"},
		{[]string{"-server=" + addr, "-timeout=5000", "ls", "/"}, 0, "[m, zookeeper]\n", ""},
		{[]string{"-server", addr, "-r", "stat", "-w", "/nope"}, 1, "", "Node does not exist: /nope\n"},
		{[]string{"-server", addr, "set", "/m", "-v", "0", "x"}, 0, "", ""},
		{[]string{"-server", addr, "ls"}, 1, "", "ls [-s] [-w] [-R] path\n"},
		{[]string{"-server", addr, "get", "-x", "/m"}, 1, "", "Unrecognized option: -x\n"},
		{[]string{"-server", addr + "/m", "ls", "/"}, 0, "[]\n", ""},
		// Commands that need no server run without one.
		{[]string{"-server", "127.0.0.1:1", "version"}, 0, "ZooKeeper CLI version: zkgo test\n", ""},
		{[]string{"printwatches"}, 0, "printwatches is on\n", ""},
		{[]string{"-timeout", "abc", "ls", "/"}, 2, "", "zkgo cli: -timeout: invalid timeout \"abc\": want milliseconds (30000) or a duration (30s)\n"},
		{[]string{"-timeout", "0", "ls", "/"}, 2, "", "zkgo cli: -timeout: the timeout must be positive: \"0\"\n"},
		{[]string{"-server", "", "ls", "/"}, 2, "", "zkgo cli: -server is empty\n"},
	} {
		code, out, errs := runMain(t, "", tc.args...)
		if code != tc.code || out != tc.out || errs != tc.err {
			t.Errorf("%q: exit %d stdout %q stderr %q; want %d %q %q", tc.args, code, out, errs, tc.code, tc.out, tc.err)
		}
	}
	// An unknown command prints the usage and exits 127, as zkCli.
	code, out, errs := runMain(t, "", "-server", addr, "frob", "/")
	if code != 127 || out != "" || !strings.HasSuffix(errs, "\twhoami \nCommand not found: frob\n") {
		t.Errorf("unknown command: %d %q %q", code, out, errs)
	}
	// Flags are for before the command.
	code, _, errs = runMain(t, "", "-bogus", "ls", "/")
	if code != 2 || !strings.Contains(errs, "flag provided but not defined: -bogus") {
		t.Errorf("bad flag: %d %q", code, errs)
	}
	code, _, errs = runMain(t, "", "-h")
	if code != 0 || !strings.Contains(errs, "Usage: zkgo cli [flags] [COMMAND ARGS...]") {
		t.Errorf("-h: %d %q", code, errs)
	}
}

func TestMainConnectFailure(t *testing.T) {
	addr := closedPort(t)
	start := time.Now()
	code, out, errs := runMain(t, "", "-server", addr, "-timeout", "400", "ls", "/")
	if code != 1 || out != "" || !strings.HasPrefix(errs, "Unable to connect to "+addr+": ") {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v with a 400ms timeout", d)
	}
	// Script mode too.
	code, _, errs = runMain(t, "ls /\n", "-server", addr, "-timeout", "400ms")
	if code != 1 || !strings.HasPrefix(errs, "Unable to connect to "+addr+": ") {
		t.Errorf("script: exit %d stderr %q", code, errs)
	}
}

func TestMainScript(t *testing.T) {
	srv := zktest.Start(t)
	addr := srv.Addr()
	script := "create /s x\r\n\nget /s\nget -w /s\nset /s y\n  \nget /nope\n"
	code, out, errs := runMain(t, script, "-server", addr)
	wantOut := "x\nx\n" + watchedEvent("SyncConnected", "NodeDataChanged", "/s")
	if code != 1 || out != wantOut || errs != "Created /s\nNode does not exist: /nope\n" {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errs)
	}
	// The status is the last command's; quit stops reading.
	code, out, _ = runMain(t, "get /nope\nls /\nquit\nget /nope\n", "-server", addr)
	if code != 0 || out != "[s, zookeeper]\n" {
		t.Errorf("exit %d stdout %q", code, out)
	}
	code, _, _ = runMain(t, "get /nope\nquit\n", "-server", addr)
	if code != 1 {
		t.Errorf("quit after a failure: exit %d", code)
	}
	code, out, _ = runMain(t, "history\nredo 0\n", "-server", addr)
	if code != 0 || out != "0 - history\n0 - history\n1 - history\n" {
		t.Errorf("history: exit %d stdout %q", code, out)
	}
}
