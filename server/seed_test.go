package server_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zk"
)

// seedTree returns the snapshot bytes of a tree made elsewhere, with
// zxids from base+1: a few nodes, ten sequential children of /q of which
// four were deleted again (the parent's create count names the next
// one), and a session that owns an ephemeral.
func seedTree(t *testing.T, base int64) []byte {
	t.Helper()
	tr := tree.New()
	world := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	zxid := base
	apply := func(txn *tree.Txn) {
		zxid++
		txn.Time = 1_700_000_000_000 + zxid - base
		if r := tr.Apply(zxid, txn); r.Err != proto.ErrOk {
			t.Fatalf("txn %d %v: %v", zxid, txn.Op, r.Err)
		}
	}
	const session = 0x1234
	apply(&tree.Txn{Op: proto.OpCreateSession, Session: session, Req: &tree.CreateSessionReq{Timeout: 30000, Passwd: make([]byte, 16)}})
	apply(&tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/app", Data: []byte("config"), ACL: world}})
	apply(&tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/q", ACL: world}})
	for i := 0; i < 10; i++ {
		apply(&tree.Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/q/item-", ACL: world, Flags: proto.ModePersistentSequential}})
	}
	for i := 0; i < 4; i++ {
		apply(&tree.Txn{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: fmt.Sprintf("/q/item-%010d", i), Version: -1}})
	}
	apply(&tree.Txn{Op: proto.OpCreate, Session: session, Req: &proto.CreateRequest{Path: "/app/owner", ACL: world, Flags: proto.ModeEphemeral}})
	var b bytes.Buffer
	if err := tr.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A standalone data directory seeded with a tree serves that tree — data,
// stats, the next sequential suffix — takes writes with zxids above the
// tree's (here ZooKeeper-like ones, epoch 5), and keeps all of it over a
// restart.
func TestSeedDataDirStandalone(t *testing.T) {
	const base = 5 << 32
	snap := seedTree(t, base)
	dir := t.TempDir()
	opts := server.Options{DataDir: dir}
	if err := server.SeedDataDir(opts, bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if err := server.SeedDataDir(opts, bytes.NewReader(snap)); err == nil || !strings.Contains(err.Error(), "holds zkgo data already") {
		t.Fatalf("seeding twice: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := durableServer(t, dir, 0)
	c, err := zk.Connect(ctx, s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	data, st, err := c.Get(ctx, "/app")
	if err != nil || string(data) != "config" || st.Czxid != base+2 || st.Ctime != 1_700_000_000_002 {
		t.Fatalf("/app = %q %+v %v", data, st, err)
	}
	kids, _, err := c.Children(ctx, "/q")
	if err != nil || len(kids) != 6 {
		t.Fatalf("/q children %v %v", kids, err)
	}
	name, err := c.Create(ctx, "/q/item-", nil, zk.OpenACLUnsafe, zk.ModePersistentSequential)
	if err != nil || name != "/q/item-0000000010" {
		t.Fatalf("next sequential child %q %v (want suffix 10: ten creates before)", name, err)
	}
	if _, err := c.Create(ctx, "/new", []byte("n"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Exists(ctx, "/new"); err != nil || st == nil || st.Czxid <= base+17 {
		t.Fatalf("/new: %+v %v, want a czxid above the seeded tree's last zxid %#x", st, err, base+17)
	}
	c.Close()
	s.Close()

	s = durableServer(t, dir, 0)
	defer s.Close()
	c, err = zk.Connect(ctx, s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/app", "/q/item-0000000010", "/new"} {
		if st, err := c.Exists(ctx, p); err != nil || st == nil {
			t.Fatalf("%s after the restart: %v %v", p, st, err)
		}
	}
}

// The members of an ensemble seeded from the same bytes start from the
// same state, elect a leader, choose a formation and replicate writes;
// one seeded with a configuration that does not name it is refused.
func TestSeedDataDirEnsemble(t *testing.T) {
	snap := seedTree(t, 0)
	c := startCluster(t, 3, 0, func(o *server.Options) {
		if _, err := os.Stat(filepath.Join(o.DataDir, "zkgo")); err == nil {
			return // a restart
		}
		if err := server.SeedDataDir(*o, bytes.NewReader(snap)); err != nil {
			t.Fatal(err)
		}
	})
	c.waitFormation()
	for i := range 3 {
		c.waitNode(i, "/app", "config")
	}
	c.createOnLeader("/after", "a")
	for i := range 3 {
		c.waitNode(i, "/after", "a")
	}
	bad := server.Options{DataDir: t.TempDir(), ServerID: 9, Peers: c.peers}
	if err := server.SeedDataDir(bad, bytes.NewReader(snap)); err == nil || !strings.Contains(err.Error(), "not among") {
		t.Fatalf("seeding server 9 of a three-member ensemble: %v", err)
	}
}

// Damaged seed data is refused before anything is written.
func TestSeedDataDirRefusesDamagedData(t *testing.T) {
	snap := seedTree(t, 0)
	snap[len(snap)/2] ^= 0xff
	dir := t.TempDir()
	err := server.SeedDataDir(server.Options{DataDir: dir}, bytes.NewReader(snap))
	if err == nil {
		t.Fatal("damaged snapshot seeded")
	}
	if _, serr := os.Stat(filepath.Join(dir, "zkgo")); !os.IsNotExist(serr) {
		t.Fatalf("a refused seed left %s behind (%v)", filepath.Join(dir, "zkgo"), serr)
	}
}

// LoadDataDir reads a stopped member's tree — its snapshot and the
// committed log after it — refuses while the member runs, and the tree
// it returns seeds another data directory that serves the same nodes.
func TestLoadDataDir(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := durableServer(t, dir, 10) // snapshots every 10 entries, and a log after the last
	c, err := zk.Connect(ctx, s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		if _, err := c.Create(ctx, fmt.Sprintf("/n%02d", i), []byte(fmt.Sprint(i)), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := server.LoadDataDir(server.Options{DataDir: dir}); err == nil {
		t.Fatal("LoadDataDir read the data directory of a running server")
	}
	c.Close()
	s.Close()
	tr, err := server.LoadDataDir(server.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		n := tr.Get(fmt.Sprintf("/n%02d", i))
		if n == nil || string(n.Data()) != fmt.Sprint(i) {
			t.Fatalf("/n%02d missing or wrong in the loaded tree", i)
		}
	}
	var b bytes.Buffer
	if err := tr.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	if err := server.SeedDataDir(server.Options{DataDir: dir2}, &b); err != nil {
		t.Fatal(err)
	}
	s2 := durableServer(t, dir2, 0)
	defer s2.Close()
	c2, err := zk.Connect(ctx, s2.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if data, _, err := c2.Get(ctx, "/n24"); err != nil || string(data) != "24" {
		t.Fatalf("/n24 on the seeded copy: %q %v", data, err)
	}
	if _, err := server.LoadDataDir(server.Options{DataDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no zkgo data") {
		t.Fatalf("LoadDataDir of an empty directory: %v", err)
	}
}
