package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zkdata"
	"github.com/zkgo/zkgo/zktest"
)

// parseArgsCase is one row of TestParseArgs.
type parseArgsCase struct {
	name    string
	command int
	args    []string
	pos     []string // fs.Args() after parsing
	s       string   // -s (string, default "def")
	n       int      // -n (int)
	v       bool     // -v (bool)
	err     string   // the error's text, "" for none
}

var parseArgsCases = []parseArgsCase{
	{name: "none", args: nil, pos: []string{}, s: "def"},
	{name: "flags before", args: []string{"-s", "x", "-v", "a", "b"}, pos: []string{"a", "b"}, s: "x", v: true},
	{name: "flags after", args: []string{"a", "b", "-s", "x", "-n", "3"}, pos: []string{"a", "b"}, s: "x", n: 3},
	{name: "interleaved", args: []string{"a", "-s", "x", "b", "-v", "c", "-n", "3"}, pos: []string{"a", "b", "c"}, s: "x", n: 3, v: true},
	{name: "order kept", args: []string{"c", "-v", "b", "a"}, pos: []string{"c", "b", "a"}, s: "def", v: true},
	{name: "name=value", args: []string{"a", "-s=x", "--n=4"}, pos: []string{"a"}, s: "x", n: 4},
	{name: "double dash name", args: []string{"a", "--s", "x", "--v"}, pos: []string{"a"}, s: "x", v: true},
	{name: "empty value", args: []string{"a", "-s="}, pos: []string{"a"}, s: ""},
	{name: "last wins", args: []string{"-s", "x", "a", "-s", "y"}, pos: []string{"a"}, s: "y"},
	{name: "bool takes no value", args: []string{"-v", "a", "b"}, pos: []string{"a", "b"}, s: "def", v: true},
	{name: "bool after positional", args: []string{"a", "-v", "b"}, pos: []string{"a", "b"}, s: "def", v: true},
	{name: "bool =false", args: []string{"-v", "a", "-v=false"}, pos: []string{"a"}, s: "def"},
	{name: "value starting with dash", args: []string{"a", "-s", "-v"}, pos: []string{"a"}, s: "-v"},
	{name: "value --", args: []string{"-s", "--", "a"}, pos: []string{"a"}, s: "--"},
	{name: "-- ends flags", args: []string{"a", "--", "-s", "x", "-v"}, pos: []string{"a", "-s", "x", "-v"}, s: "def"},
	{name: "-- first", args: []string{"--", "-a", "b"}, pos: []string{"-a", "b"}, s: "def"},
	{name: "-- after flags", args: []string{"-v", "--", "-v"}, pos: []string{"-v"}, s: "def", v: true},
	{name: "second -- is positional", args: []string{"a", "--", "b", "--", "c"}, pos: []string{"a", "b", "--", "c"}, s: "def"},
	{name: "-- last", args: []string{"a", "--"}, pos: []string{"a"}, s: "def"},
	{name: "lone dash", args: []string{"-", "-v", "-"}, pos: []string{"-", "-"}, s: "def", v: true},
	{name: "empty argument", args: []string{"", "-v"}, pos: []string{""}, s: "def", v: true},
	{name: "unknown after positional", args: []string{"a", "-bogus", "b"}, err: "flag provided but not defined: -bogus"},
	{name: "unknown before positional", args: []string{"-bogus", "a"}, err: "flag provided but not defined: -bogus"},
	{name: "unknown =value", args: []string{"a", "--bogus=1"}, err: "flag provided but not defined: -bogus"},
	{name: "missing value", args: []string{"a", "-s"}, err: "flag needs an argument: -s"},
	{name: "bad value", args: []string{"a", "-n", "x"}, err: `invalid value "x" for flag -n: parse error`},
	{name: "bad syntax", args: []string{"a", "---s", "x"}, err: "bad flag syntax: ---s"},
	{name: "bad syntax =", args: []string{"a", "-=x"}, err: "bad flag syntax: -=x"},
	{name: "help after positional", args: []string{"a", "-h"}, err: flag.ErrHelp.Error()},
	{name: "help before positional", args: []string{"--help", "a"}, err: flag.ErrHelp.Error()},

	// command 1, as cli: flags up to the first positional (its zkCli command).
	{name: "cli command", command: 1, args: []string{"-s", "x", "create", "/a", "-e", "-v", "--", "-s", "y"},
		pos: []string{"create", "/a", "-e", "-v", "--", "-s", "y"}, s: "x"},
	{name: "cli -- before command", command: 1, args: []string{"-v", "--", "-create", "-s"}, pos: []string{"-create", "-s"}, s: "def", v: true},
	{name: "cli flags only", command: 1, args: []string{"-n", "2"}, pos: []string{}, s: "def", n: 2},
	{name: "cli unknown flag", command: 1, args: []string{"-e", "create"}, err: "flag provided but not defined: -e"},

	// command 2, as lock and elect: PATH, then COMMAND [ARGS...].
	{name: "lock flags after PATH", command: 2, args: []string{"/p", "-s", "x", "-v", "--", "cmd", "-s", "y", "--", "-v"},
		pos: []string{"/p", "cmd", "-s", "y", "--", "-v"}, s: "x", v: true},
	{name: "lock flags around PATH", command: 2, args: []string{"-n", "1", "/p", "-s", "x", "cmd", "-v"},
		pos: []string{"/p", "cmd", "-v"}, s: "x", n: 1},
	{name: "lock flags before", command: 2, args: []string{"-s", "x", "/p", "--", "cmd"}, pos: []string{"/p", "cmd"}, s: "x"},
	{name: "lock -- before PATH", command: 2, args: []string{"--", "/p", "--", "cmd"}, pos: []string{"/p", "--", "cmd"}, s: "def"},
	{name: "lock no command", command: 2, args: []string{"/p", "-v"}, pos: []string{"/p"}, s: "def", v: true},
	{name: "lock unknown flag after PATH", command: 2, args: []string{"/p", "-bogus", "--", "cmd"}, err: "flag provided but not defined: -bogus"},
	{name: "lock missing value after PATH", command: 2, args: []string{"/p", "-s"}, err: "flag needs an argument: -s"},
}

// newParseArgsFlags is the flag set of TestParseArgs: -s, -n, -v.
func newParseArgsFlags(out *bytes.Buffer) (fs *flag.FlagSet, s *string, n *int, v *bool) {
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(out)
	s = fs.String("s", "def", "a string")
	n = fs.Int("n", 0, "an int")
	v = fs.Bool("v", false, "a bool")
	return fs, s, n, v
}

func TestParseArgs(t *testing.T) {
	for _, c := range parseArgsCases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			fs, s, n, v := newParseArgsFlags(&out)
			err := parseArgs(fs, c.args, c.command)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("parseArgs(%q, %d): error %v, want %q", c.args, c.command, err, c.err)
				}
				// Reported as fs.Parse reports it: the message, then the usage.
				if !strings.Contains(out.String(), "Usage of t:") ||
					(!errors.Is(err, flag.ErrHelp) && !strings.HasPrefix(out.String(), c.err+"\n")) {
					t.Errorf("parseArgs(%q, %d) printed %q", c.args, c.command, out.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs(%q, %d): %v", c.args, c.command, err)
			}
			got := parseArgsCase{pos: fs.Args(), s: *s, n: *n, v: *v}
			want := parseArgsCase{pos: c.pos, s: c.s, n: c.n, v: c.v}
			if got.pos == nil {
				got.pos = []string{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parseArgs(%q, %d): args %q -s %q -n %d -v %v; want args %q -s %q -n %d -v %v",
					c.args, c.command, got.pos, got.s, got.n, got.v, want.pos, want.s, want.n, want.v)
			}
			if out.Len() != 0 {
				t.Errorf("parseArgs(%q, %d) printed %q", c.args, c.command, out.String())
			}
		})
	}
}

// With command 1, parseArgs is Go's fs.Parse, flags up to the first
// positional argument: what "zkgo cli" (whose flags zkcli.Main parses with
// fs.Parse) relies on to pass its zkCli command line on whole.
func TestParseArgsCommandOneIsFlagParse(t *testing.T) {
	for _, c := range parseArgsCases {
		var out1, out2 bytes.Buffer
		fs1, s1, n1, v1 := newParseArgsFlags(&out1)
		fs2, s2, n2, v2 := newParseArgsFlags(&out2)
		err1 := parseArgs(fs1, c.args, 1)
		err2 := fs2.Parse(c.args)
		if fmt.Sprint(err1) != fmt.Sprint(err2) || out1.String() != out2.String() ||
			err2 == nil && !reflect.DeepEqual(fs1.Args(), fs2.Args()) && len(fs1.Args())+len(fs2.Args()) > 0 ||
			*s1 != *s2 || *n1 != *n2 || *v1 != *v2 {
			t.Errorf("%q: parseArgs(..., 1): %v %q -s %q -n %d -v %v; fs.Parse: %v %q -s %q -n %d -v %v",
				c.args, err1, fs1.Args(), *s1, *n1, *v1, err2, fs2.Args(), *s2, *n2, *v2)
		}
	}
}

// runMain runs "zkgo args..." in this process, through run as main does,
// and returns its exit status and what it wrote to stdout and stderr (it
// swaps os.Stdout and os.Stderr meanwhile: not for parallel tests).
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer outF.Close()
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errF.Close()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	func() {
		defer func() { os.Stdout, os.Stderr = oldOut, oldErr }()
		code = run(args)
	}()
	o, err := os.ReadFile(outF.Name())
	if err != nil {
		t.Fatal(err)
	}
	e, err := os.ReadFile(errF.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(o), string(e)
}

// argsTree is a small tree: /app with data and a child.
func argsTree(t *testing.T) *tree.Tree {
	t.Helper()
	tr := tree.New()
	world := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	zxid := int64(1 << 32)
	for _, p := range []string{"/app", "/app/child"} {
		zxid++
		txn := &tree.Txn{Op: proto.OpCreate, Time: 1_700_000_000_000, Req: &proto.CreateRequest{Path: p, Data: []byte("data of " + p), ACL: world}}
		if r := tr.Apply(zxid, txn); r.Err != proto.ErrOk {
			t.Fatalf("create %s: %v", p, r.Err)
		}
	}
	return tr
}

// argsZKDataDir writes argsTree as an Apache ZooKeeper data directory
// (DIR/version-2/snapshot.<zxid>) and returns DIR and the snapshot file.
func argsZKDataDir(t *testing.T) (dir, snapshot string) {
	t.Helper()
	dir = t.TempDir()
	snapshot, err := writeZKSnapshot(dir, argsTree(t), zkdata.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, snapshot
}

// wantRun fails t unless the command exited with code and its stdout holds
// every one of wants.
func wantRun(t *testing.T, args []string, code, gotCode int, stdout, stderr string, wants ...string) {
	t.Helper()
	if gotCode != code {
		t.Fatalf("zkgo %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, gotCode, code, stdout, stderr)
	}
	for _, w := range wants {
		if !strings.Contains(stdout, w) {
			t.Fatalf("zkgo %q: stdout lacks %q\nstdout:\n%s\nstderr:\n%s", args, w, stdout, stderr)
		}
	}
}

// "zkgo import ZK_DATA_DIR -data-dir DIR": flags after the ZooKeeper
// data directory, and between it and ZK_DATA_LOG_DIR.
func TestImportFlagsAfterArguments(t *testing.T) {
	zkDir, _ := argsZKDataDir(t)
	out := t.TempDir()
	args := []string{"import", zkDir, "-data-dir", out, "-verify"}
	code, stdout, stderr := runMain(t, args...)
	wantRun(t, args, 0, code, stdout, stderr, "znodes:", "verified: the written tree has the input's digest")
	if _, err := os.Stat(filepath.Join(out, "zkgo")); err != nil {
		t.Fatal(err)
	}
	// Both directories, a flag between them, a dry run.
	args = []string{"import", zkDir, "-n", zkDir, "-data-dir", t.TempDir()}
	code, stdout, stderr = runMain(t, args...)
	wantRun(t, args, 0, code, stdout, stderr, "dry run: nothing written")
	// An unknown flag after the directory is refused as before it.
	code, _, stderr = runMain(t, "import", zkDir, "-data-dir", out, "-bogus")
	if code != 2 || !strings.Contains(stderr, "flag provided but not defined: -bogus") {
		t.Fatalf("an unknown flag after ZK_DATA_DIR: exit %d\n%s", code, stderr)
	}
}

// "zkgo export OUT_DIR -data-dir DIR".
func TestExportFlagsAfterArguments(t *testing.T) {
	var b bytes.Buffer
	if err := argsTree(t).WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := server.SeedDataDir(server.Options{DataDir: data}, &b); err != nil {
		t.Fatal(err)
	}
	outDir := t.TempDir()
	args := []string{"export", outDir, "-data-dir", data, "-no-digest"}
	code, stdout, stderr := runMain(t, args...)
	wantRun(t, args, 0, code, stdout, stderr, "znodes:", "wrote "+filepath.Join(outDir, "version-2", "snapshot."))
}

// "zkgo snapshot restore FILE -data-dir DIR", "zkgo snapshot status -- FILE"
// and "zkgo snapshot save DIR -server HOST:PORT -auth USER:PASSWORD".
func TestSnapshotFlagsAfterArguments(t *testing.T) {
	_, snap := argsZKDataDir(t)
	t.Run("restore", func(t *testing.T) {
		data := t.TempDir()
		args := []string{"snapshot", "restore", snap, "-data-dir", data}
		code, stdout, stderr := runMain(t, args...)
		wantRun(t, args, 0, code, stdout, stderr, "wrote the zkgo data directory "+filepath.Join(data, "zkgo"))
	})
	t.Run("status", func(t *testing.T) {
		args := []string{"snapshot", "status", "--", snap}
		code, stdout, stderr := runMain(t, args...)
		wantRun(t, args, 0, code, stdout, stderr, "checksums good")
	})
	t.Run("save", func(t *testing.T) {
		// An AdminServer's snapshot command, as fetchSnapshot asks it.
		tr := argsTree(t)
		var body bytes.Buffer
		if err := zkdata.WriteSnapshot(&body, tr, zkdata.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/commands/snapshot" || r.Header.Get("Authorization") != "digest u:p" {
				http.Error(w, "no", http.StatusForbidden)
				return
			}
			w.Header().Set("last_zxid", fmt.Sprintf("0x%x", tr.LastZxid()))
			w.Write(body.Bytes())
		}))
		defer admin.Close()
		dir := t.TempDir()
		args := []string{"snapshot", "save", dir, "-server", strings.TrimPrefix(admin.URL, "http://"), "-auth", "u:p"}
		code, stdout, stderr := runMain(t, args...)
		wantRun(t, args, 0, code, stdout, stderr, "saved "+filepath.Join(dir, "snapshot."))
	})
}

// "zkgo fourlw WORD -server HOST:PORT".
func TestFourLWFlagsAfterArguments(t *testing.T) {
	srv := zktest.Start(t)
	args := []string{"fourlw", "ruok", "-server", srv.Addr(), "-timeout", "10s"}
	code, stdout, stderr := runMain(t, args...)
	wantRun(t, args, 0, code, stdout, stderr, "imok")
}

// "zkgo bench WORKLOAD ..." took flags after WORKLOAD before (a second
// fs.Parse); through parseArgs they also follow a stray argument, which
// alone is reported.
func TestBenchFlagsAfterArguments(t *testing.T) {
	code, _, stderr := runMain(t, "bench", "get", "extra", "-json", "-quiet")
	if code != 2 || !strings.Contains(stderr, `zkgo bench: unexpected arguments ["extra"]`+"\n") {
		t.Fatalf("zkgo bench get extra -json -quiet: exit %d, want 2 with only \"extra\" unexpected\n%s", code, stderr)
	}
}

// "zkgo server zoo.cfg -addr HOST:PORT" (the binary: a server runs until
// stopped).
func TestServerFlagsAfterArguments(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "zoo.cfg")
	text := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=2181\nadmin.enableServer=false\n", t.TempDir())
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, addr := startServer(t, cfg, "-addr", "127.0.0.1:0", "-log-level", "warn")
	if !strings.HasPrefix(addr, "127.0.0.1:") || addr == "127.0.0.1:2181" {
		t.Fatalf("zkgo server zoo.cfg -addr 127.0.0.1:0 listens on %s", addr)
	}
}

// "zkgo lock PATH -server ... -- COMMAND ARGS": flags after PATH, none
// read from COMMAND on, with or without "--" (the binary: lock supervises
// its command in a process group of its own).
func TestLockFlagsAfterArguments(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zkgo lock's tests run on linux")
	}
	srv := zktest.Start(t)
	script := `printf '%s|' "$ZKGO_LOCK_PATH" "$@"`
	for _, c := range []struct {
		args []string
		want string // after the lock node's path
	}{
		{[]string{"lock", "/fa", "-server", srv.Addr(), "-timeout", "2000", "-wait", "10s", "--", "sh", "-c", script, "sh", "-wait", "--", "-x"}, "|-wait|--|-x|"},
		{[]string{"lock", "-timeout", "2000", "/fa", "-server", srv.Addr(), "sh", "-c", script, "sh", "-server", "y"}, "|-server|y|"},
	} {
		stdout, stderr, code := runCommand(t, c.args...)
		if code != 0 || !strings.HasPrefix(stdout, "/fa/") || !strings.HasSuffix(stdout, c.want) {
			t.Errorf("zkgo %q: exit %d, stdout %q, want /fa/...%s\nstderr:\n%s", c.args, code, stdout, c.want, stderr)
		}
	}
}

// "zkgo elect PATH -once -id ID -- COMMAND ARGS" and "zkgo elect PATH
// -list": flags after PATH (the binary, as for lock).
func TestElectFlagsAfterArguments(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("zkgo elect's tests run on linux")
	}
	srv := zktest.Start(t)
	args := []string{"elect", "/fe", "-server", srv.Addr(), "-timeout", "2000", "-once", "-id", "solo", "--",
		"sh", "-c", `echo "ran $ZKGO_LEADER_ID $*"; exit 5`, "sh", "-once", "-id", "x"}
	stdout, stderr, code := runCommand(t, args...)
	if code != 5 || stdout != "ran solo -once -id x\n" {
		t.Fatalf("zkgo %q: exit %d (want the command's 5), stdout %q\nstderr:\n%s", args, code, stdout, stderr)
	}
	args = []string{"elect", "/fe", "-list", "-server", srv.Addr(), "-timeout", "2s"}
	if stdout, stderr, code := runCommand(t, args...); code != 0 || stdout != "" {
		t.Fatalf("zkgo %q: exit %d, stdout %q\nstderr:\n%s", args, code, stdout, stderr)
	}
}
