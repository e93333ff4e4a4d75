package zkdata

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zk"
)

// These tests run the real Apache ZooKeeper 3.8 (one JVM at a time):
// ZooKeeper writes, zkdata reads its data directory; zkdata writes a
// snapshot, ZooKeeper starts from it.

// view is one node as a client sees it.
type view struct {
	data     []byte
	stat     proto.Stat
	acl      []proto.ACL
	children []string
}

const (
	digestUser = "u"
	digestPass = "p"
)

func startApache(t *testing.T, dataDir string, props map[string]string) *apachezk.Server {
	t.Helper()
	s, err := apachezk.Start(apachezk.Options{
		DataDir:       dataDir,
		ExtendedTypes: true,
		ExtraConfig:   map[string]string{"snapCount": "16"},
		// Containers and TTL nodes stay: the test compares them.
		ContainerCheckInterval: -1,
		SystemProperties:       props,
		ExtraJVMArgs:           []string{"-Xmx96m"},
	})
	apachezk.SkipIfUnavailable(t, err)
	return s
}

func dial(t *testing.T, addr string, opts ...zk.Option) *zk.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, addr, append([]zk.Option{zk.WithSessionTimeout(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// snapshotWorkload writes every kind of node through the client.
func snapshotWorkload(t *testing.T, ctx context.Context, c, owner, closer *zk.Conn) {
	t.Helper()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	open := zk.WorldACL(zk.PermAll)
	dig := append(zk.DigestACL(zk.PermAll, digestUser, digestPass), zk.WorldACL(zk.PermRead)...)
	ip := []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: "ip", ID: "127.0.0.1"}}, {Perms: zk.PermRead, ID: zk.Id{Scheme: "world", ID: "anyone"}}}
	shared := append(slices.Clone(dig), ip[0]) // shares entries with dig and ip

	must(c.Create(ctx, "/app", []byte("app"), open, zk.ModePersistent))
	must(c.Create(ctx, "/app/bin", []byte{0, 1, 2, 0xff, 0x80, '\n', 0}, dig, zk.ModePersistent))
	must(c.Create(ctx, "/app/empty", []byte{}, ip, zk.ModePersistent))
	must(c.Create(ctx, "/app/shared", []byte("s"), shared, zk.ModePersistent))
	must(c.Create(ctx, "/app/deep", nil, open, zk.ModePersistent))
	must(c.Create(ctx, "/app/deep/er", nil, open, zk.ModePersistent))
	must(c.Create(ctx, "/app/deep/er/still", []byte(strings.Repeat("x", 5000)), open, zk.ModePersistent))
	var seqs []string
	for range 6 {
		p, err := c.Create(ctx, "/app/seq-", []byte("s"), open, zk.ModePersistentSequential)
		must(p, err)
		seqs = append(seqs, p)
	}
	must(nil, c.Delete(ctx, seqs[1], -1))
	must(nil, c.Delete(ctx, seqs[4], 0))
	must(owner.Create(ctx, "/app/eph", []byte("mine"), open, zk.ModeEphemeral))
	must(owner.Create(ctx, "/app/ephseq-", nil, open, zk.ModeEphemeralSequential))
	must(closer.Create(ctx, "/app/gone", nil, open, zk.ModeEphemeral))
	must(c.Create(ctx, "/box", []byte("container"), open, zk.ModeContainer))
	must(c.Create(ctx, "/box/item", nil, open, zk.ModePersistent))
	must(c.Create(ctx, "/ttl", []byte("ttl"), open, zk.ModePersistentWithTTL, zk.WithTTL(3600_000)))
	must(c.Create(ctx, "/ttl/kid", nil, open, zk.ModePersistent))
	must(c.Create(ctx, "/ttlseq-", nil, open, zk.ModePersistentSequentialWithTTL, zk.WithTTL(7200_000)))
	// Quota on /app as zkCli's setquota lays it out.
	must(c.Create(ctx, "/zookeeper/quota/app", nil, open, zk.ModePersistent))
	must(c.Create(ctx, "/zookeeper/quota/app/zookeeper_limits", []byte("count=1000,bytes=-1"), open, zk.ModePersistent))
	must(c.Create(ctx, "/zookeeper/quota/app/zookeeper_stats", []byte("count=0,bytes=0"), open, zk.ModePersistent))
	must(c.Create(ctx, "/app/counted", []byte("12345"), open, zk.ModePersistent))
	// Versions: setData and setACL, many times (snapshots are taken as
	// this goes, snapCount is small).
	for i := range 40 {
		must(c.Set(ctx, "/app", []byte(fmt.Sprintf("app-%d", i)), int32(i)))
	}
	must(c.SetACL(ctx, "/app/deep", dig, 0))
	must(c.SetACL(ctx, "/app/deep", shared, 1))
	must(c.Multi(ctx,
		zk.CreateOp("/app/m1", []byte("m"), open, zk.ModePersistent),
		zk.CreateOp("/app/mseq-", nil, open, zk.ModePersistentSequential),
		zk.SetDataOp("/app/m1", []byte("m2"), 0),
		zk.CheckOp("/app/bin", 0),
		zk.DeleteOp("/app/deep/er/still", 0),
	))
	// A failed multi changes nothing.
	if _, err := c.Multi(ctx, zk.CreateOp("/app/never", nil, open, zk.ModePersistent), zk.CheckOp("/app", 99)); err == nil {
		t.Fatal("multi with a bad check succeeded")
	}
	// The closing session takes its ephemeral with it.
	must(nil, closer.Close())
	// The last writes (writeLast) land in the log after the last
	// snapshot.
	must(c.Create(ctx, "/pad", nil, open, zk.ModePersistent))
}

// walk records what the client sees of every node.
func walk(t *testing.T, ctx context.Context, c *zk.Conn) map[string]view {
	t.Helper()
	out := make(map[string]view)
	var rec func(p string)
	rec = func(p string) {
		data, st, err := c.Get(ctx, p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		acl, _, err := c.GetACL(ctx, p)
		if err != nil {
			t.Fatalf("getACL %s: %v", p, err)
		}
		kids, _, err := c.Children(ctx, p)
		if err != nil {
			t.Fatalf("children %s: %v", p, err)
		}
		slices.Sort(kids)
		out[p] = view{data: data, stat: *st, acl: acl, children: kids}
		for _, k := range kids {
			if p == "/" {
				rec("/" + k)
			} else {
				rec(p + "/" + k)
			}
		}
	}
	rec("/")
	return out
}

// compareImage checks the image against what a client saw, node by node.
func compareImage(t *testing.T, im *Image, seen map[string]view, skip func(string) bool) {
	t.Helper()
	paths := 0
	err := im.Walk(func(n Node) error {
		paths++
		if skip != nil && skip(n.Path) {
			return nil
		}
		v, ok := seen[n.Path]
		if !ok {
			t.Errorf("%s: in the image, not seen by the client", n.Path)
			return nil
		}
		if !bytes.Equal(n.Data, v.data) {
			t.Errorf("%s: data %q, client saw %q", n.Path, n.Data, v.data)
		}
		if st := n.ClientStat(); st != v.stat {
			t.Errorf("%s: stat\n  image  %+v\n  client %+v", n.Path, st, v.stat)
		}
		if !slices.Equal(n.ACL, v.acl) {
			t.Errorf("%s: ACL %v, client saw %v", n.Path, n.ACL, v.acl)
		}
		if kids := im.Children(n.Path); !slices.Equal(kids, v.children) {
			t.Errorf("%s: children %v, client saw %v", n.Path, kids, v.children)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range seen {
		if _, ok := im.Node(p); !ok && (skip == nil || !skip(p)) {
			t.Errorf("%s: seen by the client, not in the image", p)
		}
	}
}

// writeLast writes /last (created as v1, then set to v2) into ZooKeeper's
// log after its newest snapshot. ZooKeeper rolls its log and snapshots
// after a random number of writes (snapCount/2 plus a random part), so a
// workload's last write is sometimes the one that rolls it: the data
// directory then ends in a snapshot with no log after it. writeLast sets
// /pad until a write opens a new log file, which cannot roll it again;
// once the snapshot the roll before it started has its file (newer than
// every snapshot before that roll; its zxid is fixed then), the two
// writes of /last land in that log after it.
func writeLast(t *testing.T, ctx context.Context, c *zk.Conn, dataDir string) {
	t.Helper()
	newest := func(prefix string) int64 {
		ents, err := os.ReadDir(filepath.Join(dataDir, "version-2"))
		if err != nil {
			t.Fatal(err)
		}
		best := int64(-1)
		for _, e := range ents {
			if z, ok := strings.CutPrefix(e.Name(), prefix); ok {
				if v, err := strconv.ParseInt(z, 16, 64); err == nil && v > best {
					best = v
				}
			}
		}
		return best
	}
	set := func() int64 {
		st, err := c.Set(ctx, "/pad", []byte("p"), zk.AnyVersion)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mzxid
	}
	// snapBefore is the newest snapshot before the previous write of
	// this loop (-2: that write was not this loop's).
	snapBefore := int64(-2)
	for range 64 {
		before := newest("snapshot.")
		z := set()
		if newest("log.") != z || snapBefore == -2 {
			snapBefore = before
			continue
		}
		// The previous write rolled the log: wait for its snapshot.
		for newest("snapshot.") <= snapBefore {
			if ctx.Err() != nil {
				t.Fatalf("no snapshot after the log rolled at %#x", z-1)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := c.Create(ctx, "/last", []byte("v1"), zk.WorldACL(zk.PermAll), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Set(ctx, "/last", []byte("v2"), 0); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("ZooKeeper did not roll its log in 64 writes (snapCount 16)")
}

func TestApache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache ZooKeeper")
	}
	dataDir := t.TempDir()
	s := startApache(t, dataDir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dial(t, s.Addr(), zk.WithAuth("digest", []byte(digestUser+":"+digestPass)))
	owner := dial(t, s.Addr())
	closer := dial(t, s.Addr())
	snapshotWorkload(t, ctx, c, owner, closer)
	writeLast(t, ctx, c, dataDir)
	seen := walk(t, ctx, c)
	ownerID, ownerPw, mainID := owner.SessionID(), owner.SessionPassword(), c.SessionID()
	lastZxid := seen["/last"].stat.Mzxid
	// Stopped cleanly (SIGTERM). ZooKeeper writes nothing on the way out:
	// the last log ends in its preallocated zeros. The torn case below
	// cuts a copy as a crash mid-write would.
	if err := s.Terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	c.Close()
	owner.Close()

	var im *Image
	t.Run("read", func(t *testing.T) {
		var err error
		im, err = ReadDir(dataDir, "", ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sum := im.Summary()
		t.Logf("summary: %+v", sum)
		if sum.LastZxid != lastZxid || len(sum.Logs) == 0 || sum.Txns == 0 || sum.Snapshot == "snapshot.0" {
			t.Errorf("want a later snapshot and logs after it up to zxid %#x: %+v", lastZxid, sum)
		}
		// Every log entry's digest must match. The snapshot's own digest
		// may not when ZooKeeper wrote the snapshot while applying (a
		// fuzzy snapshot; ZooKeeper logs the same mismatch when it loads
		// one): the entries replayed after it still check the tree.
		logMismatches := 0
		for _, m := range sum.DigestMismatches {
			if !strings.Contains(m, "(snapshot)") {
				logMismatches++
			}
		}
		if sum.DigestChecks < 2 || logMismatches != 0 || len(sum.Notes) != 0 {
			t.Errorf("digests: %d checks, mismatches %v, notes %v", sum.DigestChecks, sum.DigestMismatches, sum.Notes)
		}
		if len(sum.DigestMismatches) > 0 {
			t.Logf("the snapshot's digest differs (a fuzzy snapshot): %v", sum.DigestMismatches)
		}
		compareImage(t, im, seen, nil)
		var gotOwner, gotMain bool
		for _, ss := range im.Sessions() {
			switch ss.ID {
			case ownerID:
				gotOwner = bytes.Equal(ss.Passwd, ownerPw) && ss.Timeout == 30000
			case mainID:
				gotMain = true
			}
		}
		if !gotOwner || !gotMain || len(im.Sessions()) != 2 {
			t.Errorf("sessions %+v: want the two live ones, the owner's with its password", im.Sessions())
		}
		// The zkgo tree shows clients the same.
		tr, err := im.Tree(tree.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for p, v := range seen {
			n := tr.Get(p)
			if n == nil {
				t.Errorf("tree: %s missing", p)
				continue
			}
			if n.Stat() != v.stat || !bytes.Equal(n.Data(), v.data) || !slices.Equal(n.ACL(), v.acl) {
				t.Errorf("tree: %s differs: %+v vs %+v", p, n.Stat(), v.stat)
			}
		}
	})

	t.Run("torn", func(t *testing.T) {
		torn := copyDir(t, dataDir)
		v2 := filepath.Join(torn, versionDir)
		logs, err := listFiles(v2, "log", true)
		if err != nil || len(logs) == 0 {
			t.Fatalf("logs: %v %v", logs, err)
		}
		// ZooKeeper's snapshots are fuzzy: one started near the end may
		// already hold the write torn below, and then ZooKeeper (and
		// this reader) keep it. Keep only the snapshot written at the
		// first start so the logs alone decide, replayed from zxid 0.
		snaps, err := listFiles(v2, "snapshot", false)
		if err != nil || len(snaps) == 0 || snaps[0].zxid != 0 {
			t.Fatalf("snapshots: %v %v, want snapshot.0 first", snaps, err)
		}
		for _, s := range snaps[1:] {
			if err := os.Remove(filepath.Join(v2, s.name)); err != nil {
				t.Fatal(err)
			}
		}
		name := filepath.Join(v2, logs[0].name)
		// Find the last record: the setData of /last.
		var lastAt, lastZ int64
		f, _ := os.Open(name)
		readLog(f, logs[0].name, ReadOptions{}.limits(), func(tx *txn, at int64) error {
			lastAt, lastZ = at, tx.hdr.zxid
			return nil
		})
		f.Close()
		if lastZ != lastZxid {
			t.Fatalf("last record zxid %#x, want %#x", lastZ, lastZxid)
		}
		// Cut the file inside the last record (a crash mid-write).
		if err := os.Truncate(name, lastAt+20); err != nil {
			t.Fatal(err)
		}
		got, err := ReadDir(torn, "", ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sum := got.Summary()
		if sum.LastZxid != lastZxid-1 || len(sum.TornTails) != 1 {
			t.Errorf("summary %+v", sum)
		}
		n, _ := got.Node("/last")
		if string(n.Data) != "v1" || n.Stat.Version != 0 {
			t.Errorf("/last = %q version %d, want the value before the torn write", n.Data, n.Stat.Version)
		}
		compareImage(t, got, seen, func(p string) bool { return p == "/last" })
	})

	if im == nil {
		t.Fatal("no image")
	}
	t.Run("write", func(t *testing.T) {
		dir := t.TempDir()
		v2 := filepath.Join(dir, versionDir)
		if err := os.MkdirAll(v2, 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := im.WriteSnapshot(&b, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v2, SnapshotName(im.LastZxid(), "")), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		// ZooKeeper writes its own startup snapshot compressed with
		// snappy: read back below.
		s := startApache(t, dir, map[string]string{"zookeeper.snapshot.compression.method": "snappy"})
		defer s.Stop()
		c := dial(t, s.Addr(), zk.WithAuth("digest", []byte(digestUser+":"+digestPass)))
		defer c.Close()
		back := walk(t, ctx, c)
		compareImage(t, im, back, nil)
		// ZooKeeper compared the digest we wrote with the tree it loaded.
		m, err := s.FourLetterWord("mntr")
		if err != nil || !strings.Contains(m, "zk_digest_mismatches_count\t0\n") {
			t.Errorf("mntr: digest mismatches reported (%v):\n%s", err, m)
		}
		zlog, _ := os.ReadFile(filepath.Join(s.Dir(), "zookeeper.log"))
		if !bytes.Contains(zlog, []byte("has digest version of 2")) || bytes.Contains(zlog, []byte("Digests are not matching")) {
			t.Errorf("ZooKeeper's log does not show the digest read and matched:\n%s", s.LogTail())
		}
		// Sequential names carry on from the parent's create count.
		app, _ := im.Node("/app")
		p, err := c.Create(ctx, "/app/seq-", nil, zk.WorldACL(zk.PermAll), zk.ModePersistentSequential)
		if want := fmt.Sprintf("/app/seq-%010d", app.Stat.Cversion); err != nil || p != want {
			t.Errorf("sequential create: %q %v, want %q", p, err, want)
		}
		p, err = c.Create(ctx, "/ttlseq-", nil, zk.WorldACL(zk.PermAll), zk.ModePersistentSequentialWithTTL, zk.WithTTL(1000))
		root, _ := im.Node("/")
		if want := fmt.Sprintf("/ttlseq-%010d", root.Stat.Cversion); err != nil || p != want {
			t.Errorf("sequential TTL create: %q %v, want %q", p, err, want)
		}
		more := walk(t, ctx, c)
		zxid := more["/ttlseq-"+p[len("/ttlseq-"):]].stat.Czxid
		s.Stop()
		c.Close()

		// ZooKeeper's own snappy snapshot (taken at startup, at the same
		// zxid as ours, which goes) and the log after it read back to what
		// the client saw last.
		if err := os.Remove(filepath.Join(v2, SnapshotName(im.LastZxid(), ""))); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(v2)
		for _, e := range ents {
			t.Logf("written by ZooKeeper: %s", e.Name())
		}
		got, err := ReadDir(dir, "", ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sum := got.Summary()
		t.Logf("summary: %+v", sum)
		if !strings.HasSuffix(sum.Snapshot, ".snappy") || sum.LastZxid != zxid || len(sum.DigestMismatches) != 0 {
			t.Errorf("summary %+v", sum)
		}
		compareImage(t, got, more, nil)
	})
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
