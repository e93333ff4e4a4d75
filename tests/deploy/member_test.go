package deploy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/zk"
)

// zkgoBin is the zkgo binary the tests run, built once (TestMain).
var zkgoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zkgo-deploy")
	if err != nil {
		panic(err)
	}
	zkgoBin = filepath.Join(dir, "zkgo")
	if bin := os.Getenv("ZKGO_DEPLOY_BIN"); bin != "" {
		zkgoBin = bin // another build (an earlier release, to compare)
	} else if out, err := exec.Command("go", "build", "-o", zkgoBin, "../../cmd/zkgo").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("building zkgo: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// impl is a server implementation the scripts run against.
type impl string

const (
	zkgo   impl = "zkgo"
	apache impl = "apache"
)

// impls returns the implementations to run a script against: zkgo, and
// Apache ZooKeeper when it is installed (else a log line says why not).
func impls(t testing.TB) []impl {
	if _, _, err := apachezk.MainCommand("zoo.cfg", "log"); err != nil {
		if os.Getenv(apachezk.RequireEnv) == "1" {
			t.Fatalf("Apache ZooKeeper is required here: %v", err)
		}
		t.Logf("Apache ZooKeeper's side skipped: %v", err)
		return []impl{zkgo}
	}
	return []impl{zkgo, apache}
}

// member is one server process on a machine.
type member struct {
	t    testing.TB
	impl impl
	m    *machine
	id   int64
	dir  string // dataDir; zoo.cfg and the log are beside it
	cfg  string
	// jvmFlags are what an operator puts in SERVER_JVMFLAGS: Apache's
	// JVM gets them, zkgo reads them from that variable.
	jvmFlags []string

	mu     sync.Mutex // guards cmd, exited, log
	cmd    *exec.Cmd
	exited chan struct{}
	log    *logBuf
}

// logBuf keeps a process's output, safe for concurrent use.
type logBuf struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newMember prepares member id of implementation im on machine m, with
// myid written; its zoo.cfg is written by writeConfig.
func newMember(t testing.TB, im impl, m *machine, id int64) *member {
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d", im, id), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mb := &member{t: t, impl: im, m: m, id: id, dir: dir, cfg: filepath.Join(filepath.Dir(dir), "zoo.cfg")}
	mb.writeMyID(id)
	t.Cleanup(func() {
		mb.kill()
		if t.Failed() {
			t.Logf("--- %s server.%d (%s) log, without raft's own lines ---\n%s", im, id, m.ip4, lastLines(mb.output(), 60))
		}
	})
	return mb
}

func (mb *member) writeMyID(id int64) {
	if err := os.WriteFile(filepath.Join(mb.dir, "myid"), []byte(fmt.Sprintf("%d\n", id)), 0o644); err != nil {
		mb.t.Fatal(err)
	}
}

// writeConfig writes the member's zoo.cfg: the common settings, then body
// (server lines and any other keys).
func (mb *member) writeConfig(body string) {
	mb.t.Helper()
	text := fmt.Sprintf(`tickTime=200
initLimit=10
syncLimit=5
dataDir=%s
clientPort=2181
maxSessionTimeout=20000
4lw.commands.whitelist=*
admin.enableServer=false
%s
`, mb.dir, body)
	if err := os.WriteFile(mb.cfg, []byte(text), 0o644); err != nil {
		mb.t.Fatal(err)
	}
}

// start runs the member's server on its machine.
func (mb *member) start() {
	mb.t.Helper()
	var cmd *exec.Cmd
	switch mb.impl {
	case zkgo:
		cmd = mb.m.command(zkgoBin, "server", "-admin-addr", "off", mb.cfg)
		cmd.Env = append(os.Environ(), "SERVER_JVMFLAGS="+strings.Join(mb.jvmFlags, " "))
	case apache:
		java, args, err := apachezk.MainCommand(mb.cfg, filepath.Join(filepath.Dir(mb.dir), "server.log"), mb.jvmFlags...)
		if err != nil {
			mb.t.Fatal(err)
		}
		cmd = mb.m.command(java, args...)
	}
	log := &logBuf{}
	cmd.Stdout, cmd.Stderr = log, log
	// No Pdeathsig: it fires when the forking OS thread ends, and the
	// threads that entered the hub's namespace (inHub) are ended on
	// purpose. The test's cleanup kills its members.
	if err := cmd.Start(); err != nil {
		mb.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	mb.mu.Lock()
	mb.cmd, mb.exited, mb.log = cmd, exited, log
	mb.mu.Unlock()
}

// kill stops the member with SIGKILL and waits until it has exited, so
// that it can be started again on the same directory.
func (mb *member) kill() {
	mb.mu.Lock()
	cmd, exited := mb.cmd, mb.exited
	mb.cmd = nil
	mb.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// output is what the process wrote (zkgo's log; for Apache, its log file).
func (mb *member) output() string {
	mb.mu.Lock()
	log := mb.log
	mb.mu.Unlock()
	var s string
	if log != nil {
		s = log.String()
	}
	if mb.impl == apache {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(mb.dir), "server.log"))
		s += string(b)
	}
	return s
}

// running reports whether the process is still up.
func (mb *member) running() bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.cmd == nil {
		return false
	}
	select {
	case <-mb.exited:
		return false
	default:
		return true
	}
}

// clientAddr is where clients reach the member (its IPv4 address, or
// addr if the member's client port listens elsewhere).
func (mb *member) clientAddr() string { return mb.m.ip4 + ":2181" }

// fourLetterWord sends cmd to the member's client port from the hub.
func (mb *member) fourLetterWord(ctx context.Context, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := mb.m.n.dial(ctx, "tcp", mb.clientAddr())
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(bufio.NewReader(c))
	return string(b), err
}

// mode is the member's Mode from srvr ("" if it does not serve).
func (mb *member) mode(ctx context.Context) string {
	out, err := mb.fourLetterWord(ctx, "srvr")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// connect opens a session on the given members (from the hub).
func connect(ctx context.Context, t testing.TB, ms ...*member) *zk.Conn {
	t.Helper()
	var hosts []string
	for _, m := range ms {
		hosts = append(hosts, m.clientAddr())
	}
	c, err := zk.Connect(ctx, strings.Join(hosts, ","), zk.WithSessionTimeout(10*time.Second), zk.WithDialer(ms[0].m.n.dial),
		zk.WithConnectBackoff(50*time.Millisecond, 500*time.Millisecond))
	if err != nil {
		t.Fatalf("connect to %s: %v", strings.Join(hosts, ","), err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ensemble is a set of members of one implementation.
type ensemble []*member

// waitLeader waits until exactly one member says it leads and every other
// running member of want follows (or observes), and returns the leader.
func (e ensemble) waitLeader(ctx context.Context, t testing.TB) *member {
	t.Helper()
	for {
		var lead *member
		leaders, others := 0, 0
		running := 0
		for _, m := range e {
			if !m.running() {
				continue
			}
			running++
			switch m.mode(ctx) {
			case "leader", "standalone":
				leaders++
				lead = m
			case "follower", "observer":
				others++
			}
		}
		if leaders == 1 && leaders+others == running {
			return lead
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: no leader with every running member serving (%d leaders, %d others of %d running)", e[0].impl, leaders, others, running)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeThenRead creates path through w and reads it through r (after a
// sync), retrying what a change of leader interrupts.
func writeThenRead(ctx context.Context, t testing.TB, w, r *member, path string) {
	t.Helper()
	cw := connect(ctx, t, w)
	for {
		_, err := cw.Create(ctx, path, []byte(path), zk.OpenACLUnsafe, zk.ModePersistent)
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: create %s through server.%d: %v", w.impl, path, w.id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cw.Close()
	cr := connect(ctx, t, r)
	defer cr.Close()
	for {
		_, err := cr.Sync(ctx, path)
		if err == nil {
			var data []byte
			if data, _, err = cr.Get(ctx, path); err == nil && string(data) == path {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: read %s through server.%d: %v", r.impl, path, r.id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastLines returns the last n lines of a log, without raft's own
// election chatter (zkgo's "raft: …" lines), which drowns what matters.
func lastLines(s string, n int) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, `msg="raft: `) {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, "\n")
}
