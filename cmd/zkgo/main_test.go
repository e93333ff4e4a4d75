package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

var binary string

// vcsStamped: binary carries the commit it was built from (-buildvcs),
// stampedRev.
var (
	vcsStamped bool
	stampedRev string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zkgo-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "zkgo")
	// Stamped with the commit, as a go build in a checkout is by default
	// (this machine's GOFLAGS may say -buildvcs=false); without git or a
	// repository, or in a git worktree, which Go does not stamp, without.
	if exec.Command("go", "build", "-buildvcs=true", "-o", binary, ".").Run() != nil {
		if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			panic("building zkgo: " + err.Error() + "\n" + string(out))
		}
	}
	if out, err := exec.Command("go", "version", "-m", binary).Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if _, rev, ok := strings.Cut(l, "vcs.revision="); ok {
				vcsStamped, stampedRev = true, strings.TrimSpace(rev)
			}
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var listenRE = regexp.MustCompile(`listening on (\S+)`)

// startServer runs "zkgo server args..." and returns the process and the
// address it prints.
func startServer(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, addr, _ := startServerLog(t, args...)
	return cmd, addr
}

// syncBuf is a buffer safe for a process's output copier and a test
// reading it at the same time.
type syncBuf struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServerLog is startServer that also returns the server's log (its
// stderr) as it grows.
func startServerLog(t *testing.T, args ...string) (*exec.Cmd, string, *syncBuf) {
	t.Helper()
	return startServerCmd(t, exec.Command(binary, append([]string{"server"}, args...)...))
}

// startCommandLog runs "zkgo args..." with env added to the environment, a
// command that starts a server ("server", "container"), and returns the
// process, the address it prints and its log.
func startCommandLog(t *testing.T, env []string, args ...string) (*exec.Cmd, string, *syncBuf) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return startServerCmd(t, cmd)
}

// startServerCmd is startServerLog for a "zkgo server" command prepared by
// the caller (its environment, say).
func startServerCmd(t *testing.T, cmd *exec.Cmd) (*exec.Cmd, string, *syncBuf) {
	t.Helper()
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				lines <- m[1]
				return
			}
		}
		close(lines)
	}()
	select {
	case addr, ok := <-lines:
		if !ok {
			t.Fatalf("server exited without listening; stderr:\n%s", stderr.String())
		}
		return cmd, addr, stderr
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not report its address; stderr:\n%s", stderr.String())
	}
	return nil, "", nil
}

func TestServerRunsAndStopsOnSIGTERM(t *testing.T) {
	cmd, addr := startServer(t, "-addr", "127.0.0.1:0", "-admin-addr", "off")
	c, err := rawzk.Dial(addr, rawzk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Call(proto.OpCreate, &proto.CreateRequest{Path: "/x", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}}, nil)
	if err != nil || h.Err != proto.ErrOk {
		t.Fatalf("create: %+v %v", h, err)
	}
	c.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not stop on SIGTERM")
	}
}

func TestServerFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	os.WriteFile(cfg, []byte("tickTime=100\ndataDir="+dir+"\nclientPort="+strconv.Itoa(port)+"\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\n"+
		"metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\nmetricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=0\n"), 0o644)
	_, addr, logs := startServerLog(t, cfg)
	c, err := rawzk.Dial(addr, rawzk.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Session.TimeOut != 2000 { // maxSessionTimeout = 20 ticks
		t.Fatalf("negotiated timeout %d, want 2000", c.Session.TimeOut)
	}
	// The metrics endpoint, logged before the client address is printed
	// (zkgo server logs the URL with the port it bound).
	var m []string
	for deadline := time.Now().Add(10 * time.Second); m == nil; time.Sleep(10 * time.Millisecond) {
		// stderr is copied on a goroutine of its own: it may lag stdout.
		if m = metricsURLRE.FindStringSubmatch(logs.String()); m == nil && time.Now().After(deadline) {
			t.Fatalf("no metrics endpoint logged:\n%s", logs.String())
		}
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "\nznode_count ") {
		t.Fatalf("GET %s: %s\n%.500s", m[1], resp.Status, body)
	}
}

var metricsURLRE = regexp.MustCompile(`url=(http://\S+/metrics)`)

// A zoo.cfg asking for TLS that zkgo cannot give (no key store; TLS
// between members) stops the server with a message, never plaintext.
func TestServerRefusesTLSConfig(t *testing.T) {
	dir := t.TempDir()
	for _, extra := range []string{"secureClientPort=2281\n", "sslQuorum=true\n", "secureClientPort=2281\nssl.keyStore.location=" + dir + "/missing.pem\n"} {
		cfg := filepath.Join(dir, "zoo.cfg")
		os.WriteFile(cfg, []byte("tickTime=2000\ndataDir="+dir+"\nclientPort=0\nadmin.enableServer=false\n"+extra), 0o644)
		out, err := exec.Command(binary, "server", cfg).CombinedOutput()
		if err == nil {
			t.Fatalf("server started with %q:\n%s", extra, out)
		}
		if !strings.Contains(string(out), "TLS") {
			t.Fatalf("%q: error does not mention TLS:\n%s", extra, out)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"server", "--help"}, {"server", "-help"}} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "Usage") && !strings.Contains(string(out), "usage") {
			t.Fatalf("%v: no usage text:\n%s", args, out)
		}
	}
	out, _ := exec.Command(binary, "server", "--help").CombinedOutput()
	for _, flag := range []string{"-addr", "-log-level", "fsynced before it is"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("server help does not mention %q", flag)
		}
	}
	if err := exec.Command(binary, "nosuchcommand").Run(); err == nil {
		t.Error("unknown command exited 0")
	}
}

// TestTortureNeedsFaultHooks: a binary built without -tags zkgofaults
// refuses to run zkgo torture, saying how to build one that can.
func TestTortureNeedsFaultHooks(t *testing.T) {
	out, err := exec.Command(binary, "torture", "-duration", "1s").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("zkgo torture without the hooks: %v, want exit status 2\n%s", err, out)
	}
	if !strings.Contains(string(out), "-tags zkgofaults") {
		t.Fatalf("the refusal does not say how to build with the hooks:\n%s", out)
	}
}

// -log-format json makes every log line one JSON object with slog's
// time, level and msg keys and the line's attributes as fields.
func TestServerJSONLogs(t *testing.T) {
	cmd, _, logs := startServerLog(t, "-addr", "127.0.0.1:0", "-log-format", "json")
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	sawShutdown := false
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q (%v)", l, err)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("log line without %q: %q", k, l)
			}
		}
		if m["msg"] == "shutting down" && m["signal"] == "terminated" {
			sawShutdown = true
		}
	}
	if !sawShutdown {
		t.Fatalf("no shutdown line with its signal attribute in:\n%s", logs.String())
	}
	out, err := exec.Command(binary, "server", "-log-format", "xml").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `bad -log-format "xml"`) {
		t.Fatalf("-log-format xml: %v\n%s", err, out)
	}
}

var adminURLRE = regexp.MustCompile(`AdminServer started" url=(http://\S+)`)

// zoo.cfg's admin.* keys start the AdminServer (port 0: a free port,
// logged); a port that is taken is logged and the server runs without it.
func TestServerAdminFromZooCfg(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())
	for _, tt := range []struct {
		name, port string
		serves     bool
	}{{"free port", "0", true}, {"port in use", takenPort, false}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "zoo.cfg")
			os.WriteFile(cfg, []byte("tickTime=100\ndataDir="+dir+"\nclientPort="+strconv.Itoa(zktest.FreePort(t))+"\nclientPortAddress=127.0.0.1\n"+
				"admin.serverAddress=127.0.0.1\nzookeeper.admin.serverPort="+tt.port+"\nadmin.commandURL=/cmds\n"), 0o644)
			_, addr, logs := startServerLog(t, cfg)
			if !tt.serves {
				// The server answers; the log says why there is no AdminServer.
				if out, err := zk.FourLetterWord(t.Context(), addr, "srvr"); err != nil || !strings.Contains(out, "Mode: standalone") {
					t.Fatalf("srvr: %q %v", out, err)
				}
				for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "AdminServer not started"); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("no warning logged:\n%s", logs.String())
					}
				}
				if l := logs.String(); !strings.Contains(l, "127.0.0.1:"+takenPort) || !strings.Contains(l, "admin.serverPort") {
					t.Errorf("warning does not name the address and the key:\n%s", l)
				}
				return
			}
			var m []string
			for deadline := time.Now().Add(10 * time.Second); m == nil; time.Sleep(10 * time.Millisecond) {
				if m = adminURLRE.FindStringSubmatch(logs.String()); m == nil && time.Now().After(deadline) {
					t.Fatalf("no AdminServer logged:\n%s", logs.String())
				}
			}
			resp, err := http.Get(m[1] + "/mntr")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"server_state": "standalone"`) || !strings.Contains(string(body), `"command": "monitor"`) {
				t.Fatalf("GET %s/mntr: %s\n%.500s", m[1], resp.Status, body)
			}
			resp, err = http.Get(m[1] + "/initial_configuration")
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `admin.commandURL=/cmds\n`) {
				t.Errorf("initial_configuration: %s", body)
			}
		})
	}
}
