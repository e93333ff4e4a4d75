package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Tests of the fault-injection build (faults_on.go): members run from a
// binary built with -tags zkgofaults, with their disks failing on cue
// and their peer links through forwarders.

// faultBin is the zkgofaults binary, built once, next to TestMain's.
var faultBin struct {
	once sync.Once
	path string
	err  error
}

func faultBinary(t *testing.T) string {
	t.Helper()
	faultBin.once.Do(func() {
		faultBin.path = filepath.Join(filepath.Dir(binary), "zkgo-faults")
		out, err := exec.Command("go", "build", "-tags", "zkgofaults", "-o", faultBin.path, ".").CombinedOutput()
		if err != nil {
			faultBin.err = fmt.Errorf("building zkgo -tags zkgofaults: %v\n%s", err, out)
		}
	})
	if faultBin.err != nil {
		t.Fatal(faultBin.err)
	}
	return faultBin.path
}

// faultProc is a `zkgo server zoo.cfg` process of the zkgofaults binary.
type faultProc struct {
	addr   string   // client address
	log    *syncBuf // stderr
	exited chan struct{}
	err    error // the exit status (cmd.Wait), once exited is closed
}

// startFaultMember starts the zkgofaults binary on cfg with env added to
// the environment, and waits until it listens.
func startFaultMember(t *testing.T, cfg string, env ...string) *faultProc {
	t.Helper()
	cmd := exec.Command(faultBinary(t), "server", cfg)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	stdout := &syncBuf{}
	p := &faultProc{log: &syncBuf{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = stdout, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-p.exited })
	deadline := time.After(30 * time.Second)
	for {
		if m := listenRE.FindStringSubmatch(stdout.String()); m != nil {
			p.addr = m[1]
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited without listening (%v); stderr:\n%s", cfg, p.err, p.log.String())
		case <-deadline:
			t.Fatalf("%s did not report its address; stderr:\n%s", cfg, p.log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// faultMembers runs an ensemble of zkgofaults members.
type faultMembers struct {
	t     *testing.T
	cfgs  []string
	env   [][]string // each member's fault variables
	procs []*faultProc
}

func newFaultMembers(t *testing.T, cfgs []string, env [][]string) *faultMembers {
	m := &faultMembers{t: t, cfgs: cfgs, env: env, procs: make([]*faultProc, len(cfgs))}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, p := range m.procs {
			if p != nil {
				t.Logf("member %d's log (since its last start), its end:\n%s", i+1, lastLines(p.log.String(), 60))
			}
		}
	})
	return m
}

func (m *faultMembers) start(i int) {
	m.t.Helper()
	m.procs[i] = startFaultMember(m.t, m.cfgs[i], m.env[i]...)
}

// leader returns the index of the member mntr calls the leader.
func (m *faultMembers) leader(ctx context.Context) int {
	m.t.Helper()
	for {
		for i, p := range m.procs {
			if mntrKey(ctx, p.addr, "zk_server_state") == "leader" {
				return i
			}
		}
		if ctx.Err() != nil {
			m.t.Fatal("no leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clientAddrs returns the client addresses of the server.N lines.
func clientAddrs(lines []string) []string {
	var out []string
	for _, l := range lines {
		_, client, _ := strings.Cut(l, ";")
		out = append(out, client)
	}
	return out
}

// TestDiskFaultStopsMember: three members under a steady write load; one
// member's disk starts failing (a follower's fills up, or the leader's
// returns EIO). That member exits with a failure status and one log line
// naming its data directory and the error; the other two go on (a new
// leader is elected if it led). Once the disk is healed the member is
// started again, recovers and catches up: read through a client
// connected to it alone, after a sync, it holds every acknowledged
// write, as do the others.
func TestDiskFaultStopsMember(t *testing.T) {
	for _, tt := range []struct {
		name   string
		leader bool   // fail the leader's disk, else a follower's
		fault  string // the control file's content
		errno  string // how the error reads
	}{
		{"follower enospc", false, "enospc", "no space left on device"},
		{"leader eio", true, "eio", "input/output error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const n = 3
			base := t.TempDir()
			cfgs, lines := writeEnsemble(t, base, n, "4lw.commands.whitelist=*\nsnapCount=300\n")
			servers := clientAddrs(lines)
			ctl := make([]string, n)
			env := make([][]string, n)
			for i := range n {
				ctl[i] = filepath.Join(base, fmt.Sprintf("disk%d", i+1))
				env[i] = []string{"ZKGO_FAULT_DISK=" + ctl[i]}
			}
			m := newFaultMembers(t, cfgs, env)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			for i := range n {
				m.start(i)
			}
			waitHealthy(ctx, t, servers, "starting")
			setup, err := zk.Connect(ctx, servers)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := setup.Create(ctx, "/w", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
				t.Fatal(err)
			}
			setup.Close()

			load := startLoad(ctx, servers, "/w", 3)
			load.waitWrites(ctx, t, 100, "starting the load")
			lead := m.leader(ctx)
			v := (lead + 1) % n
			if tt.leader {
				v = lead
			}
			victim := m.procs[v]
			if err := os.WriteFile(ctl[v], []byte(tt.fault+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			select {
			case <-victim.exited:
			case <-ctx.Done():
				t.Fatalf("member %d did not exit after its disk failed", v+1)
			}
			var ee *exec.ExitError
			if !errors.As(victim.err, &ee) || ee.ExitCode() <= 0 {
				t.Fatalf("member %d exited with %v, want a failure status", v+1, victim.err)
			}
			checkDiskFailureLine(t, victim.log.String(), filepath.Join(filepath.Dir(cfgs[v]), "zkgo"), tt.errno)

			// The other two go on.
			before := load.count()
			load.waitWrites(ctx, t, before+100, fmt.Sprintf("member %d's disk failed", v+1))

			// Healed and restarted, it catches up.
			if err := os.WriteFile(ctl[v], []byte("none\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			m.start(v)
			waitHealthy(ctx, t, servers, fmt.Sprintf("restarting member %d", v+1))
			load.waitWrites(ctx, t, load.count()+100, fmt.Sprintf("restarting member %d", v+1))
			acked := load.finish(t)
			for i := range n {
				checkHeld(ctx, t, m.procs[i].addr, "/w", acked)
			}
			if strings.Contains(m.procs[v].log.String(), "disk failure") {
				t.Errorf("member %d reports a disk failure after the disk was healed", v+1)
			}
			t.Logf("member %d's disk failed (%s) after %d acknowledged creates; %d in all, all on every member", v+1, tt.fault, before, len(acked))
		})
	}
}

// checkDiskFailureLine fails the test unless log has exactly one disk
// failure line, naming dir and the error.
func checkDiskFailureLine(t *testing.T, log, dir, errno string) {
	t.Helper()
	var found []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "disk failure") {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d disk failure lines, want 1; log:\n%s", len(found), lastLines(log, 40))
	}
	for _, want := range []string{"dir=" + dir, errno, "acknowledges no write"} {
		if !strings.Contains(found[0], want) {
			t.Errorf("the disk failure line does not say %q:\n%s", want, found[0])
		}
	}
}

// linkForwarder is a TCP forwarder on one peer link: it accepts on its
// own port and forwards to target, counting the bytes it carries.
type linkForwarder struct {
	ln     net.Listener
	target string
	conns  atomic.Int64
	bytes  atomic.Int64 // both ways, as they pass
	wg     sync.WaitGroup
	mu     sync.Mutex // guards open
	open   []net.Conn
}

func startLinkForwarder(t *testing.T, target string) *linkForwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &linkForwarder{ln: ln, target: target}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.open {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *linkForwarder) addr() string { return f.ln.Addr().String() }

func (f *linkForwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.conns.Add(1)
		f.mu.Lock()
		f.open = append(f.open, c, up)
		f.mu.Unlock()
		f.wg.Add(2)
		go f.pipe(c, up)
		go f.pipe(up, c)
	}
}

func (f *linkForwarder) pipe(from, to net.Conn) {
	defer f.wg.Done()
	defer to.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			f.bytes.Add(int64(n))
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestPeerDialViaForwarders: each of three members dials each other one
// through a forwarder of its own (ZKGO_FAULT_PEER_VIA), with zoo.cfg
// unchanged. The ensemble forms and serves writes, and the forwarders
// carried the raft traffic: the leader's links to the followers carried
// at least the data written.
func TestPeerDialViaForwarders(t *testing.T) {
	const n = 3
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\n")
	servers := clientAddrs(lines)
	peer := make([]string, n) // peer addresses, from server.N=host:peer:election;client
	for i, l := range lines {
		_, hostPorts, _ := strings.Cut(strings.Split(l, ";")[0], "=")
		parts := strings.Split(hostPorts, ":")
		peer[i] = net.JoinHostPort(parts[0], parts[1])
	}
	fwd := make([][]*linkForwarder, n) // fwd[i][j]: member i's link to member j
	env := make([][]string, n)
	for i := range n {
		fwd[i] = make([]*linkForwarder, n)
		var via []string
		for j := range n {
			if j != i {
				fwd[i][j] = startLinkForwarder(t, peer[j])
				via = append(via, fmt.Sprintf("%d=%s", j+1, fwd[i][j].addr()))
			}
		}
		env[i] = []string{"ZKGO_FAULT_PEER_VIA=" + strings.Join(via, ",")}
	}
	m := newFaultMembers(t, cfgs, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range n {
		m.start(i)
	}
	waitHealthy(ctx, t, servers, "starting")
	lead := m.leader(ctx)
	carried := func() (total int64) {
		for j := range n {
			if j != lead {
				total += fwd[lead][j].bytes.Load()
			}
		}
		return total
	}
	before := carried()

	c, err := zk.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/w", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	const writes, size = 100, 4 << 10
	data := make([]byte, size)
	var acked []string
	for k := range writes {
		p := fmt.Sprintf("/w/%03d", k)
		if _, err := c.Create(ctx, p, data, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, p)
	}
	for i := range n {
		checkHeld(ctx, t, m.procs[i].addr, "/w", acked)
	}
	if got, want := carried()-before, int64((n-1)*writes*size); got < want {
		t.Fatalf("the leader's forwarders carried %d bytes during the writes, less than the %d written to its followers", got, want)
	}
	for i := range n {
		for j := range n {
			if j != i && (fwd[i][j].conns.Load() == 0 || fwd[i][j].bytes.Load() == 0) {
				t.Errorf("member %d's link to member %d carried nothing (%d connections)", i+1, j+1, fwd[i][j].conns.Load())
			}
		}
	}
	if !strings.Contains(m.procs[0].log.String(), "FAULT INJECTION") {
		t.Error("the member does not log that its peer links are redirected")
	}
}

// The production binary holds no fault-injection code and ignores the
// variables.
func TestFaultVariablesIgnoredWithoutTag(t *testing.T) {
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ZKGO_FAULT_DISK", "ZKGO_FAULT_PEER_VIA"} {
		if strings.Contains(string(b), s) {
			t.Errorf("the binary built without zkgofaults contains %q", s)
		}
	}
}
