package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TestReconfigFromZooCfg: three `zkgo server zoo.cfg` processes with
// reconfigEnabled, under a steady write load; a fourth and a fifth started
// from zoo.cfg files that list the ensemble and themselves wait until an
// incremental reconfig adds them (3 → 5), then hold the data. Every member
// rewrites its dynamic configuration file, so a member restarted
// afterwards comes back knowing five servers; removing the two shrinks the
// ensemble back to three. No acknowledged write is lost, and the writer
// sees no error but retried connection losses.
func TestReconfigFromZooCfg(t *testing.T) {
	const n = 5
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nreconfigEnabled=true\nskipACL=yes\n")
	// The first three do not know the others yet.
	for i := range 3 {
		b, err := os.ReadFile(cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(b), lines[3]+"\n", "", 1)
		text = strings.Replace(text, lines[4]+"\n", "", 1)
		os.WriteFile(cfgs[i], []byte(text), 0o644)
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
		// The new ones start with the others: they must not form an
		// ensemble of their own configuration with them.
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
	if _, err := c.Create(ctx, "/load", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	// The load: sequential creates from a session on the first three.
	var servers []string
	for _, l := range lines[:3] {
		_, client, _ := strings.Cut(l, ";")
		servers = append(servers, client)
	}
	stop := make(chan struct{})
	loadDone := make(chan error, 1)
	var acked []string
	go func() {
		w, err := zk.Connect(ctx, servers, zk.WithSessionTimeout(10*time.Second))
		if err != nil {
			loadDone <- err
			return
		}
		defer w.Close()
		for seq := 0; ; seq++ {
			select {
			case <-stop:
				loadDone <- nil
				return
			default:
			}
			p := fmt.Sprintf("/load/%06d", seq)
			for {
				_, err := w.Create(ctx, p, nil, zk.OpenACLUnsafe, zk.ModePersistent)
				if err == nil || errors.Is(err, zk.ErrNodeExists) {
					break
				}
				if !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
					loadDone <- fmt.Errorf("create %s: %w", p, err)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			acked = append(acked, p)
		}
	}()
	line4 := strings.Replace(lines[3], ";", ":participant;", 1)
	line5 := strings.Replace(lines[4], ";", ":participant;", 1)
	var data []byte
	for {
		var err error
		data, _, err = c.IncrementalReconfig(ctx, []string{line4, line5}, nil, -1)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrNewConfigNoQuorum) && !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(string(data), "server.4=") || !strings.Contains(string(data), "server.5=") {
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
		if err == nil && strings.Contains(string(got), "server.5=") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("member 2 after a restart: %q %v", got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Shrink back to three.
	for {
		data, _, err = c.IncrementalReconfig(ctx, nil, []string{"4", "5"}, -1)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) && !errors.Is(err, zk.ErrReconfigInProgress) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(string(data), "server.4=") || strings.Contains(string(data), "server.5=") {
		t.Fatalf("after removing servers 4 and 5:\n%s", data)
	}
	if _, err := c.Set(ctx, "/r", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	close(stop)
	if err := <-loadDone; err != nil {
		t.Fatal(err)
	}
	if len(acked) < 10 {
		t.Fatalf("only %d writes during the reconfigs", len(acked))
	}
	kids, _, err := c.Children(ctx, "/load")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, k := range kids {
		have["/load/"+k] = true
	}
	for _, p := range acked {
		if !have[p] {
			t.Fatalf("acknowledged %s lost (%d acknowledged, %d present)", p, len(acked), len(kids))
		}
	}
	t.Logf("%d acknowledged creates during 3 → 5 → 3", len(acked))
}
