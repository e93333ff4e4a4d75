package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/linearize"
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
	m := newMemberProcs(t, cfgs)
	procs, start := m.procs, m.start
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
	load := startLoad(ctx, servers, "/load", 1)
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
	// If server 4 or 5 led (member 2's restart may have moved the
	// leadership), its removal costs an election: connection losses,
	// retried.
	for {
		_, err := c.Set(ctx, "/r", []byte("2"), -1)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	acked := load.finish(t)
	if len(acked) < 10 {
		t.Fatalf("only %d writes during the reconfigs", len(acked))
	}
	checkHeld(ctx, t, procs[0].addr, "/load", acked)
	t.Logf("%d acknowledged creates during 3 → 5 → 3", len(acked))
}

// TestReconfigKillDuringChange: a reconfig that adds server 4 and removes
// server 3 in one change (raft's joint consensus: enter, then leave) while
// the leader is killed with SIGKILL — right as the request is sent, and
// right after it is answered (between entering and leaving the joint
// configuration, or just after). The killed member is started again; the
// ensemble ends in one of the two configurations, every live member
// agrees on it, it takes writes, and it is never stuck: a reconfig
// afterwards succeeds.
func TestReconfigKillDuringChange(t *testing.T) {
	for _, when := range []string{"with the request", "after the answer"} {
		t.Run(strings.ReplaceAll(when, " ", "-"), func(t *testing.T) {
			const n = 4
			cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nreconfigEnabled=true\nskipACL=yes\n")
			for i := range 3 {
				b, err := os.ReadFile(cfgs[i])
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(cfgs[i], []byte(strings.Replace(string(b), lines[3]+"\n", "", 1)), 0o644)
			}
			m := newMemberProcs(t, cfgs)
			procs, start := m.procs, m.start
			for i := range n {
				start(i)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			mode := func(i int) string {
				out, _ := zk.FourLetterWord(ctx, procs[i].addr, "srvr")
				for _, l := range strings.Split(out, "\n") {
					if m, ok := strings.CutPrefix(l, "Mode: "); ok {
						return m
					}
				}
				return ""
			}
			lead := -1
			for lead < 0 {
				for i := range 3 {
					if mode(i) == "leader" {
						lead = i
					}
				}
				if ctx.Err() != nil {
					t.Fatal("no leader")
				}
				time.Sleep(20 * time.Millisecond)
			}
			asker := (lead + 1) % 3
			c, err := zk.Connect(ctx, procs[asker].addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			line4 := strings.Replace(lines[3], ";", ":participant;", 1)
			// Server 4 is up and has had time to ask to join.
			for ctx.Err() == nil {
				out, _ := zk.FourLetterWord(ctx, procs[3].addr, "srvr")
				if out != "" {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond)         // server 4's first probes
			remove := fmt.Sprint(3 - lead - asker + 1) // neither the leader nor the asker (indexes 0..2 add up to 3)
			done := make(chan error, 1)
			go func() {
				_, _, err := c.IncrementalReconfig(ctx, []string{line4}, []string{remove}, -1)
				done <- err
			}()
			if when == "with the request" {
				procs[lead].kill()
				<-done
			} else {
				err := <-done
				procs[lead].kill()
				t.Logf("reconfig answered %v before the kill", err)
			}
			start(lead)
			// Every live member agrees on one of the two configurations
			// and the ensemble takes writes.
			var agreed string
			for {
				var cfg0 string
				same := true
				for i := range n {
					// Server 4 serves only if it was added, the removed
					// one only if it was not.
					if fmt.Sprint(i+1) == remove || (i == 3 && !strings.Contains(cfg0, "server.4=")) {
						continue
					}
					cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
					cc, err := zk.Connect(cctx, procs[i].addr)
					if err != nil {
						ccancel()
						same = false
						break
					}
					data, _, err := cc.GetConfig(cctx)
					ccancel()
					cc.Close()
					if err != nil {
						same = false
						break
					}
					if cfg0 == "" {
						cfg0 = string(data)
					} else if string(data) != cfg0 {
						same = false
					}
				}
				if same && cfg0 != "" {
					if _, err := c.Create(ctx, "/after", nil, zk.OpenACLUnsafe, zk.ModePersistent); err == nil || errors.Is(err, zk.ErrNodeExists) {
						agreed = cfg0
						break
					}
				}
				if ctx.Err() != nil {
					t.Fatalf("the ensemble did not settle on one configuration")
				}
				time.Sleep(50 * time.Millisecond)
			}
			added := strings.Contains(agreed, "server.4=")
			removed := !strings.Contains(agreed, "server."+remove+"=")
			if added != removed {
				t.Fatalf("half a change:\n%s", agreed)
			}
			t.Logf("settled on the %s configuration", map[bool]string{true: "new", false: "old"}[added])
			// Not stuck: another reconfig goes through.
			for {
				var err error
				if added {
					_, _, err = c.IncrementalReconfig(ctx, nil, []string{"4"}, -1)
				} else {
					_, _, err = c.IncrementalReconfig(ctx, []string{line4}, nil, -1)
				}
				if err == nil {
					break
				}
				if !errors.Is(err, zk.ErrReconfigInProgress) && !errors.Is(err, zk.ErrConnectionLoss) && !errors.Is(err, zk.ErrNewConfigNoQuorum) || ctx.Err() != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestRollingReplacement: every machine of a three-member ensemble is
// replaced, one at a time, under a steady write load — start the new
// server (its zoo.cfg lists the current ensemble and itself), add it by
// reconfig, wait until it is a voter, remove the old one by reconfig,
// stop it. The ensemble ends on three new members holding every
// acknowledged write; the writer sees nothing but retried connection
// losses. Three more sessions read and write three znodes meanwhile
// (linearize.Workload); their history is linearizable.
func TestRollingReplacement(t *testing.T) {
	const n = 6 // 1..3 old, 4..6 new
	cfgs, lines := writeEnsemble(t, t.TempDir(), n, "4lw.commands.whitelist=*\nreconfigEnabled=true\nskipACL=yes\n")
	participant := func(i int) string { return strings.Replace(lines[i], ";", ":participant;", 1) }
	// Each zoo.cfg lists the ensemble as it is when that server starts.
	current := []int{0, 1, 2}
	writeCfg := func(i int, members []int) {
		b, err := os.ReadFile(cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, "server.") {
				keep = append(keep, l)
			}
		}
		for _, m := range members {
			keep = append(keep, lines[m])
		}
		os.WriteFile(cfgs[i], []byte(strings.Join(keep, "\n")+"\n"), 0o644)
	}
	m := newMemberProcs(t, cfgs)
	procs, start := m.procs, m.start
	for _, i := range current {
		writeCfg(i, current)
		start(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var servers []string
	for _, l := range lines {
		_, client, _ := strings.Cut(l, ";")
		servers = append(servers, client)
	}
	admin, err := zk.Connect(ctx, servers[:3])
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Create(ctx, "/load", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create(ctx, "/lin", nil, zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	load := startLoad(ctx, servers, "/load", 1)
	rec := linearize.NewRecorder()
	lin := linearize.StartWorkload(ctx, t, rec, linRand(t), servers, 3, []string{"/lin/a", "/lin/b", "/lin/c"})
	reconfig := func(join, leave []string) {
		t.Helper()
		for {
			_, _, err := admin.IncrementalReconfig(ctx, join, leave, -1)
			if err == nil {
				return
			}
			if !errors.Is(err, zk.ErrNewConfigNoQuorum) && !errors.Is(err, zk.ErrReconfigInProgress) && !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
				t.Fatalf("reconfig +%v -%v: %v", join, leave, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for k := range 3 {
		old, nw := k, k+3
		writeCfg(nw, append(slices.Clone(current), nw))
		start(nw)
		reconfig([]string{participant(nw)}, nil)
		current = append(current, nw)
		// It is a voter once a further reconfig is no longer "in progress":
		// the removal below waits for that.
		reconfig(nil, []string{fmt.Sprint(old + 1)})
		current = slices.DeleteFunc(current, func(m int) bool { return m == old })
		admin.Close()
		if admin, err = zk.Connect(ctx, servers[nw]); err != nil {
			t.Fatal(err)
		}
		procs[old].kill()
	}
	defer admin.Close()
	acked := load.finish(t)
	lin.Finish(t)
	linearize.Require(t, rec.History(), time.Minute)
	t.Logf("linearizable: %+v", rec.Counts())
	var data []byte
	for {
		// The last member removed may have led: an election first.
		data, _, err = admin.GetConfig(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, zk.ErrConnectionLoss) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 3 {
		if strings.Contains(string(data), fmt.Sprintf("server.%d=", i+1)) || !strings.Contains(string(data), fmt.Sprintf("server.%d=", i+4)) {
			t.Fatalf("final configuration:\n%s", data)
		}
	}
	for i := 3; i < n; i++ {
		checkHeld(ctx, t, procs[i].addr, "/load", acked)
	}
	t.Logf("%d acknowledged creates while replacing all three machines", len(acked))
}
