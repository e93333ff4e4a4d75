package server_test

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
)

// waitFormation waits until every live member has recorded a chosen
// formation, the same on all, and returns it.
func (c *cluster) waitFormation() string {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f, same := "", true
		for _, m := range c.members {
			if m == nil {
				continue
			}
			v := mntrKey(m, "zkgo_ensemble_formation")
			if v == "" || v == "pending" || v == "none" || (f != "" && v != f) {
				same = false
			}
			f = v
		}
		if same && f != "" {
			return f
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the members did not record one formation (last seen %q)", f)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An ensemble formed anew on the same member list — every data directory
// emptied, the members started again — is another formation: a member
// left over from the earlier one (its disk put back, or a machine that
// was down while the others were wiped) has the same raft ids and the
// same cluster id, but it is refused by the new formation, with a reason
// logged on both sides, and its log never mixes with the new one's.
func TestEnsembleRefusesEarlierFormation(t *testing.T) {
	var logs lockedBuffer
	logTo := func(o *server.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	c := startCluster(t, 3, 0, logTo)
	first := c.waitFormation()
	for i := range 3 {
		if b, err := os.ReadFile(filepath.Join(c.dirs[i], "zkgo", "ENSEMBLE")); err != nil || !strings.Contains(string(b), "formation "+first) {
			t.Fatalf("member %d: ENSEMBLE %q, %v", i+1, b, err)
		}
	}
	c.createOnLeader("/earlier", "e")
	c.waitNode(2, "/earlier", "e")
	// Member 3's data directory is kept aside; then all three are wiped.
	for i := range 3 {
		c.members[i].Close()
		c.members[i] = nil
	}
	kept := filepath.Join(t.TempDir(), "kept")
	if out, err := exec.Command("cp", "-a", filepath.Join(c.dirs[2], "zkgo"), kept).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	for i := range 3 {
		if err := os.RemoveAll(filepath.Join(c.dirs[i], "zkgo")); err != nil {
			t.Fatal(err)
		}
		c.restart(i)
	}
	second := c.waitFormation()
	if second == first {
		t.Fatalf("the new formation is the earlier one: %s", first)
	}
	c.createOnLeader("/later", "l")
	// Member 3 comes back with the earlier formation's data.
	c.members[2].Close()
	c.members[2] = nil
	if err := os.RemoveAll(filepath.Join(c.dirs[2], "zkgo")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", kept, filepath.Join(c.dirs[2], "zkgo")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	c.restart(2)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "another formation of this ensemble") || !strings.Contains(logs.String(), "peer refused the connection") {
		if time.Now().After(deadline) {
			t.Fatalf("the leftover member was not refused, or it was not logged on both sides:\n%s", tail(logs.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The new formation goes on with its two members; the leftover one
	// holds its own data only.
	lead := c.createOnLeader("/after", "a")
	if lead == 2 {
		t.Fatal("the leftover member leads the new formation")
	}
	c.waitNode((lead+1)%2, "/after", "a")
	var later, after, earlier bool
	c.members[2].Tree(func(tr *tree.Tree) { later, after = tr.Get("/later") != nil, tr.Get("/after") != nil })
	for i := range 2 {
		c.members[i].Tree(func(tr *tree.Tree) { earlier = earlier || tr.Get("/earlier") != nil })
	}
	if later || after || earlier {
		t.Fatalf("the formations' data mixed: leftover has /later %v, /after %v; the new formation has /earlier %v", later, after, earlier)
	}
	if b, err := os.ReadFile(filepath.Join(c.dirs[2], "zkgo", "ENSEMBLE")); err != nil || !strings.Contains(string(b), "formation "+first) {
		t.Fatalf("the leftover member's ENSEMBLE %q (%v), want the earlier formation %s", b, err, first)
	}
}

// A member whose formation is still pending while the others recorded
// the chosen one (here: its identity file put back to pending) takes the
// formation from the snapshot it restores, which carries it, and takes
// part again.
func TestEnsemblePendingMemberLearnsFormation(t *testing.T) {
	var logs lockedBuffer
	c := startCluster(t, 3, 0, func(o *server.Options) {
		o.SnapCount = 10
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	f := c.waitFormation()
	lead := c.leader()
	m := (lead + 1) % 3
	for i := range 40 {
		c.createOnLeader(fmt.Sprintf("/n%d", i), "x")
	}
	c.waitNode(m, "/n39", "x")
	c.members[m].Close()
	c.members[m] = nil
	path := filepath.Join(c.dirs[m], "zkgo", "ENSEMBLE")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pending := strings.Replace(string(b), "formation "+f, "formation pending", 1)
	if pending == string(b) {
		t.Fatalf("ENSEMBLE %q does not hold formation %s", b, f)
	}
	if err := os.WriteFile(path, []byte(pending), 0o600); err != nil {
		t.Fatal(err)
	}
	c.restart(m)
	c.createOnLeader("/after", "a")
	c.waitNode(m, "/after", "a")
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "formation "+f) {
		t.Fatalf("ENSEMBLE after the restart %q (%v), want formation %s", b, err, f)
	}
	if !strings.Contains(logs.String(), "carried by a snapshot from the ensemble") {
		t.Fatalf("the member did not take the formation from its snapshot:\n%s", tail(logs.String()))
	}
}
