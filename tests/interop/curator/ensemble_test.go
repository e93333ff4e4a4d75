package curator_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zktest"
)

// TestEnsembleTracker: Curator's EnsembleTracker (on by default) reads
// /zookeeper/config from a zkgo ensemble and rewrites its connection string
// from the client addresses there. Curator is given one member only; it
// must end up with all three, and keep working when that member stops.
func TestEnsembleTracker(t *testing.T) {
	e := zktest.StartEnsemble(t, 3, 3)
	members, clientAddrs, cfg := e.Members, e.ClientAddrs, e.Config
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

// TestZkCliReconfig: Apache's zkCli.sh grows a zkgo ensemble from three
// to four members with `reconfig -add` and shrinks it with `reconfig
// -remove`, `config` shows the membership, and Curator's EnsembleTracker
// follows the change in its connection string.
func TestZkCliReconfig(t *testing.T) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	if _, err := os.Stat(zkCli); err != nil {
		t.Skipf("%s not installed (apt-get install zookeeper)", zkCli)
	}
	e := zktest.StartEnsemble(t, 4, 3, func(o *server.Options) { o.ReconfigEnabled, o.SkipACL = true, true })
	// The fourth knows the ensemble and itself, and waits to be added.
	e.Start(3, 3)
	clientAddrs := e.ClientAddrs
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
	line4 := e.Line(3)
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
