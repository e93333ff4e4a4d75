package replica

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/raftnode"
)

// The identity file: each form reads back as written, the form of
// earlier releases reads as "no formation", and a damaged file is an
// error that names it, never a guess.
func TestIdentityFile(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []identity{{0x1234, 0}, {0x1234, raftnode.FormationPending}, {0xabcdef, 0x8899aabbccddeeff}} {
		if err := writeIdentity(dir, id); err != nil {
			t.Fatal(err)
		}
		got, ok, err := readIdentity(dir)
		if err != nil || !ok || got != id {
			t.Fatalf("%+v read back as %+v, %v, %v", id, got, ok, err)
		}
	}
	path := filepath.Join(dir, ensembleFile)
	os.WriteFile(path, []byte("ensemble 00000000000000ff\n"), 0o600) // an earlier release's
	if got, ok, err := readIdentity(dir); err != nil || !ok || got != (identity{0xff, 0}) {
		t.Fatalf("earlier form: %+v %v %v", got, ok, err)
	}
	for _, bad := range []string{"", "ensemble", "ensemble zz", "ensemble 0", "cluster 12", "ensemble 12 formation", "ensemble 12 formation 1",
		"ensemble 12 formation 0", "ensemble 12 shape 34", "ensemble 12 formation xyz", "ensemble 12 formation pending extra", strings.Repeat("ensemble 12 ", 40)} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, _, err := readIdentity(dir); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, ok, err := readIdentity(t.TempDir()); ok || err != nil {
		t.Fatalf("no file: %v %v", ok, err)
	}
	// A member that forms records a pending formation; one that restarts
	// on data without the file, none.
	d1, d2 := t.TempDir(), t.TempDir()
	peers := []Peer{{ID: 1, Addr: "a:1"}, {ID: 2, Addr: "b:1"}}
	if id, err := ensembleIdentity(d1, peers, true); err != nil || id.formation != raftnode.FormationPending || id.ensemble != membershipHash(peers) {
		t.Fatalf("forming: %+v %v", id, err)
	}
	if id, err := ensembleIdentity(d2, peers, false); err != nil || id.formation != 0 {
		t.Fatalf("restarting: %+v %v", id, err)
	}
}
