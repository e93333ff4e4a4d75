package zk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zktest"
)

func TestConfigClientAddrs(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   []string
	}{
		{"server.1=10.0.0.1:2888:3888:participant;10.0.1.1:2181\nversion=100000000", []string{"10.0.1.1:2181"}},
		// A wildcard client address, or a port alone: the server.N host.
		{"server.1=zk1:2888:3888:participant;0.0.0.0:2181\nserver.2=zk2:2888:3888;2182\nserver.3=[fd00::3]:2888:3888:observer;[::]:2183\n", []string{"zk1:2181", "zk2:2182", "[fd00::3]:2183"}},
		// No client port: left out; other keys ignored; duplicates dropped.
		{"server.1=zk1:2888:3888\nserver.2=zk2:2888:3888;zk2:2181\nserver.3=zk2:2888:3888;zk2:2181\nversion=1\nfoo=bar", []string{"zk2:2181"}},
		// Multiple quorum addresses (3.6+); "name/ip" client hosts.
		{"server.7=a1:1:2|a2:1:2:participant;/0.0.0.0:2181\nserver.8=b:1:2;b.example/10.0.0.8:2181", []string{"a1:2181", "b.example:2181"}},
		{" server.1 = h:1:2 ; [::1]:2181 ", []string{"[::1]:2181"}},
		{"server.1=h:1:2;h:notaport\nserver.2=h:1:2;0", nil},
		{"", nil},
	} {
		if got := ConfigClientAddrs([]byte(tc.config)); !slices.Equal(got, tc.want) {
			t.Errorf("ConfigClientAddrs(%q) = %q, want %q", tc.config, got, tc.want)
		}
	}
}

func TestHostList(t *testing.T) {
	ctx := context.Background()
	h := NewHostList([]string{"a:1", "b:1", "a:1", " ", "c:1"}, false)
	var got []string
	for range 4 {
		a, err := h.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	if !slices.Equal(got, []string{"a:1", "b:1", "c:1", "a:1"}) {
		t.Fatalf("Next: %q", got)
	}
	h.Connected("a:1")
	// The same servers: order and position kept.
	h.Update([]string{"c:1", "b:1", "a:1"})
	if a, _ := h.Next(ctx); a != "b:1" {
		t.Fatalf("after an update that changes nothing, Next = %q, want b:1", a)
	}
	// New servers: the current one last.
	h.Update([]string{"a:1", "d:1", "e:1"})
	if s := h.Servers(); !slices.Equal(s, []string{"d:1", "e:1", "a:1"}) {
		t.Fatalf("Servers = %q", s)
	}
	if a, _ := h.Next(ctx); a != "d:1" {
		t.Fatalf("Next = %q, want d:1", a)
	}
	h.Update(nil) // ignored
	if len(h.Servers()) != 3 {
		t.Fatalf("an empty update changed the list: %q", h.Servers())
	}
	sh := NewHostList([]string{"a:1", "b:1", "c:1", "d:1", "e:1", "f:1", "g:1", "h:1"}, true)
	for i := 0; slices.IsSorted(sh.Servers()); i++ {
		if i == 10 {
			t.Fatal("never shuffled")
		}
		sh = NewHostList(slices.Sorted(slices.Values(sh.Servers())), true)
	}
	if _, err := (&HostList{}).Next(ctx); err == nil {
		t.Fatal("Next on an empty list succeeded")
	}
}

// logBuffer is a slog handler's writer that tests read while the Conn
// writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitServers waits until c's server list is want (in any order).
func waitServers(t *testing.T, c *Conn, want []string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		got := slices.Sorted(slices.Values(c.Servers()))
		if slices.Equal(got, slices.Sorted(slices.Values(want))) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers %q, want %q", got, want)
		}
	}
}

// retryUntil calls fn until it succeeds or the deadline passes (members
// that have not asked to join yet, reconfigs still in progress, ...).
func retryUntil(t *testing.T, within time.Duration, what string, fn func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = fn(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

// A client given only the first member of a zkgo ensemble, with a chroot,
// follows it from three members to five and back to three (two of the
// original ones removed), and when the three original members are
// stopped it reconnects, with its session, to one that joined later.
func TestEnsembleTrackingGrowShrink(t *testing.T) {
	e := zktest.StartEnsemble(t, 5, 3, func(o *server.Options) {
		o.ReconfigEnabled, o.SkipACL, o.MaxSessionTimeout = true, true, 15*time.Second
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The admin session knows every member (a removed member serves no
	// clients).
	var adminLogs logBuffer
	admin, err := Connect(ctx, e.ClientAddrs, WithEnsembleTracking(false), WithSessionTimeout(15*time.Second),
		WithLogger(slog.New(slog.NewTextHandler(&adminLogs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	retryUntil(t, time.Minute, "creating the chroot", func() error {
		_, err := admin.Create(ctx, "/track", nil, OpenACLUnsafe, ModePersistent)
		if errors.Is(err, ErrNodeExists) {
			return nil
		}
		return err
	})

	var logs logBuffer
	c, err := Connect(ctx, e.ClientAddrs[0]+"/track", WithSessionTimeout(15*time.Second),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer func() {
		if t.Failed() {
			t.Logf("client:\n%s\nadmin:\n%s", logs.String(), adminLogs.String())
		}
	}()
	if _, err := c.Create(ctx, "/eph", nil, OpenACLUnsafe, ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	// A Redialer given the first member starts its next session through
	// the members its Conn learned.
	var redialLogs logBuffer
	r, err := Redial(ctx, e.ClientAddrs[0]+"/track", WithSessionTimeout(15*time.Second),
		WithLogger(slog.New(slog.NewTextHandler(&redialLogs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	waitServers(t, c, e.ClientAddrs[:3], 10*time.Second)

	// 3 -> 5.
	e.Start(3, 3)
	e.Start(4, 3)
	retryUntil(t, time.Minute, "adding servers 4 and 5", func() error {
		_, _, err := admin.IncrementalReconfig(ctx, []string{e.Line(3), e.Line(4)}, nil, -1)
		return err
	})
	waitServers(t, c, e.ClientAddrs, 10*time.Second)

	// 5 -> 3: servers 1 and 2 leave, one at a time, once 4 and 5 vote.
	waitVoters(t, e, []int{0, 3, 4}, "5")
	retryUntil(t, time.Minute, "removing server 1", func() error {
		_, _, err := admin.IncrementalReconfig(ctx, nil, []string{"1"}, -1)
		return err
	})
	waitVoters(t, e, []int{3, 4}, "4")
	retryUntil(t, time.Minute, "removing server 2", func() error {
		_, _, err := admin.IncrementalReconfig(ctx, nil, []string{"2"}, -1)
		return err
	})
	waitServers(t, c, e.ClientAddrs[2:], 10*time.Second)

	// Once raft's voters are {3, 4, 5} on the newcomers, the original
	// members stop: 4 and 5 are a quorum.
	waitVoters(t, e, []int{3, 4}, "3")
	for i := range 3 {
		e.Members[i].Close()
		e.Members[i] = nil
	}
	// Reads may be answered, and connections closed, while 4 and 5 elect
	// a leader: a write tells they serve.
	retryUntil(t, time.Minute, "writing after the original members stopped", func() error {
		_, err := c.Create(ctx, "/after", nil, OpenACLUnsafe, ModePersistent)
		if errors.Is(err, ErrNodeExists) {
			return nil
		}
		return err
	})
	if st, err := c.Exists(ctx, "/eph"); err != nil || st == nil {
		t.Fatalf("the ephemeral node: %v, %v", st, err)
	}
	if got := c.SessionID(); got != sid {
		t.Fatalf("session 0x%x, want 0x%x", got, sid)
	}
	if s := c.Server(); s != e.ClientAddrs[3] && s != e.ClientAddrs[4] {
		t.Fatalf("connected to %s, want %s or %s", s, e.ClientAddrs[3], e.ClientAddrs[4])
	}

	old := r.Current()
	retryUntil(t, time.Minute, "the Redialer's Conn reading", func() error {
		_, err := old.Exists(ctx, "/after")
		return err
	})
	e.Members[3].ExpireSession(old.SessionID())
	e.Members[4].ExpireSession(old.SessionID())
	nctx, ncancel := context.WithTimeout(ctx, 30*time.Second)
	defer ncancel()
	next, err := r.Next(nctx, old)
	if err != nil {
		t.Fatalf("the Redialer's next session: %v (old session state %v)\n%s\nmembers:\n%s", err, old.State(), redialLogs.String(), sessionOnMembers(e, old.SessionID()))
	}
	if st, err := next.Exists(ctx, "/after"); err != nil || st == nil {
		t.Fatalf("the Redialer's next session: %v, %v", st, err)
	}
}

// waitVoters waits until the members (0-based) count n raft voters.
func waitVoters(t *testing.T, e *zktest.Ensemble, members []int, n string) {
	t.Helper()
	for _, i := range members {
		for deadline := time.Now().Add(time.Minute); mntrValue(e.Members[i], "zkgo_raft_voters") != n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("member %d: raft voters %q, want %s", i+1, mntrValue(e.Members[i], "zkgo_raft_voters"), n)
			}
		}
	}
}

func mntrValue(s *server.Server, key string) string {
	for _, line := range strings.Split(s.FourLetterWord("mntr"), "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == key {
			return v
		}
	}
	return ""
}

// nameDialer dials names through its own table (a stand-in for DNS whose
// answers a test changes) and counts the dials of each name.
type nameDialer struct {
	mu    sync.Mutex
	names map[string]string // "name:port" -> "ip:port"
	dials map[string]int
}

func (d *nameDialer) set(name, addr string) {
	d.mu.Lock()
	d.names[name] = addr
	d.mu.Unlock()
}

func (d *nameDialer) count(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials[name]
}

func (d *nameDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dials[addr]++
	to, ok := d.names[addr]
	d.mu.Unlock()
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: addr, IsNotFound: true}
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

// A member whose name moves to another address is reached at the new
// one: the Conn hands the name to its dialer at every attempt, it does
// not resolve it once at Connect.
func TestNameResolvedAtEveryAttempt(t *testing.T) {
	e := zktest.StartEnsemble(t, 3, 3, func(o *server.Options) { o.MaxSessionTimeout = 15 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := &nameDialer{names: map[string]string{"zk-a.test:2181": e.ClientAddrs[0]}, dials: map[string]int{}}
	c, err := Connect(ctx, "zk-a.test:2181", WithDialer(d.dial), WithEnsembleTracking(false), WithSessionTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	retryUntil(t, time.Minute, "creating /eph", func() error {
		_, err := c.Create(ctx, "/eph", nil, OpenACLUnsafe, ModeEphemeral)
		return err
	})
	sid := c.SessionID()
	dials := d.count("zk-a.test:2181")
	// The name moves to the second member; the first stops.
	d.set("zk-a.test:2181", e.ClientAddrs[1])
	e.Members[0].Close()
	e.Members[0] = nil
	retryUntil(t, time.Minute, "reading after the move", func() error {
		ok, err := c.Exists(ctx, "/eph")
		if err == nil && ok == nil {
			return fmt.Errorf("the ephemeral node is gone")
		}
		return err
	})
	if c.SessionID() != sid || c.Server() != "zk-a.test:2181" {
		t.Fatalf("session 0x%x on %s, want 0x%x on zk-a.test:2181", c.SessionID(), c.Server(), sid)
	}
	if n := d.count("zk-a.test:2181"); n <= dials {
		t.Fatalf("the name was dialled %d times, as before the move", n)
	}
	if got := c.Servers(); !slices.Equal(got, []string{"zk-a.test:2181"}) {
		t.Fatalf("servers %q with tracking off", got)
	}
}

// recordingProvider is a HostProvider over a fixed list that records
// what the Conn tells it.
type recordingProvider struct {
	*HostList
	mu        sync.Mutex
	connected []string
	failed    []string
	updates   [][]string
}

func (p *recordingProvider) Connected(addr string) {
	p.mu.Lock()
	p.connected = append(p.connected, addr)
	p.mu.Unlock()
	p.HostList.Connected(addr)
}

func (p *recordingProvider) Failed(addr string, err error) {
	p.mu.Lock()
	p.failed = append(p.failed, addr)
	p.mu.Unlock()
}

func (p *recordingProvider) Update(servers []string) {
	p.mu.Lock()
	p.updates = append(p.updates, slices.Clone(servers))
	p.mu.Unlock()
}

// A HostProvider given with WithHostProvider chooses the servers (the
// connect string may hold only a chroot) and is told of failures,
// successes and the ensemble's members.
func TestHostProviderOption(t *testing.T) {
	s := zktest.Start(t)
	dead := fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t))
	p := &recordingProvider{HostList: NewHostList([]string{dead, s.Addr()}, false)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, "/", WithHostProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Equal(p.failed, []string{dead}) || !slices.Equal(p.connected, []string{s.Addr()}) {
		t.Fatalf("failed %q, connected %q", p.failed, p.connected)
	}
	if _, err := Connect(ctx, ""); err == nil {
		t.Fatal("Connect with no servers and no provider succeeded")
	}
}

// checkNoConfigAccess connects with tracking to a server whose
// /zookeeper/config the session may not read: the Conn works with its
// own list and says so once.
func checkNoConfigAccess(t *testing.T, ctx context.Context, addr string) {
	t.Helper()
	var logs logBuffer
	extra := fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t))
	c, err := Connect(ctx, []string{addr, extra}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "not tracking"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line about the configuration: %s", logs.String())
		}
	}
	if n := strings.Count(logs.String(), "cannot read the ensemble configuration"); n != 1 {
		t.Fatalf("%d log lines about the configuration:\n%s", n, logs.String())
	}
	if got := slices.Sorted(slices.Values(c.Servers())); !slices.Equal(got, slices.Sorted(slices.Values([]string{addr, extra}))) {
		t.Fatalf("servers %q, want the static list", got)
	}
}

// Against Apache ZooKeeper 3.8 (a one-member quorum with reconfigEnabled):
// the Conn reads its /zookeeper/config, follows an observer's addition,
// and keeps its list when an ACL denies it the configuration.
func TestEnsembleTrackingApache(t *testing.T) {
	if errors.Is(apacheErr, apachezk.ErrNotInstalled) {
		t.Skip(apachezk.SkipMessage(apacheErr))
	}
	zs, err := apachezk.Start(apachezk.Options{
		QuorumOfOne: true,
		SuperDigest: apachezk.SuperDigest("super", "secret"),
		ExtraConfig: map[string]string{"reconfigEnabled": "true"},
	})
	if err != nil {
		apachezk.SkipIfUnavailable(t, err)
		t.Fatal(err)
	}
	defer zs.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	super, err := Connect(ctx, zs.Addr(), WithAuth("digest", []byte("super:secret")), WithEnsembleTracking(false))
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	if _, err := super.Create(ctx, "/app", nil, OpenACLUnsafe, ModePersistent); err != nil && !errors.Is(err, ErrNodeExists) {
		t.Fatal(err)
	}
	// Given a name it does not find in the configuration, the Conn ends
	// up with the configuration's address.
	port := zs.Addr()[strings.LastIndexByte(zs.Addr(), ':'):]
	c, err := Connect(ctx, "localhost"+port+"/app")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitServers(t, c, []string{zs.Addr()}, 10*time.Second)

	observer := fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t))
	line := fmt.Sprintf("server.2=127.0.0.1:%d:%d:observer;%s", zktest.FreePort(t), zktest.FreePort(t), observer)
	if _, _, err := super.IncrementalReconfig(ctx, []string{line}, nil, -1); err != nil {
		t.Fatalf("adding an observer: %v", err)
	}
	waitServers(t, c, []string{zs.Addr(), observer}, 10*time.Second)
	t.Logf("Apache ZooKeeper %s: servers %q", zs.Version(), c.Servers())
	if _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}

	if _, err := super.SetACL(ctx, ConfigNode, DigestACL(PermAll, "super", "secret"), -1); err != nil {
		t.Fatalf("restricting /zookeeper/config: %v", err)
	}
	checkNoConfigAccess(t, ctx, zs.Addr())
}

// The same against zkgo, whose super user restricts /zookeeper/config.
func TestEnsembleTrackingNoConfigAccess(t *testing.T) {
	s := zktest.Start(t, zktest.WithSuperDigest(apachezk.SuperDigest("super", "secret")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	super, err := Connect(ctx, s.Addr(), WithAuth("digest", []byte("super:secret")), WithEnsembleTracking(false))
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	if _, err := super.SetACL(ctx, ConfigNode, DigestACL(PermAll, "super", "secret"), -1); err != nil {
		t.Skipf("zkgo does not let the super user restrict %s: %v", ConfigNode, err)
	}
	checkNoConfigAccess(t, ctx, s.Addr())
}

// sessionOnMembers describes, for a failure message, what each running
// member of e knows of session id: its mode, whether its tree still holds
// the session, and its connections (cons) that serve it.
func sessionOnMembers(e *zktest.Ensemble, id int64) string {
	var b strings.Builder
	hex := fmt.Sprintf("0x%x", id)
	for i, m := range e.Members {
		if m == nil {
			continue
		}
		inTree := false
		m.Tree(func(tr *tree.Tree) {
			for _, ss := range tr.Sessions() {
				if ss.ID == id {
					inTree = true
				}
			}
		})
		fmt.Fprintf(&b, "member %d (%s): %s, session %s in its tree: %v\n", i, e.ClientAddrs[i], m.Mode(), hex, inTree)
		for _, line := range strings.Split(m.FourLetterWord("cons"), "\n") {
			if strings.Contains(line, hex[2:]) {
				fmt.Fprintf(&b, "  %s\n", strings.TrimSpace(line))
			}
		}
	}
	return b.String()
}
