package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// TestEnsembleFromZooCfg: three `zkgo server zooN.cfg` processes with
// unchanged ZooKeeper ensemble configuration (server.N lines, myid) form a
// cluster: a write through one member is read on another, kill -9 of the
// leader leaves a working pair, and the killed member catches up after a
// restart.
func TestEnsembleFromZooCfg(t *testing.T) {
	const n = 3
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\n")
	type proc struct {
		cmd  interface{ Signal(os.Signal) error }
		wait func()
		addr string
	}
	procs := make([]proc, n)
	start := func(i int) {
		cmd, addr := startServer(t, cfgs[i])
		procs[i] = proc{cmd.Process, func() { cmd.Wait() }, addr}
	}
	for i := 0; i < n; i++ {
		start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mode := func(i int) string {
		out, err := zk.FourLetterWord(ctx, procs[i].addr, "srvr")
		if err != nil {
			return ""
		}
		for _, l := range strings.Split(out, "\n") {
			if m, ok := strings.CutPrefix(l, "Mode: "); ok {
				return m
			}
		}
		return ""
	}
	leader := func(skip int) int {
		for ctx.Err() == nil {
			for i := 0; i < n; i++ {
				if i != skip && mode(i) == "leader" {
					return i
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("no leader")
		return -1
	}
	lead := leader(-1)
	other := (lead + 1) % n
	third := (lead + 2) % n
	connect := func(i int) *zk.Conn {
		for {
			c, err := zk.Connect(ctx, procs[i].addr, zk.WithSessionTimeout(4*time.Second))
			if err == nil {
				return c
			}
			if ctx.Err() != nil {
				t.Fatalf("connect to member %d: %v", i+1, err)
			}
		}
	}
	a := connect(other)
	defer a.Close()
	if _, err := a.Create(ctx, "/e", []byte("1"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	b := connect(third)
	defer b.Close()
	waitData := func(c *zk.Conn, p, want string) {
		t.Helper()
		for {
			data, _, err := c.Get(ctx, p)
			if err == nil && string(data) == want {
				return
			}
			if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrConnectionLoss) {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never became %q", p, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitData(b, "/e", "1")
	// /zookeeper/config holds the membership in ZooKeeper's text, which
	// Curator's EnsembleTracker turns into its connection string.
	cfgText, _, err := b.GetConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The version is 0 until the ensemble's first leader records the
	// formation, then that entry's zxid (ZooKeeper's is its first
	// leader's first zxid): either may be read here.
	want := strings.Join(lines, "\n")
	want = strings.ReplaceAll(want, ";127.0.0.1:", ":participant;127.0.0.1:")
	servers, version, _ := strings.Cut(string(cfgText), "\nversion=")
	if _, err := strconv.ParseUint(version, 16, 64); servers != want || err != nil {
		t.Fatalf("/zookeeper/config:\n%s\nwant\n%s\nversion=<hex>", cfgText, want)
	}

	// kill -9 the leader; the other two elect a leader and take writes.
	procs[lead].cmd.Signal(syscall.SIGKILL)
	procs[lead].wait()
	leader(lead)
	if _, err := a.Set(ctx, "/e", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	waitData(b, "/e", "2")

	// The killed member restarts from its directory and catches up.
	start(lead)
	c := connect(lead)
	defer c.Close()
	waitData(c, "/e", "2")

	// A disk replaced: kill -9 a member, empty its data directory (myid
	// and zoo.cfg stay), start it again. It rejoins under a new raft
	// identity, gets the data, and once promoted it makes a quorum with
	// one other member.
	procs[third].cmd.Signal(syscall.SIGKILL)
	procs[third].wait()
	if err := os.RemoveAll(filepath.Join(filepath.Dir(cfgs[third]), "zkgo")); err != nil {
		t.Fatal(err)
	}
	// If the killed member led, the others elect a new leader first;
	// their clients see a connection loss meanwhile and retry.
	set := func(c *zk.Conn, p, data string) {
		t.Helper()
		for {
			_, err := c.Set(ctx, p, []byte(data), -1)
			if err == nil {
				return
			}
			if !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	set(a, "/e", "3")
	start(third)
	d := connect(third)
	defer d.Close()
	waitData(d, "/e", "3")
	for {
		out, _ := zk.FourLetterWord(ctx, procs[third].addr, "mntr")
		if strings.Contains(out, "zkgo_raft_voters\t3") && !strings.Contains(out, fmt.Sprintf("zkgo_raft_id\t%d\n", third+1)) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the rejoined member was not promoted:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	procs[other].cmd.Signal(syscall.SIGKILL)
	procs[other].wait()
	set(c, "/e", "4")
	waitData(d, "/e", "4")
}

// writeEnsemble writes the zoo.cfg and myid of n members on 127.0.0.1
// with distinct ports, each in base/N, with extra added to every zoo.cfg,
// and returns the zoo.cfg paths and the server.N lines. maxSessionTimeout
// is 10 s (ZooKeeper's default, 20 ticks, is 2 s at this tickTime: a
// session could expire while the tests kill and restart members).
func writeEnsemble(t *testing.T, base string, n int, extra string) (cfgs, lines []string) {
	t.Helper()
	clientPorts := make([]int, n)
	for i := 0; i < n; i++ {
		clientPorts[i] = zktest.FreePort(t)
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d;127.0.0.1:%d", i+1, zktest.FreePort(t), zktest.FreePort(t), clientPorts[i]))
	}
	cfgs = make([]string, n)
	for i := 0; i < n; i++ {
		dir := filepath.Join(base, fmt.Sprint(i+1))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644)
		text := fmt.Sprintf("tickTime=100\ninitLimit=10\nsyncLimit=5\nmaxSessionTimeout=10000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=0\n%s%s\n",
			dir, clientPorts[i], extra, strings.Join(lines, "\n"))
		cfgs[i] = filepath.Join(dir, "zoo.cfg")
		os.WriteFile(cfgs[i], []byte(text), 0o644)
	}
	return cfgs, lines
}
