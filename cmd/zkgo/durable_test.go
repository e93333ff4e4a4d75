package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// durableConfig writes a zoo.cfg with a fixed port (so clients can
// reconnect to the restarted server) and the given data directory.
func durableConfig(t *testing.T, dir string, extra string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := filepath.Join(dir, "zoo.cfg")
	text := "tickTime=100\nmaxSessionTimeout=20000\ndataDir=" + filepath.Join(dir, "data") +
		"\nclientPort=" + strconv.Itoa(port) + "\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=0\n" + extra
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestDurableKill9: every acknowledged write survives kill -9 of the server,
// including sequential numbering, an ephemeral whose session resumes after
// the restart, and a session that does not come back (expired after one
// timeout, its ephemeral deleted). Run with a snapshot every 50 entries so
// recovery goes through a snapshot plus the log.
func TestDurableKill9(t *testing.T) {
	dir := t.TempDir()
	cfg := durableConfig(t, dir, "snapCount=50\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := zk.OpenACLUnsafe
	cmd, addr := startServer(t, cfg)

	keep, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	gone, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keep.Create(ctx, "/d", []byte("root"), open, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := 0; i < n; i++ {
		if _, err := keep.Create(ctx, fmt.Sprintf("/d/n%03d", i), []byte(strconv.Itoa(i)), open, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	seq, err := keep.Create(ctx, "/d/s-", nil, open, zk.ModePersistentSequential)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keep.Set(ctx, "/d", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := keep.Create(ctx, "/d/eph-keep", nil, open, zk.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Create(ctx, "/d/eph-gone", nil, open, zk.ModeEphemeral); err != nil {
		t.Fatal(err)
	}

	// kill -9, then restart on the same directory.
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	gone.Close() // best effort; the server is down, so the session stays
	_, addr2 := startServer(t, cfg)
	if addr2 != addr {
		t.Fatalf("restarted on %s, want %s", addr2, addr)
	}

	// The kept session resumes (same id) with its ephemeral.
	states, stop := keep.NotifyState()
	defer stop()
	for keep.State() != zk.StateConnected && keep.State() != zk.StateReconnected {
		select {
		case <-states:
		case <-ctx.Done():
			t.Fatal("client did not reconnect")
		}
	}
	children, _, err := keep.Children(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}
	if len(children) < n+2 {
		t.Fatalf("%d children after restart, want at least %d", len(children), n+2)
	}
	for i := 0; i < n; i += 37 {
		data, _, err := keep.Get(ctx, fmt.Sprintf("/d/n%03d", i))
		if err != nil || string(data) != strconv.Itoa(i) {
			t.Fatalf("n%03d after restart: %q %v", i, data, err)
		}
	}
	if data, st, err := keep.Get(ctx, "/d"); err != nil || string(data) != "changed" || st.Version != 1 {
		t.Fatalf("/d after restart: %q %+v %v", data, st, err)
	}
	st, err := keep.Exists(ctx, "/d/eph-keep")
	if err != nil || st == nil || st.EphemeralOwner != keep.SessionID() {
		t.Fatalf("kept ephemeral: %+v %v", st, err)
	}
	seq2, err := keep.Create(ctx, "/d/s-", nil, open, zk.ModePersistentSequential)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := strconv.Atoi(seq[len(seq)-10:])
	b, _ := strconv.Atoi(seq2[len(seq2)-10:])
	if b <= a {
		t.Fatalf("sequence went from %s to %s", seq, seq2)
	}
	// The session that did not come back expires one timeout after the
	// restart, and its ephemeral goes.
	_, ev, err := keep.ExistsW(ctx, "/d/eph-gone")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ev:
		if e.Type != zk.EventNodeDeleted {
			t.Fatalf("event %+v", e)
		}
	case <-ctx.Done():
		t.Fatal("the abandoned session's ephemeral was never deleted")
	}
	if _, err := keep.Exists(ctx, "/d/eph-gone"); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	snaps, err := os.ReadDir(filepath.Join(dir, "data", "zkgo", "snap"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshot taken with snapCount=50: %v %v", snaps, err)
	}
}

func TestRefusesJavaDataDir(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "data", "version-2"), 0o755)
	os.WriteFile(filepath.Join(dir, "data", "version-2", "snapshot.0"), []byte("ZKSN"), 0o644)
	cfg := durableConfig(t, dir, "")
	out, err := exec.Command(binary, "server", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Apache ZooKeeper data") {
		t.Fatalf("started on a Java ZooKeeper data dir: %v\n%s", err, out)
	}
}

var crashSeed = flag.Uint64("crash.seed", 0, "seed of TestCrashUnderLoad (0: random)")
var crashRounds = flag.Int("crash.rounds", 20, "kill -9 rounds of TestCrashUnderLoad")

// TestCrashUnderLoad: a writer creates nodes as fast as it can; the server
// is killed with SIGKILL at a random moment, restarted on the same
// directory, and every acknowledged create must be there, with the zxid
// never going backwards. Repeated -crash.rounds times; -crash.seed replays.
// (SIGKILL keeps the page cache, so this proves the log and recovery, not
// the fsyncs; the storage package's fault tests cover those.)
func TestCrashUnderLoad(t *testing.T) {
	seed := *crashSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -crash.seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	cfg := durableConfig(t, dir, "snapCount=300\n")
	var acked []string
	var lastZxid int64
	for round := 0; round < *crashRounds; round++ {
		cmd, addr := startServer(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(5*time.Second), zk.WithConnectRetry(zk.NTimes{N: 20, Delay: 50 * time.Millisecond}))
		if err != nil {
			t.Fatal(err)
		}
		// Everything acknowledged so far is there, and the zxid has not
		// gone back.
		for _, p := range acked {
			if st, err := c.Exists(ctx, p); err != nil || st == nil {
				t.Fatalf("round %d: acknowledged %s missing after kill -9 (%v; seed %d)", round, p, err, seed)
			}
		}
		st, err := c.Exists(ctx, "/")
		if err != nil {
			t.Fatal(err)
		}
		if c.LastZxid() < lastZxid {
			t.Fatalf("round %d: zxid went back from %d to %d (seed %d)", round, lastZxid, c.LastZxid(), seed)
		}
		_ = st
		// Write until killed.
		kill := time.Duration(rng.IntN(150)) * time.Millisecond
		done := make(chan []string)
		go func() {
			var mine []string
			for i := 0; ; i++ {
				p := fmt.Sprintf("/r%d-%d", round, i)
				if _, err := c.Create(ctx, p, []byte("x"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
					done <- mine
					return
				}
				mine = append(mine, p)
			}
		}()
		time.Sleep(kill)
		lastZxid = c.LastZxid()
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		acked = append(acked, <-done...)
		c.Close()
		cancel()
	}
	t.Logf("%d acknowledged creates over %d kills", len(acked), *crashRounds)
}
