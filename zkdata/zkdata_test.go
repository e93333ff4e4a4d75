package zkdata

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

func TestSessionPassword(t *testing.T) {
	// From java.util.Random on OpenJDK 17, as ZooKeeperServer.generatePasswd.
	for _, tt := range []struct {
		id   int64
		want string
	}{
		{0, "f22acd4a97e69d6d20a49bb638eadb38"},
		{1, "054cc74a37327db215e702e20c73f005"},
		{72057639055130624, "06ecd6661b14ad77549da60f5cbd5cd2"},
		{-1, "20f62cb5648dc2d771471c8a2486a9ee"},
		{72057601930526720, "acd48dec00ba11189f8a325d15b5cf69"},
	} {
		if got := hex.EncodeToString(SessionPassword(tt.id)); got != tt.want {
			t.Errorf("SessionPassword(%#x) = %s, want %s", tt.id, got, tt.want)
		}
	}
}

// A zkgo tree written as a ZooKeeper snapshot (every compression) and read
// back is the same tree, byte for byte in zkgo's own format — but for the
// sessions' claims (tree.Session.Claim), which ZooKeeper's format has no
// place for: an imported session has none until a client resumes it.
func TestRoundTrip(t *testing.T) {
	tr := testTree(t)
	for _, s := range tr.Sessions() {
		s.Claim = 0
	}
	want := zkgoBytes(t, tr)
	for _, comp := range []string{"", "gz", "snappy"} {
		t.Run("compression="+comp, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteSnapshot(&b, tr, WriteOptions{Compression: comp}); err != nil {
				t.Fatal(err)
			}
			name := SnapshotName(tr.LastZxid(), comp)
			dir := writeDir(t, map[string][]byte{name: b.Bytes()})
			im, err := ReadDir(dir, "", ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s := im.Summary()
			if s.Snapshot != name || s.LastZxid != tr.LastZxid() || s.Znodes != tr.NodeCount()-1 || s.Sessions != 2 {
				t.Errorf("summary %+v", s)
			}
			if s.DigestChecks != 1 || len(s.DigestMismatches) != 0 {
				t.Errorf("digest checks %d, mismatches %v", s.DigestChecks, s.DigestMismatches)
			}
			got, err := im.Tree(tree.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(zkgoBytes(t, got), want) {
				t.Error("tree after the round trip differs")
			}
		})
	}
}

func TestClientStat(t *testing.T) {
	im := FromTree(testTree(t))
	tr := testTree(t)
	tr.Walk(func(p string, n *tree.Node) {
		node, ok := im.Node(p)
		if !ok {
			t.Fatalf("%s missing", p)
		}
		if got, want := node.ClientStat(), n.Stat(); got != want {
			t.Errorf("%s: ClientStat %+v, tree says %+v", p, got, want)
		}
	})
	n, _ := im.Node("/app")
	if n.Stat.Cversion != 10 || n.ClientStat().Cversion != 10*2-n.Stat.NumChildren {
		t.Errorf("/app stat %+v", n.Stat)
	}
}

// Replay onto a fuzzy snapshot: the snapshot already holds transactions
// after its zxid; creates of existing nodes and deletes of missing ones are
// tolerated, the parent's cversion follows the log.
func TestFuzzyReplay(t *testing.T) {
	base := tree.New()
	im := FromTree(base)
	// Snapshot "at" zxid 10 that already holds /a (created at 11) and no
	// longer holds /gone (deleted at 12).
	im.lastZxid = 10
	im.createNode("/a", []byte("a"), worldAll, 0, 1, 11, 1000)
	snap := snapBytes(t, im, WriteOptions{NoDigest: true})

	lw := newLog()
	lw.add(entry(1, 11, 1000, proto.OpCreate, createBody("/a", []byte("a"), worldAll, false, 1)))
	lw.add(entry(1, 12, 1001, proto.OpDelete, pathBody("/gone")))
	lw.add(entry(1, 13, 1002, proto.OpCreate, createBody("/a/x", nil, worldAll, false, 1)))
	lw.add(entry(1, 14, 1003, proto.OpCreate, createBody("/a/x", nil, worldAll, false, 5))) // exists: cversion to 5
	lw.add(entry(1, 15, 1004, proto.OpSetData, setDataBody("/a", []byte("b"), 1)))
	lw.pad(100)
	dir := writeDir(t, map[string][]byte{"snapshot.a": snap, "log.b": lw.buf.Bytes()})
	got, err := ReadDir(dir, "", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := got.Node("/a")
	if string(a.Data) != "b" || a.Stat.Version != 1 || a.Stat.Cversion != 5 || a.Stat.Pzxid != 14 || a.Stat.NumChildren != 1 {
		t.Errorf("/a = %q %+v", a.Data, a.Stat)
	}
	root, _ := got.Node("/")
	if root.Stat.Pzxid != 12 || root.Stat.Cversion != 1 {
		t.Errorf("/ stat %+v (delete of a missing child still moves pzxid)", root.Stat)
	}
	s := got.Summary()
	if s.LastZxid != 15 || s.Txns != 5 || len(s.TornTails) != 0 {
		t.Errorf("summary %+v", s)
	}
}

// ReadDir picks the newest snapshot that reads, and replays from it.
func TestSnapshotFallback(t *testing.T) {
	im := FromTree(tree.New())
	im.lastZxid = 5
	older := snapBytes(t, im, WriteOptions{})
	im.createNode("/new", nil, worldAll, 0, -1, 6, 1)
	im.lastZxid = 6
	newer := snapBytes(t, im, WriteOptions{})
	// Corrupt the newer one where the quick check does not look.
	bad := bytes.Clone(newer)
	bad[len(bad)/2] ^= 0x40

	lw := newLog()
	lw.add(entry(1, 6, 1, proto.OpCreate, createBody("/new", nil, worldAll, false, -1)))
	lw.add(entry(1, 7, 2, proto.OpCreate, createBody("/more", nil, worldAll, false, -1)))
	dir := writeDir(t, map[string][]byte{
		"snapshot.5": older, "snapshot.6": bad, "snapshot.7": []byte("short"), "log.1": lw.buf.Bytes(),
	})
	got, err := ReadDir(dir, "", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Summary()
	if s.Snapshot != "snapshot.5" || len(s.Skipped) != 2 || s.LastZxid != 7 || s.Txns != 2 {
		t.Errorf("summary %+v", s)
	}
	for _, p := range []string{"/new", "/more"} {
		if _, ok := got.Node(p); !ok {
			t.Errorf("%s missing", p)
		}
	}
	// With no good snapshot at all: ErrNoSnapshot.
	dir = writeDir(t, map[string][]byte{"snapshot.6": bad})
	if _, err := ReadDir(dir, "", ReadOptions{}); !errors.Is(err, ErrNoSnapshot) || !errors.Is(err, ErrBadSnapshot) {
		t.Errorf("err = %v", err)
	}
}

func TestBadSnapshots(t *testing.T) {
	im := FromTree(testTree(t))
	good := snapBytes(t, im, WriteOptions{})
	hugeData := func() []byte {
		// A root whose data length is far over the limit.
		var e jute.Encoder
		e.WriteInt(snapMagic)
		e.WriteInt(2)
		e.WriteLong(-1)
		e.WriteInt(0)         // sessions
		e.WriteInt(0)         // ACLs
		e.WriteString("")     // root path
		e.WriteInt(0x7ffffff) // data length
		return e.Bytes()
	}
	for _, tt := range []struct {
		name   string
		in     []byte
		limit  bool
		offset int64
	}{
		{"bad magic", append([]byte("ZKSX"), good[4:]...), false, 0},
		{"bad version", append(append([]byte("ZKSN"), 0, 0, 0, 3), good[8:]...), false, 4},
		{"truncated", good[:len(good)/2], false, -1},
		{"flipped byte", flip(good, len(good)/2), false, -1},
		{"huge data length", hugeData(), true, 24},
		{"huge session count", patchInt(good, 16, 1<<30), true, 16},
		{"empty", nil, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSnapshot(bytes.NewReader(tt.in), 1, ReadOptions{MaxSessions: 1000})
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("err = %v, want a FormatError", err)
			}
			if errors.Is(err, ErrLimit) != tt.limit {
				t.Errorf("err = %v, limit %v", err, tt.limit)
			}
			if tt.offset >= 0 && fe.Offset != tt.offset {
				t.Errorf("offset %d, want %d (%v)", fe.Offset, tt.offset, err)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 0x10
	return b
}

func patchInt(b []byte, off int, v int32) []byte {
	b = bytes.Clone(b)
	b[off], b[off+1], b[off+2], b[off+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return b
}

func TestLogs(t *testing.T) {
	im := FromTree(tree.New())
	im.lastZxid = 1
	snap := snapBytes(t, im, WriteOptions{})
	mk := func() (*logWriter, []int64) {
		lw := newLog()
		var offs []int64
		for i := range 4 {
			offs = append(offs, lw.add(entry(1, int64(2+i), 1, proto.OpCreate, createBody("/n"+string(rune('a'+i)), []byte("x"), worldAll, false, -1))))
		}
		return lw, offs
	}
	t.Run("zero padding ends the log", func(t *testing.T) {
		lw, _ := mk()
		lw.pad(4096)
		got := mustRead(t, map[string][]byte{"snapshot.1": snap, "log.2": lw.buf.Bytes()})
		if s := got.Summary(); s.LastZxid != 5 || s.Txns != 4 || len(s.TornTails) != 0 {
			t.Errorf("summary %+v", s)
		}
	})
	t.Run("torn tail is dropped", func(t *testing.T) {
		lw, offs := mk()
		b := lw.buf.Bytes()
		for _, cut := range []int{int(offs[3]) + 3, int(offs[3]) + 14, len(b) - 1} {
			got := mustRead(t, map[string][]byte{"snapshot.1": snap, "log.2": b[:cut]})
			s := got.Summary()
			if s.LastZxid != 4 || s.Txns != 3 || len(s.TornTails) != 1 || !strings.Contains(s.TornTails[0], "log.2") {
				t.Errorf("cut at %d: summary %+v", cut, s)
			}
			if _, ok := got.Node("/nd"); ok {
				t.Errorf("cut at %d: torn create applied", cut)
			}
		}
		// A torn record followed by zeros (preallocation) ends the log too.
		torn := append(bytes.Clone(b[:len(b)-5]), make([]byte, 64)...)
		if s := mustRead(t, map[string][]byte{"snapshot.1": snap, "log.2": torn}).Summary(); s.LastZxid != 4 {
			t.Errorf("zero-filled tail: summary %+v", s)
		}
	})
	t.Run("checksum failure in the middle", func(t *testing.T) {
		lw, offs := mk()
		b := lw.buf.Bytes()
		b[offs[1]+20] ^= 1 // inside the second entry
		dir := writeDir(t, map[string][]byte{"snapshot.1": snap, "log.2": b})
		_, err := ReadDir(dir, "", ReadOptions{})
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, ErrBadLog) || fe.File != "log.2" || fe.Offset != offs[1] {
			t.Fatalf("err = %v, want a checksum error in log.2 at %d", err, offs[1])
		}
		if !strings.Contains(err.Error(), "log.2") || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("message %q", err)
		}
	})
	t.Run("huge length", func(t *testing.T) {
		lw, offs := mk()
		b := patchInt(lw.buf.Bytes(), int(offs[2])+8, 1<<30)
		dir := writeDir(t, map[string][]byte{"snapshot.1": snap, "log.2": b})
		_, err := ReadDir(dir, "", ReadOptions{})
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, ErrLimit) || !errors.Is(err, ErrBadLog) || fe.Offset != offs[2]+8 {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad magic", func(t *testing.T) {
		lw, _ := mk()
		b := bytes.Clone(lw.buf.Bytes())
		b[0] = 'X'
		dir := writeDir(t, map[string][]byte{"snapshot.1": snap, "log.2": b})
		if _, err := ReadDir(dir, "", ReadOptions{}); !errors.Is(err, ErrBadLog) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("logs before the snapshot are skipped", func(t *testing.T) {
		lw, _ := mk()
		im2 := FromTree(tree.New())
		im2.lastZxid = 3
		im2.createNode("/na", []byte("x"), worldAll, 0, -1, 2, 1)
		im2.createNode("/nb", []byte("x"), worldAll, 0, -1, 3, 1)
		got := mustRead(t, map[string][]byte{"snapshot.3": snapBytes(t, im2, WriteOptions{}), "log.2": lw.buf.Bytes()})
		if s := got.Summary(); s.LastZxid != 5 || s.Txns != 2 || s.DigestChecks != 1 || len(s.DigestMismatches) != 0 {
			t.Errorf("summary %+v", s)
		}
	})
	t.Run("separate dataLogDir", func(t *testing.T) {
		lw, _ := mk()
		snapDir := writeDir(t, map[string][]byte{"snapshot.1": snap})
		logDir := writeDir(t, map[string][]byte{"log.2": lw.buf.Bytes()})
		got, err := ReadDir(snapDir, logDir, ReadOptions{})
		if err != nil || got.LastZxid() != 5 {
			t.Fatalf("ReadDir: %v, last zxid %v", err, got)
		}
	})
}

func mustRead(t *testing.T, files map[string][]byte) *Image {
	t.Helper()
	got, err := ReadDir(writeDir(t, files), "", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Sessions, closes and multi through the log.
func TestReplaySessionsAndMulti(t *testing.T) {
	im := FromTree(tree.New())
	im.lastZxid = 1
	snap := snapBytes(t, im, WriteOptions{})
	const s1 = 0x1000001
	lw := newLog()
	lw.add(entry(s1, 2, 1, proto.OpCreateSession, func(e *jute.Encoder) { e.WriteInt(5000) }))
	lw.add(entry(s1, 3, 1, proto.OpCreate, createBody("/e", nil, worldAll, true, -1)))
	lw.add(entry(s1, 4, 1, proto.OpCreate2, createBody("/p", []byte("p"), nil, false, -1)))
	sub := func(typ proto.OpCode, body func(*jute.Encoder)) func(*jute.Encoder) {
		return func(e *jute.Encoder) {
			var b jute.Encoder
			body(&b)
			e.WriteInt(int32(typ))
			e.WriteBuffer(b.Bytes())
		}
	}
	multi := func(ops ...func(*jute.Encoder)) func(*jute.Encoder) {
		return func(e *jute.Encoder) {
			e.WriteVectorLen(len(ops))
			for _, op := range ops {
				op(e)
			}
		}
	}
	lw.add(entry(s1, 5, 1, proto.OpMulti, multi(
		sub(proto.OpCreate, createBody("/m1", nil, worldAll, false, -1)),
		sub(proto.OpSetData, setDataBody("/p", []byte("q"), 1)),
		sub(proto.OpCheck, func(e *jute.Encoder) { e.WriteString("/p"); e.WriteInt(1) }),
	)))
	// A failed multi: nothing applies.
	lw.add(entry(s1, 6, 1, proto.OpMulti, multi(
		sub(proto.OpCreate, createBody("/m2", nil, worldAll, false, -1)),
		sub(proto.OpError, func(e *jute.Encoder) { e.WriteInt(int32(proto.ErrBadVersion)) }),
	)))
	const s2 = 0x1000002
	lw.add(entry(s2, 7, 1, proto.OpCreateSession, func(e *jute.Encoder) { e.WriteInt(6000) }))
	lw.add(entry(s2, 8, 1, proto.OpCreate, createBody("/e2", nil, worldAll, true, -1)))
	lw.add(entry(s2, 9, 1, proto.OpCloseSession, func(e *jute.Encoder) { e.WriteVectorLen(1); e.WriteString("/e2") }))
	got := mustRead(t, map[string][]byte{"snapshot.1": snap, "log.2": lw.buf.Bytes()})
	for p, want := range map[string]bool{"/e": true, "/p": true, "/m1": true, "/m2": false, "/e2": false} {
		if _, ok := got.Node(p); ok != want {
			t.Errorf("%s present = %v, want %v", p, ok, want)
		}
	}
	if p, _ := got.Node("/p"); string(p.Data) != "q" || p.Stat.Version != 1 {
		t.Errorf("/p %q %+v", p.Data, p.Stat)
	}
	ss := got.Sessions()
	if len(ss) != 1 || ss[0].ID != s1 || ss[0].Timeout != 5000 || !bytes.Equal(ss[0].Passwd, SessionPassword(s1)) {
		t.Errorf("sessions %+v", ss)
	}
	if e, _ := got.Node("/e"); e.Stat.EphemeralOwner != s1 {
		t.Errorf("/e owner %#x", e.Stat.EphemeralOwner)
	}
	if _, err := got.Tree(tree.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Ephemerals of a session the snapshot does not list are dropped, as
// ZooKeeper drops them at startup.
func TestDeadSessionEphemerals(t *testing.T) {
	im := FromTree(tree.New())
	im.lastZxid = 9
	im.createNode("/dead", nil, worldAll, 0x77, -1, 9, 1)
	got, err := ReadSnapshot(bytes.NewReader(snapBytes(t, im, WriteOptions{})), 9, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Node("/dead"); ok || got.Summary().DeadSessionNodes != 1 {
		t.Errorf("dead ephemeral kept: %+v", got.Summary())
	}
}

func TestSnapshotFileNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		zxid int64
		mode string
		ok   bool
	}{
		{"snapshot.1a", 0x1a, "", true},
		{"snapshot.1a.gz", 0x1a, "gz", true},
		{"snapshot.1a.snappy", 0x1a, "snappy", true},
		{"snapshot.1a.tmp", 0x1a, "", true},
		{"snapshot.zz", 0, "", false},
		{"log.1a", 0, "", false},
		{"snapshot", 0, "", false},
	} {
		z, m, ok := parseName(tt.name, "snapshot")
		if ok != tt.ok || (ok && (z != tt.zxid || m != tt.mode)) {
			t.Errorf("parseName(%q) = %#x %q %v", tt.name, z, m, ok)
		}
	}
	if got := SnapshotName(0x100000002, "gz"); got != "snapshot.100000002.gz" {
		t.Errorf("SnapshotName = %q", got)
	}
}

func TestReadSnapshotFile(t *testing.T) {
	tr := testTree(t)
	dir := t.TempDir()
	p := filepath.Join(dir, SnapshotName(tr.LastZxid(), "snappy"))
	var b bytes.Buffer
	if err := WriteSnapshot(&b, tr, WriteOptions{Compression: "snappy"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := ReadSnapshotFile(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if im.LastZxid() != tr.LastZxid() || im.Summary().Znodes != tr.NodeCount()-1 {
		t.Errorf("summary %+v", im.Summary())
	}
}

// A 3.4 snapshot has no /zookeeper/config, and 3.2-era logs hold
// CreateTxnV0 (no parentCVersion): both still come through.
func TestOldFormats(t *testing.T) {
	im := FromTree(tree.New())
	im.deleteNode(tree.ConfigPath, 1)
	im.lastZxid = 1
	snap := snapBytes(t, im, WriteOptions{NoDigest: true})
	lw := newLog()
	lw.add(entry(1, 2, 1, proto.OpCreate, func(e *jute.Encoder) {
		e.WriteString("/v0")
		e.WriteBuffer([]byte("old"))
		e.WriteVectorLen(-1) // null ACL: the open ACL
		e.WriteBool(false)
	}))
	got := mustRead(t, map[string][]byte{"snapshot.1": snap, "log.2": lw.buf.Bytes()})
	n, ok := got.Node("/v0")
	if !ok || string(n.Data) != "old" || !slicesEqualACL(n.ACL, worldAll) {
		t.Fatalf("/v0 = %+v %v", n, ok)
	}
	if root, _ := got.Node("/"); root.Stat.Cversion != 1 {
		t.Errorf("root cversion %d, want 1 (the V0 create increments)", root.Stat.Cversion)
	}
	if _, ok := got.Node(tree.ConfigPath); ok {
		t.Fatal("config node appeared in the image")
	}
	tr, err := got.Tree(tree.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Get(tree.ConfigPath)
	if c == nil || c.Stat().Aversion != -1 || c.ACL()[0].Perms != proto.PermRead {
		t.Errorf("config node in the tree: %+v", c)
	}
}

func slicesEqualACL(a, b []proto.ACL) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The digest a zkgo tree keeps as it applies transactions is ZooKeeper's
// digest of the same tree.
func TestTreeDigestIsZooKeepers(t *testing.T) {
	tr := testTree(t)
	if got, want := tr.Digest(), FromTree(tr).computeDigest(); got != want {
		t.Fatalf("tree digest %#x, ZooKeeper's %#x", got, want)
	}
	if tr.Digest() == 0 {
		t.Fatal("digest 0")
	}
}
