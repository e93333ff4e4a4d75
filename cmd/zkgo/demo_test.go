package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zk"
)

var demoMiB = flag.Int("demo.mib", 32, "TestEnsembleOperationsDemo: MiB of znode data on the tree whose member is rebuilt (the issue's demo: 1024)")

// TestEnsembleOperationsDemo is the ensemble issue's "done when", in one
// run, as a new user would do it: three `zkgo server zoo.cfg` processes
// with reconfigEnabled; a Curator application (Curator 5, its
// SessionConnectionStateErrorPolicy) takes an InterProcessMutex and a
// LeaderLatch; Apache's zkCli.sh grows the ensemble to five (two servers
// started from zoo.cfg files that list the ensemble and themselves) and
// shrinks it to three, removing one original member and one new one;
// then the tree grows to -demo.mib MiB of znode data and one member's
// disk is wiped and rebuilt. The Curator application holds its lock and
// its leadership with the same session throughout (no LOST), and Curator's
// EnsembleTracker follows the membership.
func TestEnsembleOperationsDemo(t *testing.T) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	if _, err := os.Stat(zkCli); err != nil {
		t.Skipf("%s not installed (apt-get install zookeeper)", zkCli)
	}
	const n = 5
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nreconfigEnabled=true\nskipACL=yes\nsnapCount=2000\njute.maxbuffer=2097152\n")
	for i := range 3 { // the first three know only each other
		b, err := os.ReadFile(cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(b), lines[3]+"\n", "", 1)
		text = strings.Replace(text, lines[4]+"\n", "", 1)
		os.WriteFile(cfgs[i], []byte(text), 0o644)
	}
	clients := make([]string, n)
	for i, l := range lines {
		_, clients[i], _ = strings.Cut(l, ";")
	}
	m := newMemberProcs(t, cfgs)
	for i := range n {
		m.start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	waitHealthy(ctx, t, clients[:3], "starting")

	app := curator.StartPeer(t, strings.Join(clients[:3], ","), "session-policy")
	app.Want(t, "LOCKED", "mutex-acquire /demo/lock 10000")
	app.Want(t, "OK", "latch-start /demo/leader app-1")
	app.Want(t, "LEADER", "latch-await 10000")
	session := sessionOf(t, app.Do(t, "state"))
	holds := func(when string) {
		t.Helper()
		app.Want(t, "HELD", "mutex-held /demo/lock")
		app.Want(t, "LEADER", "latch-has")
		st := app.Do(t, "state")
		if !strings.HasPrefix(st, "lost=0 ") || sessionOf(t, st) != session {
			t.Fatalf("%s: the Curator application's session changed or was lost: %s (session was %s)", when, st, session)
		}
		t.Logf("%s: Curator holds the lock and leads; %s", when, st)
	}

	logDir := t.TempDir()
	zkcli := func(server string, args ...string) string {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
		defer ccancel()
		cmd := exec.CommandContext(cctx, "bash", append([]string{zkCli, "-server", server}, args...)...)
		cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1", "ZOO_LOG_DIR="+logDir)
		out, _ := cmd.CombinedOutput() // zkCli.sh exits 0 on most errors; the output tells
		return string(out)
	}
	reconfig := func(server string, args ...string) string {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); ; {
			out := zkcli(server, append([]string{"reconfig"}, args...)...)
			if strings.Contains(out, "Committed new configuration") {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("zkCli.sh reconfig %v:\n%s", args, out)
			}
			time.Sleep(200 * time.Millisecond) // not joined yet, in progress, or a lost connection
		}
	}
	participant := func(i int) string { return strings.Replace(lines[i], ";", ":participant;", 1) }

	// 3 → 5.
	out := reconfig(clients[1], "-add", participant(3)+","+participant(4))
	if !strings.Contains(out, "server.4=") || !strings.Contains(out, "server.5=") {
		t.Fatalf("after adding servers 4 and 5:\n%s", out)
	}
	waitHealthy(ctx, t, clients, "growing to five")
	holds("five members")

	// 5 → 3: one original member and one new one leave.
	out = reconfig(clients[1], "-remove", "1,5")
	if strings.Contains(out, "server.1=") || strings.Contains(out, "server.5=") {
		t.Fatalf("after removing servers 1 and 5:\n%s", out)
	}
	final := []int{1, 2, 3} // indexes of servers 2, 3, 4
	var finalClients []string
	for _, i := range final {
		finalClients = append(finalClients, clients[i])
	}
	waitHealthy(ctx, t, finalClients, "shrinking to three")
	m.procs[0].kill()
	m.procs[4].kill()
	want := slices.Clone(finalClients)
	slices.Sort(want)
	for deadline := time.Now().Add(time.Minute); ; {
		got := strings.Split(app.Do(t, "connect-string"), ",")
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Curator's connection string %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	holds("three members again")

	// One member's disk is replaced on a large tree.
	lead := -1
	for _, i := range final {
		if mntrKey(ctx, clients[i], "zk_server_state") == "leader" {
			lead = i
		}
	}
	if lead < 0 {
		t.Fatal("no leader among servers 2, 3, 4")
	}
	fillTree(ctx, t, clients[lead], *demoMiB)
	f := 3 // server 4, added by reconfig
	if f == lead {
		f = 2
	}
	r := rebuildMember(ctx, t, m, cfgs, lead, f, 3)
	t.Logf("%s", r.String(*demoMiB))
	holds("after the rebuild")

	// The Curator application's nodes are still there, its own.
	c, err := zk.Connect(ctx, clients[lead])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/demo/lock", "/demo/leader"} {
		kids, _, err := c.Children(ctx, p)
		if err != nil || len(kids) != 1 {
			t.Fatalf("%s: %v %v", p, kids, err)
		}
		_, st, err := c.Get(ctx, p+"/"+kids[0])
		if err != nil || strconv.FormatUint(uint64(st.EphemeralOwner), 16) != session {
			t.Fatalf("%s/%s: owner %x, want the application's session %s (%v)", p, kids[0], st.EphemeralOwner, session, err)
		}
	}
}

// sessionOf returns the session id in RecipePeer's state line.
func sessionOf(t *testing.T, state string) string {
	t.Helper()
	for _, f := range strings.Fields(state) {
		if v, ok := strings.CutPrefix(f, "session="); ok {
			return v
		}
	}
	t.Fatalf("no session in %q", state)
	return ""
}
