package deploy

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// network is one test's private network: a hub namespace holding a
// bridge (br0, 10.a.b.0/24 and fd7a:a:b::/64; the hub itself is .254 and
// ::fe), and the machines attached to it, each a namespace with eth0 on
// the bridge. With a second network (br1, 10.a.c.0/24), machines get eth1
// on it too.
type network struct {
	t      testing.TB
	prefix string // namespace and interface name prefix, unique per test
	hub    string // the hub namespace's name
	a, b   int    // the subnet: 10.a.b.0/24, fd7a:a:b::/64; br1 is 10.a.(b+1).0/24
	second bool

	mu       sync.Mutex // guards machines, names
	machines []*machine
	names    map[string]string // host name → address, as every machine's /etc/hosts has it
}

// machine is a network namespace with its addresses and the files its
// processes see as /etc/hosts and /etc/resolv.conf.
type machine struct {
	n        *network
	idx      int // 1.. : its addresses end in idx
	ns       string
	hosts    string // the file bind-mounted over /etc/hosts
	resolv   string // the file bind-mounted over /etc/resolv.conf
	ip4, ip6 string // on eth0
	ip4b     string // on eth1 (second network), "" without
}

// needRoot skips the test unless it can create namespaces.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: the deployment harness needs root (network and mount namespaces)")
	}
	for _, tool := range []string{"ip", "unshare", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: the deployment harness needs %s (iproute2, util-linux)", tool)
		}
	}
	if out, err := exec.Command("unshare", "-m", "--propagation", "private", "true").CombinedOutput(); err != nil {
		t.Skipf("skipping: mount namespaces are not available here: %v %s", err, out)
	}
}

// newNetwork creates the hub namespace and its bridges; everything is
// removed when the test ends.
func newNetwork(t testing.TB, second bool) *network {
	t.Helper()
	needRoot(t)
	var r [4]byte
	rand.Read(r[:])
	v := binary.BigEndian.Uint32(r[:])
	n := &network{t: t, prefix: fmt.Sprintf("zk%06x", v&0xffffff), a: 16 + int(v>>24)%200, b: 2 * (1 + int(v>>16&0xff)%100), second: second,
		names: map[string]string{}}
	n.hub = n.prefix + "-hub"
	if out, err := exec.Command("ip", "netns", "add", n.hub).CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot create a network namespace: %v %s", err, out)
	}
	t.Cleanup(n.remove)
	n.ip("-n", n.hub, "link", "set", "lo", "up")
	n.ip("-n", n.hub, "link", "add", "br0", "type", "bridge")
	n.ip("-n", n.hub, "link", "set", "br0", "up")
	n.ip("-n", n.hub, "addr", "add", fmt.Sprintf("10.%d.%d.254/24", n.a, n.b), "dev", "br0")
	n.ip("-n", n.hub, "addr", "add", fmt.Sprintf("fd7a:%d:%d::fe/64", n.a, n.b), "dev", "br0", "nodad")
	if second {
		n.ip("-n", n.hub, "link", "add", "br1", "type", "bridge")
		n.ip("-n", n.hub, "link", "set", "br1", "up")
		n.ip("-n", n.hub, "addr", "add", fmt.Sprintf("10.%d.%d.254/24", n.a, n.b+1), "dev", "br1")
	}
	return n
}

// ip runs ip(8) and fails the test on an error.
func (n *network) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// remove deletes every namespace of the network (the veth pairs go with
// them). Processes must have been stopped first (members register their
// own cleanup after the network's, so they run before it).
func (n *network) remove() {
	n.mu.Lock()
	ms := n.machines
	n.mu.Unlock()
	for _, m := range ms {
		exec.Command("ip", "netns", "del", m.ns).Run()
	}
	exec.Command("ip", "netns", "del", n.hub).Run()
}

// hubAddr is the hub's address on br0.
func (n *network) hubAddr() string { return fmt.Sprintf("10.%d.%d.254", n.a, n.b) }

// addMachine creates machine idx (1..253), attached to the bridge(s).
func (n *network) addMachine(idx int) *machine {
	n.t.Helper()
	m := &machine{n: n, idx: idx, ns: fmt.Sprintf("%s-m%d", n.prefix, idx),
		ip4: fmt.Sprintf("10.%d.%d.%d", n.a, n.b, idx), ip6: fmt.Sprintf("fd7a:%d:%d::%x", n.a, n.b, idx)}
	dir := n.t.TempDir()
	m.hosts, m.resolv = filepath.Join(dir, "hosts"), filepath.Join(dir, "resolv.conf")
	// No name server: a name the hosts file lacks fails at once (a
	// refused query on the machine's own loopback), as a name of a pod
	// that does not exist yet fails in Kubernetes.
	if err := os.WriteFile(m.resolv, []byte("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		n.t.Fatal(err)
	}
	n.ip("netns", "add", m.ns)
	n.mu.Lock()
	n.machines = append(n.machines, m)
	n.mu.Unlock()
	n.ip("-n", m.ns, "link", "set", "lo", "up")
	veth := fmt.Sprintf("%sv%d", n.prefix[2:], idx)
	n.ip("-n", n.hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", m.ns)
	n.ip("-n", n.hub, "link", "set", veth, "master", "br0", "up")
	n.ip("-n", m.ns, "link", "set", "eth0", "up")
	n.ip("-n", m.ns, "addr", "add", m.ip4+"/24", "dev", "eth0")
	n.ip("-n", m.ns, "addr", "add", m.ip6+"/64", "dev", "eth0", "nodad")
	if n.second {
		m.ip4b = fmt.Sprintf("10.%d.%d.%d", n.a, n.b+1, idx)
		veth1 := fmt.Sprintf("%sw%d", n.prefix[2:], idx)
		n.ip("-n", n.hub, "link", "add", veth1, "type", "veth", "peer", "name", "eth1", "netns", m.ns)
		n.ip("-n", n.hub, "link", "set", veth1, "master", "br1", "up")
		n.ip("-n", m.ns, "link", "set", "eth1", "up")
		n.ip("-n", m.ns, "addr", "add", m.ip4b+"/24", "dev", "eth1")
	}
	n.writeHosts(m)
	return m
}

// setName makes every machine resolve name to addr ("" removes it), as a
// DNS or a Kubernetes headless service would from now on.
func (n *network) setName(name, addr string) {
	n.t.Helper()
	n.mu.Lock()
	if addr == "" {
		delete(n.names, name)
	} else {
		n.names[name] = addr
	}
	ms := n.machines
	n.mu.Unlock()
	for _, m := range ms {
		n.writeHosts(m)
	}
}

// writeHosts rewrites m's hosts file in place: the bind mount holds the
// file, not its name, so a file replaced by a rename would not be seen.
func (n *network) writeHosts(m *machine) {
	n.t.Helper()
	n.mu.Lock()
	var lines []string
	for name, addr := range n.names {
		lines = append(lines, addr+"\t"+name)
	}
	n.mu.Unlock()
	sort.Strings(lines)
	text := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n" + strings.Join(lines, "\n") + "\n"
	f, err := os.OpenFile(m.hosts, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	if _, err := io.WriteString(f, text); err != nil {
		n.t.Fatal(err)
	}
	f.Close()
}

// command returns a command that runs in m: its network namespace, and a
// mount namespace of its own in which m's hosts and resolv.conf files are
// /etc/hosts and /etc/resolv.conf. Its process is the program itself
// (ip netns exec, unshare and sh all exec), so a signal reaches it.
func (m *machine) command(prog string, args ...string) *exec.Cmd {
	script := `mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf && shift 2 && exec "$@"`
	full := append([]string{"netns", "exec", m.ns, "unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", m.hosts, m.resolv, prog}, args...)
	return exec.Command("ip", full...)
}

// renumber moves m to a new address idx (a pod rescheduled elsewhere):
// eth0 loses its address and gets 10.a.b.idx and fd7a:a:b::idx.
func (m *machine) renumber(idx int) {
	n := m.n
	n.t.Helper()
	n.ip("-n", m.ns, "addr", "flush", "dev", "eth0")
	m.idx = idx
	m.ip4, m.ip6 = fmt.Sprintf("10.%d.%d.%d", n.a, n.b, idx), fmt.Sprintf("fd7a:%d:%d::%x", n.a, n.b, idx)
	n.ip("-n", m.ns, "addr", "add", m.ip4+"/24", "dev", "eth0")
	n.ip("-n", m.ns, "addr", "add", m.ip6+"/64", "dev", "eth0", "nodad")
}

// inHub runs fn on an OS thread that has entered the hub's network
// namespace, so that the sockets fn creates live there. The thread is
// discarded afterwards (its goroutine exits locked).
func (n *network) inHub(fn func()) error {
	f, err := os.Open("/run/netns/" + n.hub)
	if err != nil {
		return err
	}
	defer f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", n.hub, err)
			return
		}
		fn()
		errc <- nil
	}()
	return <-errc
}

// dial connects from the hub to addr (a member's client port).
func (n *network) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	var derr error
	if err := n.inHub(func() {
		var d net.Dialer
		c, derr = d.DialContext(ctx, network, addr)
	}); err != nil {
		return nil, err
	}
	return c, derr
}

// listen listens in the hub (a proxy's front end).
func (n *network) listen(addr string) (net.Listener, error) {
	var ln net.Listener
	var lerr error
	if err := n.inHub(func() { ln, lerr = net.Listen("tcp", addr) }); err != nil {
		return nil, err
	}
	return ln, lerr
}

// proxy forwards connections to addr (dialled from the hub) from a
// listener in the hub at front: a NAT or a TCP proxy between members. It
// stops when the test ends.
func (n *network) proxy(front, addr string) {
	n.t.Helper()
	ln, err := n.listen(front)
	if err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	n.t.Cleanup(func() { cancel(); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				b, err := n.dial(ctx, "tcp", addr)
				if err != nil {
					return
				}
				defer b.Close()
				stop := context.AfterFunc(ctx, func() { c.Close(); b.Close() })
				defer stop()
				done := make(chan struct{}, 2)
				go func() { io.Copy(b, c); b.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				go func() { io.Copy(c, b); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
}
