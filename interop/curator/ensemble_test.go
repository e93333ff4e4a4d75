package curator_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/interop/curator"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// TestEnsembleTracker: Curator's EnsembleTracker (on by default) reads
// /zookeeper/config from a zkgo ensemble and rewrites its connection string
// from the client addresses there. Curator is given one member only; it
// must end up with all three, and keep working when that member stops.
func TestEnsembleTracker(t *testing.T) {
	members, clientAddrs, cfg, _ := startEnsemble(t, 3, 3, nil)
	java := curator.StartPeer(t, clientAddrs[0])
	want := slices.Clone(clientAddrs)
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := strings.Split(java.Do(t, "connect-string"), ",")
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Curator's connection string %v, want %v (/zookeeper/config:\n%s)", got, want, cfg.DynamicText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The member Curator was given goes away; Curator goes on through the
	// others it learnt from /zookeeper/config.
	members[0].Close()
	members[0] = nil
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		if java.Do(t, "mutex-acquire /ensemble-lock 5000") == "LOCKED" {
			java.Want(t, "OK", "mutex-release /ensemble-lock")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("Curator could not take a lock after the member it was given stopped")
}

// startEnsemble starts the first `start` of n in-process members whose
// configuration lists all n, each with a fixed client address, and returns
// them (nil for those not started), their client addresses, the
// configuration and their peer listeners (to start the others with).
// Members and listeners are closed when the test ends.
func startEnsemble(t *testing.T, n, start int, opt func(*server.Options)) ([]*server.Server, []string, *config.Config, []net.Listener) {
	t.Helper()
	var cfgText strings.Builder
	clientAddrs := make([]string, n)
	peerLns := make([]net.Listener, n)
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peerLns[i] = ln
		clientAddrs[i] = fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t))
		fmt.Fprintf(&cfgText, "server.%d=127.0.0.1:%d:%d;%s\n", i+1, ln.Addr().(*net.TCPAddr).Port, zktest.FreePort(t), clientAddrs[i])
	}
	fmt.Fprintf(&cfgText, "tickTime=100\ndataDir=%s\n", t.TempDir())
	cfg, _, err := config.Parse(strings.NewReader(cfgText.String()), "zoo.cfg")
	if err != nil {
		t.Fatal(err)
	}
	members := make([]*server.Server, n)
	for i := 0; i < start; i++ {
		members[i] = startMember(t, cfg, cfg.Servers[:start], i, clientAddrs[i], peerLns[i], opt)
	}
	t.Cleanup(func() {
		for _, m := range members {
			if m != nil {
				m.Close()
			}
		}
		for _, ln := range peerLns {
			ln.Close()
		}
	})
	return members, clientAddrs, cfg, peerLns
}

// startMember starts member i of cfg knowing the servers listed.
func startMember(t *testing.T, cfg *config.Config, servers []config.Server, i int, clientAddr string, ln net.Listener, opt func(*server.Options)) *server.Server {
	t.Helper()
	var peers []server.Peer
	for _, sv := range servers {
		peers = append(peers, server.Peer{ID: sv.ID, Addr: fmt.Sprintf("%s:%d", sv.Host, sv.PeerPort)})
	}
	o := server.Options{
		Addr: clientAddr, TickTime: 100 * time.Millisecond, DataDir: t.TempDir(), NoSync: true,
		ServerID: int64(i + 1), Peers: peers, PeerListener: ln, ConfigText: config.ServersText(servers, cfg.Version),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if opt != nil {
		opt(&o)
	}
	s, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestZkCliReconfig: Apache's zkCli.sh grows a zkgo ensemble from three
// to four members with `reconfig -add` and shrinks it with `reconfig
// -remove`, `config` shows the membership, and Curator's EnsembleTracker
// follows the change in its connection string.
func TestZkCliReconfig(t *testing.T) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	if _, err := os.Stat(zkCli); err != nil {
		t.Skipf("%s not installed (apt-get install zookeeper)", zkCli)
	}
	opt := func(o *server.Options) { o.ReconfigEnabled, o.SkipACL = true, true }
	members, clientAddrs, cfg, lns := startEnsemble(t, 4, 3, opt)
	// The fourth knows the ensemble and itself, and waits to be added.
	members[3] = startMember(t, cfg, cfg.Servers, 3, clientAddrs[3], lns[3], opt)
	java := curator.StartPeer(t, clientAddrs[0])
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", append([]string{zkCli, "-server", clientAddrs[0]}, args...)...)
		cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1", "ZOO_LOG_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("zkCli.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	line4 := strings.Split(cfg.DynamicText(), "\n")[3]
	if !strings.HasPrefix(line4, "server.4=") {
		t.Fatalf("line %q", line4)
	}
	var out string
	deadline := time.Now().Add(time.Minute)
	for {
		out = run("reconfig", "-add", line4)
		if strings.Contains(out, "Committed new configuration") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the fourth has not asked to join yet
	}
	if !strings.Contains(out, "Committed new configuration") || !strings.Contains(out, "server.4=") {
		t.Fatalf("reconfig -add:\n%s", out)
	}
	if out := run("config"); !strings.Contains(out, "server.4=") {
		t.Fatalf("config:\n%s", out)
	}
	want := slices.Clone(clientAddrs)
	slices.Sort(want)
	for deadline := time.Now().Add(30 * time.Second); ; {
		got := strings.Split(java.Do(t, "connect-string"), ",")
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Curator's connection string %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Until the new server is a voter, another reconfig is "in progress".
	for deadline := time.Now().Add(time.Minute); ; {
		out = run("reconfig", "-remove", "4")
		if strings.Contains(out, "Committed new configuration") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(out, "Committed new configuration") || strings.Contains(out, "server.4=") {
		t.Fatalf("reconfig -remove:\n%s", out)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		got := java.Do(t, "connect-string")
		if !strings.Contains(got, clientAddrs[3]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Curator still lists the removed server: %s", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
