//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// The tests of "zkgo lock" and "zkgo elect" run the zkgo binary built by
// TestMain (main_test.go) against a zktest server (tick 100 ms: session
// timeouts from 200 ms to 2 s).

// leLine is a line a supervised process printed on its stdout.
type leLine struct {
	p    *leProc
	text string
}

// leProc is a running "zkgo lock" or "zkgo elect".
type leProc struct {
	name   string
	cmd    *exec.Cmd
	done   chan struct{} // closed when zkgo exited
	status int           // exit status (-1 if killed by a signal), after done
	mu     sync.Mutex
	stderr bytes.Buffer
	quit   chan struct{}
}

func (p *leProc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// leStart starts "zkgo args...". Its stdout lines go to out. Its stdout and
// stderr are pipes that the supervised command inherits; they are read by
// goroutines of their own, so that zkgo's exit is seen even while
// something else still holds a pipe.
func leStart(t *testing.T, name string, out chan<- leLine, args ...string) *leProc {
	t.Helper()
	p := &leProc{name: name, done: make(chan struct{}), quit: make(chan struct{})}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	go func() {
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			select {
			case out <- leLine{p, sc.Text()}:
			case <-p.quit:
				return
			}
		}
	}()
	go func() {
		defer errR.Close()
		buf := make([]byte, 4096)
		for {
			n, err := errR.Read(buf)
			p.mu.Lock()
			p.stderr.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		p.cmd.Wait()
		p.status = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		close(p.quit)
	})
	return p
}

// wait waits for zkgo to exit and returns its status.
func (p *leProc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.status
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v; stderr:\n%s", p.name, within, p.Stderr())
	}
	return 0
}

// leExpect reads lines from out until one starts with prefix.
func leExpect(t *testing.T, out <-chan leLine, prefix string, within time.Duration) leLine {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l := <-out:
			if strings.HasPrefix(l.text, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line starting with %q within %v", prefix, within)
		}
	}
}

// fields parses "word N N ..." into its numbers.
func fields(t *testing.T, line string) []int64 {
	t.Helper()
	f := strings.Fields(line)
	var ns []int64
	for _, s := range f[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			continue
		}
		ns = append(ns, n)
	}
	return ns
}

// leGone reports whether pid has exited; a zombie counts as gone (it runs
// no more code, and the container's init may reap it late).
func leGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z' || b[i+2] == 'X'
	}
	return false
}

func leWaitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !leGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs %v later", pid, within)
		}
		time.Sleep(5 * time.Millisecond) // polls a condition; nothing to be notified by
	}
}

func leConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// leWaitChildren waits (with watches) until path has n children, and
// returns them.
func leWaitChildren(t *testing.T, c *zk.Conn, path string, n int, within time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		kids, _, ev, err := c.ChildrenW(ctx, path)
		if errors.Is(err, zk.ErrNoNode) && n == 0 {
			return nil
		}
		if errors.Is(err, zk.ErrNoNode) {
			var ex <-chan zk.Event
			if _, ex, err = c.ExistsW(ctx, path); err == nil {
				select {
				case <-ex:
					continue
				case <-ctx.Done():
					t.Fatalf("%s never appeared", path)
				}
			}
		}
		if err != nil {
			t.Fatalf("children of %s: %v", path, err)
		}
		if len(kids) == n {
			return kids
		}
		select {
		case <-ev:
		case <-ctx.Done():
			t.Fatalf("%s has %d children, want %d", path, len(kids), n)
		}
	}
}

// checkTurns reads a log of "start PID TOKEN [ID]" / "end PID" lines and
// checks that the turns never overlap and the tokens increase. It returns
// the number of turns and the distinct ids seen.
func checkTurns(t *testing.T, file string) (turns int, ids map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ids = map[string]bool{}
	var open string
	var lastToken int64 = -1
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "start":
			if open != "" {
				t.Fatalf("line %d: %q while %s still runs:\n%s", i+1, line, open, b)
			}
			open = f[1]
			tok, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil || tok <= lastToken {
				t.Fatalf("line %d: token %q not above the previous %d:\n%s", i+1, f[2], lastToken, b)
			}
			lastToken = tok
			if len(f) > 3 {
				ids[f[3]] = true
			}
			turns++
		case len(f) == 2 && f[0] == "end":
			if open != f[1] {
				t.Fatalf("line %d: %q but %q runs:\n%s", i+1, line, open, b)
			}
			open = ""
		default:
			t.Fatalf("line %d: unexpected %q", i+1, line)
		}
	}
	return turns, ids
}

// A turn appends "start PID TOKEN ID", pauses, appends "end PID" and
// prints "turn".
func turnScript(file string) string {
	return fmt.Sprintf(`f='%s'; echo "start $$ $ZKGO_FENCING_TOKEN $ZKGO_LEADER_ID" >> "$f"; sleep 0.1; echo "end $$" >> "$f"; echo turn`, file)
}

func TestLockExcludes(t *testing.T) {
	srv := zktest.Start(t)
	file := filepath.Join(t.TempDir(), "turns")
	out := make(chan leLine, 100)
	var ps []*leProc
	for i := range 4 {
		ps = append(ps, leStart(t, fmt.Sprintf("lock%d", i), out,
			"lock", "-server", srv.Addr(), "-timeout", "2000", "/excl", "--", "sh", "-c", turnScript(file)))
	}
	for _, p := range ps {
		if st := p.wait(t, 20*time.Second); st != 0 {
			t.Fatalf("%s exited %d; stderr:\n%s", p.name, st, p.Stderr())
		}
	}
	if turns, _ := checkTurns(t, file); turns != 4 {
		t.Fatalf("%d turns, want 4", turns)
	}
}

func TestLockKilledHolder(t *testing.T) {
	srv := zktest.Start(t)
	c := leConn(t, srv.Addr())
	out := make(chan leLine, 100)
	const timeout = 1000 * time.Millisecond
	a := leStart(t, "holder", out, "lock", "-server", srv.Addr(), "-timeout", "1000", "/kill", "--",
		"sh", "-c", `sleep 100 & echo "holder $$ $! $ZKGO_FENCING_TOKEN"; wait`)
	h := fields(t, leExpect(t, out, "holder ", 10*time.Second).text)
	child, grandchild, tokenA := int(h[0]), int(h[1]), h[2]

	b := leStart(t, "waiter", out, "lock", "-server", srv.Addr(), "-timeout", "2000", "/kill", "--",
		"sh", "-c", `echo "got $ZKGO_FENCING_TOKEN"`)
	leWaitChildren(t, c, "/kill", 2, 10*time.Second)

	killed := time.Now()
	a.cmd.Process.Kill()
	a.wait(t, 5*time.Second)
	got := leExpect(t, out, "got ", 10*time.Second)
	handover := time.Since(killed)
	// The old holder's command and its background child must be gone by
	// the time another process holds the lock.
	if !leGone(child) || !leGone(grandchild) {
		t.Fatalf("lock handed over while the killed holder's processes run (child %d gone %v, grandchild %d gone %v)",
			child, leGone(child), grandchild, leGone(grandchild))
	}
	if tokenB := fields(t, got.text)[0]; tokenB <= tokenA {
		t.Fatalf("new token %d not above the killed holder's %d", tokenB, tokenA)
	}
	if st := b.wait(t, 10*time.Second); st != 0 {
		t.Fatalf("waiter exited %d; stderr:\n%s", st, b.Stderr())
	}
	t.Logf("handover %v after kill -9 (session timeout %v)", handover, timeout)
}

func TestLockSessionExpired(t *testing.T) {
	srv := zktest.Start(t)
	c := leConn(t, srv.Addr())
	out := make(chan leLine, 100)
	a := leStart(t, "holder", out, "lock", "-server", srv.Addr(), "-timeout", "2000", "/exp", "--",
		"sh", "-c", `trap 'echo term; exit 0' TERM; echo "holder $$ $ZKGO_LOCK_PATH"; sleep 100 & wait`)
	holder := leExpect(t, out, "holder ", 10*time.Second).text
	pid := int(fields(t, holder)[0])
	kids := leWaitChildren(t, c, "/exp", 1, 10*time.Second)
	if want := "/exp/" + kids[0]; strings.Fields(holder)[2] != want {
		t.Fatalf("ZKGO_LOCK_PATH: %q, want %q", holder, want)
	}
	st, err := c.Exists(context.Background(), "/exp/"+kids[0])
	if err != nil || st == nil || st.EphemeralOwner == 0 {
		t.Fatalf("lock node: %+v %v", st, err)
	}
	srv.ExpireSession(st.EphemeralOwner)
	leExpect(t, out, "term", 10*time.Second)
	if code := a.wait(t, 10*time.Second); code != exitLost {
		t.Fatalf("exit status %d, want %d; stderr:\n%s", code, exitLost, a.Stderr())
	}
	if e := a.Stderr(); !strings.Contains(e, "zkgo lock: lost the lock on /exp/") {
		t.Fatalf("stderr does not say the lock was lost:\n%s", e)
	}
	leWaitGone(t, pid, 5*time.Second)
}

// leProxy forwards TCP connections to a server until it is frozen; then it
// swallows everything in both directions, as a partition would.
type leProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frozen bool
	conns  []net.Conn
}

func leStartProxy(t *testing.T, target string) *leProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &leProxy{ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(c, s)
			go p.pipe(s, c)
		}
	}()
	return p
}

func (p *leProxy) pipe(from, to net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		p.mu.Lock()
		frozen := p.frozen
		p.mu.Unlock()
		if err != nil {
			if !frozen {
				to.Close()
			} // else: a partition hides the close too
			return
		}
		if !frozen {
			if _, err := to.Write(buf[:n]); err != nil {
				return
			}
		}
	}
}

func (p *leProxy) Addr() string { return p.ln.Addr().String() }

func (p *leProxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// TestLockPartitionedHolder cuts the holder off the server (its packets
// vanish): under the strict policy it sees the connection suspended at two
// thirds of the session timeout and must have stopped its command — which
// ignores SIGTERM, so SIGKILL after the grace period — before the server
// expires its session and the lock passes to the waiter.
func TestLockPartitionedHolder(t *testing.T) {
	srv := zktest.Start(t)
	c := leConn(t, srv.Addr())
	proxy := leStartProxy(t, srv.Addr())
	out := make(chan leLine, 100)
	a := leStart(t, "holder", out, "lock", "-server", proxy.Addr(), "-timeout", "2000", "/part", "--",
		"sh", "-c", `trap '' TERM; sleep 100 & echo "holder $$ $! $ZKGO_FENCING_TOKEN"; wait`)
	h := fields(t, leExpect(t, out, "holder ", 10*time.Second).text)
	leStart(t, "waiter", out, "lock", "-server", srv.Addr(), "-timeout", "2000", "/part", "--",
		"sh", "-c", `echo "got $ZKGO_FENCING_TOKEN"`)
	leWaitChildren(t, c, "/part", 2, 10*time.Second)

	frozen := time.Now()
	proxy.Freeze()
	got := leExpect(t, out, "got ", 10*time.Second)
	handover := time.Since(frozen)
	for _, pid := range h[:2] {
		if !leGone(int(pid)) {
			t.Fatalf("lock handed over %v after the partition while the old holder's process %d runs", handover, pid)
		}
	}
	if tok := fields(t, got.text)[0]; tok <= h[2] {
		t.Fatalf("token %d not above %d", tok, h[2])
	}
	if code := a.wait(t, 10*time.Second); code != exitLost {
		t.Fatalf("holder exited %d, want %d; stderr:\n%s", code, exitLost, a.Stderr())
	}
	e := a.Stderr()
	if !strings.Contains(e, "zkgo lock: lost the lock on /part/") || !strings.Contains(e, "suspended") || !strings.Contains(e, "killed") {
		t.Fatalf("stderr:\n%s", e)
	}
	t.Logf("handover %v after the partition; holder said:\n%s", handover, e)
}

func TestLockWaitExpires(t *testing.T) {
	srv := zktest.Start(t)
	c := leConn(t, srv.Addr())
	out := make(chan leLine, 100)
	leStart(t, "holder", out, "lock", "-server", srv.Addr(), "-timeout", "2000", "/w", "--",
		"sh", "-c", `echo held; sleep 100 & wait`)
	leExpect(t, out, "held", 10*time.Second)
	start := time.Now()
	b := leStart(t, "waiter", out, "lock", "--server", srv.Addr(), "-timeout", "2s", "--wait", "200ms", "/w", "--", "echo", "ran")
	if code := b.wait(t, 10*time.Second); code != exitWait {
		t.Fatalf("exit status %d, want %d; stderr:\n%s", code, exitWait, b.Stderr())
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("gave up after %v, before -wait 200ms", d)
	}
	if e := b.Stderr(); !strings.HasPrefix(e, "zkgo lock: timed out after 200ms") {
		t.Fatalf("stderr: %q", e)
	}
	// The waiter's node is gone; the holder's stays.
	leWaitChildren(t, c, "/w", 1, 10*time.Second)
}

func TestLockForwardsSignals(t *testing.T) {
	srv := zktest.Start(t)
	c := leConn(t, srv.Addr())
	out := make(chan leLine, 100)
	a := leStart(t, "holder", out, "lock", "-server", srv.Addr(), "-timeout", "2000", "-grace", "1m", "/sig", "--",
		"sh", "-c", `trap 'echo got-term; exit 7' TERM; echo ready; sleep 100 & wait`)
	leExpect(t, out, "ready", 10*time.Second)
	leWaitChildren(t, c, "/sig", 1, 10*time.Second)
	a.cmd.Process.Signal(syscall.SIGTERM)
	leExpect(t, out, "got-term", 10*time.Second)
	if code := a.wait(t, 10*time.Second); code != 7 {
		t.Fatalf("exit status %d, want the command's 7; stderr:\n%s", code, a.Stderr())
	}
	if e := a.Stderr(); !strings.Contains(e, "zkgo lock: warning: -grace 1m0s is longer than the safe bound") {
		t.Fatalf("no warning about -grace:\n%s", e)
	}
	kids, _, err := c.Children(context.Background(), "/sig")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	if len(kids) != 0 {
		t.Fatalf("lock nodes left: %v", kids)
	}
}

func TestLockUsage(t *testing.T) {
	for _, args := range [][]string{
		{"lock"},
		{"lock", "/x"},
		{"lock", "-timeout", "soon", "/x", "--", "true"},
		{"lock", "x", "--", "true"},
		{"lock", "-nosuchflag", "/x", "--", "true"},
		{"elect", "-list"},
		{"elect", "/x", "--"},
	} {
		err := exec.Command(binary, args...).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Errorf("%v: %v, want exit status %d", args, err, exitUsage)
		}
	}
	err := exec.Command(binary, "lock", "-server", "127.0.0.1:1", "/x", "--", "no-such-command-zkgo").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitNotFound {
		t.Errorf("missing command: %v, want exit status %d", err, exitNotFound)
	}
}

func TestElectOneLeaderAtATime(t *testing.T) {
	srv := zktest.Start(t)
	file := filepath.Join(t.TempDir(), "turns")
	out := make(chan leLine, 100)
	var ps []*leProc
	for i := range 3 {
		ps = append(ps, leStart(t, fmt.Sprintf("elect%d", i), out,
			"elect", "-server", srv.Addr(), "-timeout", "2000", "-id", fmt.Sprintf("n%d", i), "/el", "--", "sh", "-c", turnScript(file)))
	}
	for range 9 {
		leExpect(t, out, "turn", 20*time.Second)
	}
	for _, p := range ps {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range ps {
		p.wait(t, 10*time.Second)
	}
	turns, ids := checkTurns(t, file)
	if turns < 9 || len(ids) < 2 {
		t.Fatalf("%d turns by %v; want at least 9 turns by several participants", turns, ids)
	}
}

func TestElectKilledLeader(t *testing.T) {
	srv := zktest.Start(t)
	c := leConn(t, srv.Addr())
	out := make(chan leLine, 100)
	const timeout = 1500 * time.Millisecond
	procs := map[string]*leProc{}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i)
		procs[id] = leStart(t, id, out, "elect", "-server", srv.Addr(), "-timeout", "1500", "-id", id, "/lead", "--",
			"sh", "-c", `sleep 100 & echo "leader $ZKGO_LEADER_ID $$ $!"; wait`)
	}
	first := leExpect(t, out, "leader ", 10*time.Second)
	oldID := strings.Fields(first.text)[1]
	pids := fields(t, first.text)
	leWaitChildren(t, c, "/lead", 3, 10*time.Second)

	killed := time.Now()
	procs[oldID].cmd.Process.Kill()
	next := leExpect(t, out, "leader ", 10*time.Second)
	handover := time.Since(killed)
	newID := strings.Fields(next.text)[1]
	if newID == oldID {
		t.Fatalf("%s leads again after being killed", newID)
	}
	for _, pid := range pids {
		if !leGone(int(pid)) {
			t.Fatalf("%s leads while the killed leader's process %d runs", newID, pid)
		}
	}
	// The session times out after 1.5 s; the server's expiry runs on
	// 100 ms ticks, and the new leader's zkgo must start its command.
	if handover > timeout+time.Second {
		t.Fatalf("new leader after %v; session timeout %v", handover, timeout)
	}
	t.Logf("new leader %v after kill -9 (session timeout %v)", handover, timeout)

	leWaitChildren(t, c, "/lead", 2, 10*time.Second)
	list, err := exec.Command(binary, "elect", "-server", srv.Addr(), "-list", "/lead").Output()
	if err != nil {
		t.Fatalf("-list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(list)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "leader\t"+newID+"\t/lead/") || !strings.HasPrefix(lines[1], "waiting\t") {
		t.Fatalf("-list printed:\n%s\nwant the leader %s first, then one waiting participant", list, newID)
	}
	for id, p := range procs {
		if id != oldID {
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait(t, 10*time.Second)
		}
	}
	leWaitChildren(t, c, "/lead", 0, 10*time.Second)
}

func TestElectOnce(t *testing.T) {
	srv := zktest.Start(t)
	c := leConn(t, srv.Addr())
	out := make(chan leLine, 100)
	p := leStart(t, "once", out, "elect", "-server", srv.Addr(), "-timeout", "2000", "-once", "-id", "solo", "/once", "--",
		"sh", "-c", `echo "ran $ZKGO_LEADER_ID"; exit 5`)
	if l := leExpect(t, out, "ran ", 10*time.Second); l.text != "ran solo" {
		t.Fatalf("command printed %q", l.text)
	}
	if code := p.wait(t, 10*time.Second); code != 5 {
		t.Fatalf("exit status %d, want the command's 5; stderr:\n%s", code, p.Stderr())
	}
	kids, _, err := c.Children(context.Background(), "/once")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	if len(kids) != 0 {
		t.Fatalf("election nodes left: %v", kids)
	}
}
