package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TestReconfigFromZooCfg: three `zkgo server zoo.cfg` processes with
// reconfigEnabled; a fourth started from a zoo.cfg that lists the
// ensemble and itself waits until an incremental reconfig adds it, then
// holds the data. Every member rewrites its dynamic configuration file, so
// a member restarted afterwards comes back knowing four servers; removing
// the fourth shrinks the ensemble back to three.
func TestReconfigFromZooCfg(t *testing.T) {
	const n = 4
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nreconfigEnabled=true\nskipACL=yes\n")
	// The first three do not know the fourth yet.
	for i := range 3 {
		b, err := os.ReadFile(cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(cfgs[i], []byte(strings.Replace(string(b), lines[3]+"\n", "", 1)), 0o644)
	}
	type proc struct {
		kill func()
		addr string
	}
	procs := make([]proc, n)
	start := func(i int) {
		cmd, addr := startServer(t, cfgs[i])
		procs[i] = proc{func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }, addr}
	}
	for i := range n {
		// The fourth starts with the others: it must not form an
		// ensemble of its own configuration with them.
		start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var c *zk.Conn
	for {
		var err error
		if c, err = zk.Connect(ctx, procs[0].addr); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/r", []byte("1"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	line4 := strings.Replace(lines[3], ";", ":participant;", 1)
	var data []byte
	for {
		var err error
		data, _, err = c.IncrementalReconfig(ctx, []string{line4}, nil, -1)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrNewConfigNoQuorum) && !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(string(data), "server.4=") {
		t.Fatalf("new config:\n%s", data)
	}
	c4, err := zk.Connect(ctx, procs[3].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	if got, _, err := c4.Get(ctx, "/r"); err != nil || string(got) != "1" {
		t.Fatalf("the new member: %q, %v", got, err)
	}
	// Every member wrote the dynamic file; a restarted one reads it.
	dyn, err := filepath.Glob(cfgs[1] + ".dynamic.*")
	if err != nil || len(dyn) != 1 {
		t.Fatalf("dynamic files of member 2: %v %v", dyn, err)
	}
	procs[1].kill()
	start(1)
	c2, err := zk.Connect(ctx, procs[1].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for {
		got, _, err := c2.GetConfig(ctx)
		if err == nil && strings.Contains(string(got), "server.4=") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("member 2 after a restart: %q %v", got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Shrink back to three.
	for {
		data, _, err = c.IncrementalReconfig(ctx, nil, []string{"4"}, -1)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) && !errors.Is(err, zk.ErrReconfigInProgress) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(string(data), "server.4=") {
		t.Fatalf("after removing server 4:\n%s", data)
	}
	if _, err := c.Set(ctx, "/r", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
}
