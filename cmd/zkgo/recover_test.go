package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// Two members of three lost for good: the survivor cannot commit. zkgo
// recover on it, stopped, and a restart with the same zoo.cfg make it a
// new ensemble's first member; two new members with empty data
// directories at the lost ones' addresses join it, and every write
// acknowledged before the loss is there. The lost members' old data,
// started again, is refused (another formation) and does not mix in.
func TestRecoverFromLostQuorum(t *testing.T) {
	base := t.TempDir()
	cfgs, lines := writeEnsemble(t, base, 3, "4lw.commands.whitelist=*\n")
	var servers []string
	for _, l := range lines {
		_, client, _ := strings.Cut(l, ";")
		servers = append(servers, client)
	}
	m := newMemberProcs(t, cfgs)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m.startHealthy(ctx, servers, "/rec")
	c, err := zk.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		if _, err := c.Create(ctx, fmt.Sprintf("/rec/n-%02d", i), []byte("v"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	for i := range 3 {
		m.procs[i].kill()
	}
	// Members 2 and 3 are lost for good; their data is kept aside to
	// show it cannot rejoin.
	stale := filepath.Join(t.TempDir(), "stale2")
	if err := os.CopyFS(stale, os.DirFS(filepath.Join(base, "2", "zkgo"))); err != nil {
		t.Fatal(err)
	}
	for _, i := range []string{"2", "3"} {
		if err := os.RemoveAll(filepath.Join(base, i, "zkgo")); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(binary, "recover", "-config", cfgs[0]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "recovered") {
		t.Fatalf("zkgo recover: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	for i := range 3 {
		m.start(i)
	}
	waitHealthy(ctx, t, servers, "after the recovery")
	c, err = zk.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if st, err := c.Exists(ctx, fmt.Sprintf("/rec/n-%02d", i)); err != nil || st == nil {
			t.Fatalf("acknowledged /rec/n-%02d lost by the recovery: %v", i, err)
		}
	}
	if _, err := c.Create(ctx, "/rec/after", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	// The old member 2, started again on its old data, is refused.
	m.procs[1].kill()
	if err := os.RemoveAll(filepath.Join(base, "2", "zkgo")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(base, "2", "zkgo"), os.DirFS(stale)); err != nil {
		t.Fatal(err)
	}
	cmd, _, log := startServerLog(t, cfgs[1])
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for !strings.Contains(log.String(), "another formation") {
		if ctx.Err() != nil {
			t.Fatalf("the lost member's old data was not refused:\n%s", lastLines(log.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.Create(ctx, "/rec/still", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
}
