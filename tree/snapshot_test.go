package tree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

var (
	snapSeed  = flag.Uint64("snap.seed", 0, "seed for TestSnapshotRandom (0: pick one and log it)")
	snapSteps = flag.Int("snap.steps", 3000, "number of transactions TestSnapshotRandom applies")
)

var snapOpts = Options{ExtendedTypes: true, EnforceQuota: true}

// writeSnap returns t's snapshot.
func writeSnap(tb testing.TB, t *Tree) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := t.WriteSnapshot(&buf); err != nil {
		tb.Fatalf("WriteSnapshot: %v", err)
	}
	return buf.Bytes()
}

// restore snapshots t, reads it back, checks that the copy equals t in
// every field and snapshots to the same bytes, and returns the copy with
// t's options set.
func restore(tb testing.TB, t *Tree) *Tree {
	tb.Helper()
	b := writeSnap(tb, t)
	c, err := ReadSnapshot(bytes.NewReader(b), ReadOptions{})
	if err != nil {
		tb.Fatalf("ReadSnapshot: %v", err)
	}
	c.SetOptions(t.opts)
	if d := diffTrees(t, c); len(d) > 0 {
		tb.Fatalf("restored tree differs:\n%s", strings.Join(d, "\n"))
	}
	if bad := checkInvariants(c); len(bad) > 0 {
		tb.Fatalf("restored tree breaks invariants:\n%s", strings.Join(bad, "\n"))
	}
	if b2 := writeSnap(tb, c); !bytes.Equal(b, b2) {
		tb.Fatalf("snapshot of the restored tree differs (%d vs %d bytes)", len(b), len(b2))
	}
	return c
}

// diffTrees compares every field of the replicated state of a and b
// (everything but QuotaWarning and Apply's scratch) and describes each
// difference. Data and passwords must agree on nil versus empty (clients see
// the difference); the index maps, which Apply creates lazily, may be nil in
// one and empty in the other.
func diffTrees(a, b *Tree) []string {
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if a.lastZxid != b.lastZxid {
		add("lastZxid %d vs %d", a.lastZxid, b.lastZxid)
	}
	if a.digest != b.digest {
		add("digest %#x vs %#x", a.digest, b.digest)
	}
	if a.opts != b.opts {
		add("opts %+v vs %+v", a.opts, b.opts)
	}
	aNodes, bNodes := nodeMap(a), nodeMap(b)
	if len(aNodes) != len(bNodes) || a.count != b.count {
		add("%d vs %d nodes (counts %d vs %d)", len(aNodes), len(bNodes), a.count, b.count)
	}
	if a.dataSize != b.dataSize {
		add("data sizes %d vs %d", a.dataSize, b.dataSize)
	}
	entryAB := map[*aclEntry]*aclEntry{}
	entryBA := map[*aclEntry]*aclEntry{}
	for _, p := range sortedKeys(aNodes) {
		na, nb := aNodes[p], bNodes[p]
		if nb == nil {
			add("%s: missing in b", p)
			continue
		}
		if na.rawStat() != nb.rawStat() {
			add("%s: stat\n  %s\n  %s", p, statString(na.rawStat()), statString(nb.rawStat()))
		}
		if da, db := na.Data(), nb.Data(); (da == nil) != (db == nil) || !bytes.Equal(da, db) {
			add("%s: data %#v vs %#v", p, da, db)
		}
		if !reflect.DeepEqual(na.acl.list, nb.acl.list) || na.acl.key != nb.acl.key || na.acl.refs != nb.acl.refs {
			add("%s: acl %s refs=%d vs %s refs=%d", p, aclString(na.acl.list), na.acl.refs, aclString(nb.acl.list), nb.acl.refs)
		}
		if e, ok := entryAB[na.acl]; ok && e != nb.acl {
			add("%s: ACL entries shared differently", p)
		}
		if e, ok := entryBA[nb.acl]; ok && e != na.acl {
			add("%s: ACL entries shared differently", p)
		}
		entryAB[na.acl], entryBA[nb.acl] = nb.acl, na.acl
		if ca, cb := childSet(na), childSet(nb); !setsEqual(ca, cb) {
			add("%s: children %v vs %v", p, sortedKeys(ca), sortedKeys(cb))
		}
	}
	for p := range bNodes {
		if aNodes[p] == nil {
			add("%s: missing in a", p)
		}
	}
	if len(a.acls.byKey) != len(b.acls.byKey) {
		add("ACL cache: %d vs %d entries", len(a.acls.byKey), len(b.acls.byKey))
	}
	for k, ea := range a.acls.byKey {
		eb := b.acls.byKey[k]
		if eb == nil || eb.refs != ea.refs || !reflect.DeepEqual(ea.list, eb.list) {
			add("ACL cache entry %s differs", aclString(ea.list))
		}
	}
	if len(a.ephemerals) != len(b.ephemerals) {
		add("ephemerals: %d vs %d owners", len(a.ephemerals), len(b.ephemerals))
	}
	for o, set := range a.ephemerals {
		if !setsEqual(set, b.ephemerals[o]) {
			add("ephemerals of %s: %v vs %v", ownerString(o), sortedKeys(set), sortedKeys(b.ephemerals[o]))
		}
	}
	if !setsEqual(a.containers, b.containers) {
		add("containers %v vs %v", sortedKeys(a.containers), sortedKeys(b.containers))
	}
	if !setsEqual(a.ttls, b.ttls) {
		add("ttls %v vs %v", sortedKeys(a.ttls), sortedKeys(b.ttls))
	}
	if !setsEqual(a.quotas, b.quotas) {
		add("quotas %v vs %v", sortedKeys(a.quotas), sortedKeys(b.quotas))
	}
	if len(a.sessions) != len(b.sessions) {
		add("%d vs %d sessions", len(a.sessions), len(b.sessions))
	}
	for id, sa := range a.sessions {
		sb := b.sessions[id]
		if sb == nil {
			add("session %s missing in b", ownerString(id))
			continue
		}
		if sa.ID != sb.ID || sa.Timeout != sb.Timeout || sa.Claim != sb.Claim || (sa.Passwd == nil) != (sb.Passwd == nil) || !bytes.Equal(sa.Passwd, sb.Passwd) {
			add("session %s: %+v vs %+v", ownerString(id), *sa, *sb)
		}
	}
	return d
}

// sameResult compares two Results; Events may be nil in one and empty in
// the other (the slice is Apply's scratch buffer, nil until first used).
func sameResult(a, b Result) bool {
	if len(a.Events) == 0 && len(b.Events) == 0 {
		a.Events, b.Events = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func setsEqual(a, b map[string]struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// TestSnapshotCoversEveryField fails when a field is added to the tree's
// types, so that whoever adds it decides whether it is replicated state
// (then WriteSnapshot, ReadSnapshot and diffTrees must handle it) or not.
func TestSnapshotCoversEveryField(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want []string
	}{
		// root (the nodes), sessions, lastZxid: written. count, dataSize,
		// acls, ephemerals, containers, ttls, quotas: rebuilt from the
		// nodes.
		// opts, QuotaWarning: configuration. events, journal, inMulti:
		// Apply's scratch. snap: a snapshot being written.
		// digest: rebuilt by a walk (diffTrees compares it with the
		// original's, which Apply kept); the digest log is history, not
		// state: it starts empty.
		{reflect.TypeFor[Tree](), []string{"root", "count", "dataSize", "acls", "ephemerals", "containers", "ttls", "sessions", "quotas", "digest", "noDigest", "digestLog", "digestHead", "digestMark", "opts", "lastZxid", "QuotaWarning", "events", "journal", "inMulti", "snap"}},
		// bufp and blen (name, in the path; data), acl, the stat fields
		// and meta's null-data bit: written; kids: written as pzxid and
		// cversion, its children rebuilt.
		{reflect.TypeFor[Node](), []string{"bufp", "acl", "kids", "czxid", "mzxid", "ctime", "mtime", "owner", "blen", "version", "aversion", "meta"}},
		// pzxid, cversion: written in the parent's stat; the rest rebuilt
		// (slots, tags, count, hashed) or a cache (list, handed, edits).
		{reflect.TypeFor[children](), []string{"pzxid", "cversion", "hashed", "count", "slots", "tags", "list", "handed", "edits"}},
		{reflect.TypeFor[Session](), []string{"ID", "Timeout", "Passwd", "Claim"}},
		// list: written; key, refs: rebuilt.
		{reflect.TypeFor[aclEntry](), []string{"key", "list", "refs"}},
		{reflect.TypeFor[aclCache](), []string{"byKey"}},
		// Written whole with Stat.Encode.
		{reflect.TypeFor[proto.Stat](), []string{"Czxid", "Mzxid", "Ctime", "Mtime", "Version", "Cversion", "Aversion", "EphemeralOwner", "DataLength", "NumChildren", "Pzxid"}},
	} {
		var got []string
		for i := 0; i < tc.typ.NumField(); i++ {
			got = append(got, tc.typ.Field(i).Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v has fields %v, the snapshot code knows %v: decide whether the new field is state and update snapshot.go, diffTrees and this list", tc.typ, got, tc.want)
		}
	}
}

// TestSnapshotGolden pins the version 2 encoding of a small tree, and
// reads the version 1 encoding of the same tree (sessions without a
// claim). A change here is a format change: bump SnapshotVersion and keep
// reading both.
func TestSnapshotGolden(t *testing.T) {
	tr := New()
	tr.Apply(7, &Txn{Op: proto.OpCreateSession, Session: 0x1234, Req: &CreateSessionReq{Timeout: 30000, Passwd: []byte("pw")}})
	want := unhexSnap(t, `
		5a4b474f534e4150 00000002      // "ZKGOSNAP", version 2
		0000000000000007               // lastZxid
		00000004 00000001              // 4 nodes, 1 session
		41 0000001b                    // 'A' (ACL index 0), 27 bytes
		  00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 // [cdrwa world:anyone]
		4e 00000051                    // 'N', 81 bytes
		  00000001 2f                  // "/"
		  00000000                     // data: empty (not nil)
		  00000000                     // ACL 0
		  0000000000000000 0000000000000000 0000000000000000 0000000000000000 // czxid mzxid ctime mtime
		  00000000 00000000 00000000   // version cversion aversion
		  0000000000000000             // ephemeralOwner
		  00000000 00000001            // dataLength numChildren
		  0000000000000000             // pzxid
		4e 0000005a                    // 'N', 90 bytes
		  0000000a 2f7a6f6f6b6565706572 00000000 00000000 // "/zookeeper", empty, ACL 0
		  0000000000000000 0000000000000000 0000000000000000 0000000000000000
		  00000000 00000000 00000000 0000000000000000 00000000 00000002 0000000000000000
		41 0000001b                    // 'A' (ACL index 1)
		  00000001 00000001 00000005 776f726c64 00000006 616e796f6e65 // [r world:anyone]
		4e 00000061                    // 'N', 97 bytes
		  00000011 2f7a6f6f6b65657065722f636f6e666967 00000000 00000001 // "/zookeeper/config", empty, ACL 1
		  0000000000000000 0000000000000000 0000000000000000 0000000000000000
		  00000000 00000000 ffffffff   // aversion -1, as ZooKeeper creates it
		  0000000000000000 00000000 00000000 0000000000000000
		4e 00000060                    // 'N', 96 bytes
		  00000010 2f7a6f6f6b65657065722f71756f7461 00000000 00000000 // "/zookeeper/quota", empty, ACL 0
		  0000000000000000 0000000000000000 0000000000000000 0000000000000000
		  00000000 00000000 00000000 0000000000000000 00000000 00000000 0000000000000000
		53 0000001a                    // 'S', 26 bytes
		  0000000000001234 00007530 00000002 7077 // id, timeout 30000, passwd "pw"
		  0000000000000007             // claim: the createSession's zxid
		`)
	crc := crc32.MakeTable(crc32.Castagnoli)
	want = binary.BigEndian.AppendUint32(want, crc32.Checksum(want, crc))
	got := writeSnap(t, tr)
	if !bytes.Equal(got, want) {
		t.Fatalf("snapshot\n got %x\nwant %x", got, want)
	}
	c, err := ReadSnapshot(bytes.NewReader(want), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(tr, c); len(d) > 0 {
		t.Fatal(strings.Join(d, "\n"))
	}

	// Version 1: the same but for the version and the session record.
	v1 := bytes.Clone(want[:len(want)-4])
	v1[11] = 1
	sess := bytes.LastIndex(v1, []byte{0x53, 0, 0, 0, 0x1a})
	v1 = append(v1[:sess], unhexSnap(t, `53 00000012 0000000000001234 00007530 00000002 7077`)...)
	v1 = binary.BigEndian.AppendUint32(v1, crc32.Checksum(v1, crc))
	c, err = ReadSnapshot(bytes.NewReader(v1), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Session(0x1234); s == nil || s.Claim != 0 || string(s.Passwd) != "pw" {
		t.Fatalf("version 1 session read as %+v", s)
	}
	tr.Session(0x1234).Claim = 0
	if d := diffTrees(tr, c); len(d) > 0 {
		t.Fatal(strings.Join(d, "\n"))
	}
}

func unhexSnap(tb testing.TB, s string) []byte {
	tb.Helper()
	var clean strings.Builder
	for line := range strings.Lines(s) {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	var out []byte
	str := clean.String()
	for i := 0; i+1 < len(str); i += 2 {
		v, err := strconv.ParseUint(str[i:i+2], 16, 8)
		if err != nil {
			tb.Fatalf("bad hex at %d: %v", i, err)
		}
		out = append(out, byte(v))
	}
	if len(str)%2 != 0 {
		tb.Fatal("odd hex length")
	}
	return out
}

func ttlTxn(path string, ttl int64, t int64) *Txn {
	return &Txn{Op: proto.OpCreateTTL, Time: t, Req: &proto.CreateTTLRequest{Path: path, ACL: openACL, Flags: proto.ModePersistentWithTTL, TTL: ttl}}
}

func sessionTxn(id int64) *Txn {
	return &Txn{Op: proto.OpCreateSession, Session: id, Req: &CreateSessionReq{Timeout: 5000, Passwd: []byte{1, 2, 3, byte(id)}}}
}

// TestSnapshotRoundTrip builds trees, restores a copy, checks that the copy
// is exact, then applies the same further transactions to both and checks
// the results and trees stay identical (restore + replay == never stopped),
// plus what each case expects of the replay.
func TestSnapshotRoundTrip(t *testing.T) {
	digestU1 := []proto.Id{{Scheme: "digest", ID: acl.DigestID("u1", "p")}}
	tests := []struct {
		name   string
		before []*Txn
		after  []*Txn
		check  func(t *testing.T, c *Tree, results []Result)
	}{
		{name: "new tree"},
		{
			name: "sequential names continue",
			before: []*Txn{
				createTxn("/s", "", proto.ModePersistent, 0),
				createTxn("/s/n-", "", proto.ModePersistentSequential, 0),
				createTxn("/s/n-", "", proto.ModePersistentSequential, 0),
				createTxn("/s/n-", "", proto.ModePersistentSequential, 0),
				{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/s/n-0000000001", Version: -1}},
				{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/s/n-0000000002", Version: -1}},
			},
			after: []*Txn{
				createTxn("/s/n-", "", proto.ModePersistentSequential, 0),
				createTxn("/", "", proto.ModePersistentSequential, 0),
			},
			check: func(t *testing.T, c *Tree, rs []Result) {
				if rs[0].Path != "/s/n-0000000003" {
					t.Errorf("next sequential child %q, want /s/n-0000000003", rs[0].Path)
				}
				if rs[0].Stat.Cversion != 0 || c.Get("/s").Stat().Cversion != 4*2-2 {
					t.Errorf("cversion seen by clients: %d", c.Get("/s").Stat().Cversion)
				}
				if rs[1].Path != "/0000000001" { // the root counts one create (/s); /zookeeper is built in
					t.Errorf("next sequential child of / %q", rs[1].Path)
				}
			},
		},
		{
			name: "ephemerals deleted by a closeSession after restore",
			before: []*Txn{
				sessionTxn(5), sessionTxn(6), sessionTxn(-0x7eff_ffff_ffff_fff0),
				createTxn("/e1", "x", proto.ModeEphemeral, 5),
				createTxn("/x", "", proto.ModePersistent, 0),
				createTxn("/x/e2", "", proto.ModeEphemeral, 5),
				createTxn("/x/e3", "", proto.ModeEphemeral, 6),
				createTxn("/x/q-", "", proto.ModeEphemeralSequential, 5),
				createTxn("/x/neg", "", proto.ModeEphemeral, -0x7eff_ffff_ffff_fff0),
			},
			after: []*Txn{
				{Op: proto.OpCloseSession, Session: 5},
				{Op: proto.OpCloseSession, Session: -0x7eff_ffff_ffff_fff0},
			},
			check: func(t *testing.T, c *Tree, rs []Result) {
				if got := len(rs[0].Events); got != 6 {
					t.Errorf("closeSession produced %d events, want 6 (3 deletions)", got)
				}
				if c.Get("/e1") != nil || c.Get("/x/e2") != nil || c.Get("/x/q-0000000002") != nil || c.Get("/x/neg") != nil {
					t.Error("ephemerals survived their session")
				}
				if c.Get("/x/e3") == nil || !slices.Equal(c.Ephemerals(6), []string{"/x/e3"}) {
					t.Error("another session's ephemeral was touched")
				}
				if c.Session(5) != nil || c.Session(6) == nil {
					t.Error("session table wrong")
				}
			},
		},
		{
			name: "containers and TTL nodes",
			before: []*Txn{
				{Op: proto.OpCreateContainer, Req: &proto.CreateRequest{Path: "/c", ACL: openACL, Flags: proto.ModeContainer}},
				{Op: proto.OpCreateContainer, Req: &proto.CreateRequest{Path: "/c2", ACL: openACL, Flags: proto.ModeContainer}},
				createTxn("/c/x", "", proto.ModePersistent, 0),
				{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/c/x", Version: -1}},
				ttlTxn("/t", 100, 1000),
				ttlTxn("/t2", 5000, 1000),
				createTxn("/t2/child", "", proto.ModePersistent, 0),
			},
			after: []*Txn{
				{Op: proto.OpDeleteContainer, Time: 1200, Req: &DeleteContainerReq{Path: "/c"}},
				{Op: proto.OpDeleteContainer, Time: 1200, Req: &DeleteContainerReq{Path: "/c2"}},
				{Op: proto.OpDeleteContainer, Time: 1200, Req: &DeleteContainerReq{Path: "/t"}},
				{Op: proto.OpDeleteContainer, Time: 1200, Req: &DeleteContainerReq{Path: "/t2"}},
			},
			check: func(t *testing.T, c *Tree, rs []Result) {
				want := []proto.ErrCode{proto.ErrOk, proto.ErrBadVersion, proto.ErrOk, proto.ErrNotEmpty}
				for i, r := range rs {
					if r.Err != want[i] {
						t.Errorf("deleteContainer %d: %v, want %v", i, r.Err, want[i])
					}
				}
			},
		},
		{
			name: "quota tracking and hard limit",
			before: []*Txn{
				createTxn("/q", "", proto.ModePersistent, 0),
				createTxn(QuotaPath+"/q", "", proto.ModePersistent, 0),
				createTxn(QuotaPath+"/q/"+quotaLimitNode, "count=-1,bytes=-1,countHardLimit=3", proto.ModePersistent, 0),
				createTxn(QuotaPath+"/q/"+quotaStatNode, "", proto.ModePersistent, 0),
				createTxn("/q/1", "abc", proto.ModePersistent, 0),
				createTxn(QuotaPath+"/gone", "", proto.ModePersistent, 0),
				createTxn(QuotaPath+"/gone/"+quotaLimitNode, "count=1", proto.ModePersistent, 0),
				{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: QuotaPath + "/gone/" + quotaLimitNode, Version: -1}},
			},
			after: []*Txn{
				createTxn("/q/2", "de", proto.ModePersistent, 0),
				createTxn("/q/3", "", proto.ModePersistent, 0),
				{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/q/1", Data: []byte("abcdef"), Version: -1}},
			},
			check: func(t *testing.T, c *Tree, rs []Result) {
				if rs[0].Err != proto.ErrOk || rs[1].Err != proto.ErrQuotaExceeded {
					t.Errorf("creates under the quota: %v %v", rs[0].Err, rs[1].Err)
				}
				if got := string(c.Get(QuotaPath + "/q/" + quotaStatNode).Data()); got != "count=3,bytes=8" {
					t.Errorf("stats %q", got)
				}
			},
		},
		{
			name: "ACLs shared, replaced and released",
			before: []*Txn{
				{Op: proto.OpCreate, Auth: digestU1, Req: &proto.CreateRequest{Path: "/a", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "auth"}}}}},
				{Op: proto.OpCreate, Auth: digestU1, Req: &proto.CreateRequest{Path: "/a/b", ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "auth"}}}}},
				createTxn("/r", "", proto.ModePersistent, 0),
				{Op: proto.OpSetACL, Req: &proto.SetACLRequest{Path: "/r", ACL: []proto.ACL{{Perms: proto.PermRead | proto.PermAdmin, ID: proto.Id{Scheme: "world", ID: "anyone"}}}, Version: -1}},
				createTxn("/gone", "", proto.ModePersistent, 0),
				{Op: proto.OpSetACL, Req: &proto.SetACLRequest{Path: "/gone", ACL: []proto.ACL{{Perms: proto.PermDelete, ID: proto.Id{Scheme: "ip", ID: "10.0.0.1"}}}, Version: -1}},
				{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/gone", Version: -1}},
			},
			after: []*Txn{
				{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/a/b", Data: []byte("x"), Version: -1}},
				{Op: proto.OpSetData, Auth: digestU1, Req: &proto.SetDataRequest{Path: "/a/b", Data: []byte("x"), Version: -1}},
				{Op: proto.OpSetACL, Req: &proto.SetACLRequest{Path: "/r", ACL: openACL, Version: 1}},
				{Op: proto.OpSetACL, Auth: digestU1, Req: &proto.SetACLRequest{Path: "/a", ACL: openACL, Version: 0}},
			},
			check: func(t *testing.T, c *Tree, rs []Result) {
				want := []proto.ErrCode{proto.ErrNoAuth, proto.ErrOk, proto.ErrOk, proto.ErrOk}
				for i, r := range rs {
					if r.Err != want[i] {
						t.Errorf("op %d: %v, want %v", i, r.Err, want[i])
					}
				}
			},
		},
		{
			name: "nil and empty data",
			before: []*Txn{
				{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/nil", ACL: openACL}},
				{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/empty", Data: []byte{}, ACL: openACL}},
				{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/", Data: []byte("root data"), Version: -1}},
			},
			check: func(t *testing.T, c *Tree, _ []Result) {
				if c.Get("/nil").Data() != nil || c.Get("/empty").Data() == nil {
					t.Errorf("nil/empty data not kept: %#v %#v", c.Get("/nil").Data(), c.Get("/empty").Data())
				}
			},
		},
		{
			name: "versions and multi",
			before: []*Txn{
				createTxn("/v", "1", proto.ModePersistent, 0),
				{Op: proto.OpSetData, Time: 5, Req: &proto.SetDataRequest{Path: "/v", Data: []byte("2"), Version: -1}},
				{Op: proto.OpSetData, Time: 6, Req: &proto.SetDataRequest{Path: "/v", Data: []byte("3"), Version: 1}},
				{Op: proto.OpMulti, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
					{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m", ACL: openACL}},
					{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/v", Version: 99}},
				}}},
				{Op: proto.OpMulti, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
					{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m", ACL: openACL}},
					{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m/s-", ACL: openACL, Flags: proto.ModePersistentSequential}},
				}}},
			},
			after: []*Txn{
				{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/v", Data: []byte("4"), Version: 1}},
				{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/v", Data: []byte("4"), Version: 2}},
				{Op: proto.OpMulti, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
					{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m/s-", ACL: openACL, Flags: proto.ModePersistentSequential}},
					{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/m/s-0000000000", Version: 0}},
				}}},
			},
			check: func(t *testing.T, c *Tree, rs []Result) {
				if rs[0].Err != proto.ErrBadVersion || rs[1].Err != proto.ErrOk || rs[1].Stat.Version != 3 {
					t.Errorf("setData after restore: %+v %+v", rs[0].OpResult, rs[1].OpResult)
				}
				if rs[2].Multi[0].Path != "/m/s-0000000001" || rs[2].Multi[1].Err != proto.ErrOk {
					t.Errorf("multi after restore: %+v", rs[2].Multi)
				}
			},
		},
		{
			name: "deep path and odd names",
			before: func() []*Txn {
				var txns []*Txn
				p := ""
				for i := 0; i < 200; i++ {
					p += "/d" + strconv.Itoa(i%7)
					txns = append(txns, createTxn(p, strconv.Itoa(i), proto.ModePersistent, 0))
				}
				for _, name := range []string{"/é", "/a b", "/z", "/A", "/a-b", "/a", "/a/-", "/a/0"} {
					txns = append(txns, createTxn(name, "", proto.ModePersistent, 0))
				}
				return txns
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(snapOpts)
			for _, txn := range tc.before {
				a.apply(txn)
			}
			c := restore(t, a.t)
			var results []Result
			for _, txn := range tc.after {
				zxid := a.zxid + 1
				ra := a.apply(txn)
				rc := c.Apply(zxid, txn)
				if !sameResult(ra, rc) {
					t.Fatalf("%v after restore:\n original %+v\n restored %+v", txn.Op, ra, rc)
				}
				ra.Events = slices.Clone(ra.Events)
				results = append(results, ra)
			}
			if d := diffTrees(a.t, c); len(d) > 0 {
				t.Fatalf("trees differ after replay:\n%s", strings.Join(d, "\n"))
			}
			if !bytes.Equal(writeSnap(t, a.t), writeSnap(t, c)) {
				t.Fatal("snapshots differ after replay")
			}
			if tc.check != nil {
				tc.check(t, c, results)
			}
		})
	}
}

// TestSnapshotKeepsNilVersusEmpty checks that nil and empty byte slices
// survive a round trip also where Apply never makes them (a nil password,
// nil root data): clients can tell a null buffer from an empty one.
func TestSnapshotKeepsNilVersusEmpty(t *testing.T) {
	tr := New()
	tr.root.setData(nil)
	tr.sessions[3] = &Session{ID: 3, Timeout: 1}
	tr.sessions[4] = &Session{ID: 4, Timeout: 1, Passwd: []byte{}}
	c := restore(t, tr)
	if c.Get("/").Data() != nil || c.Session(3).Passwd != nil || c.Session(4).Passwd == nil {
		t.Fatalf("nil/empty not kept: %#v %#v %#v", c.Get("/").Data(), c.Session(3).Passwd, c.Session(4).Passwd)
	}
}

// TestWriteSnapshotBrokenTree checks that WriteSnapshot refuses a tree whose
// node count and children sets disagree instead of writing a snapshot that
// would not read back.
func TestWriteSnapshotBrokenTree(t *testing.T) {
	orphan := New() // counts a node no children set reaches
	orphan.count++
	ghost := New() // a child the count does not include
	ghost.count--
	for name, tr := range map[string]*Tree{"orphan": orphan, "ghost": ghost} {
		if err := tr.WriteSnapshot(io.Discard); err == nil {
			t.Errorf("%s: WriteSnapshot succeeded", name)
		}
	}
}

// TestSnapshotRandom applies random transactions (reusing TestRandomOps's
// generator: creates of every mode, setData, setACL, delete, multi,
// sessions, the container/TTL sweep, a quota with a hard limit) and, at
// random steps, snapshots the tree and restores it, from the original or
// from the last restored copy, through readers of various kinds. It checks
// the copy is exact and snapshots to the same bytes, and then applies every
// further transaction to both, requiring identical results and trees.
func TestSnapshotRandom(t *testing.T) {
	seed := *snapSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with go test ./tree -run TestSnapshotRandom -snap.seed=%d)", seed, seed)
	steps := *snapSteps
	if testing.Short() && steps > 500 {
		steps = 500
	}
	a := New()
	a.SetOptions(snapOpts)
	rng := rand.New(rand.NewPCG(seed, seed^0xc0ffee))
	g := &randGen{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), tree: a, now: 1_000_000, auth: map[int64][]proto.Id{
		1: {{Scheme: "digest", ID: acl.DigestID("u1", "p")}},
		2: {{Scheme: "digest", ID: acl.DigestID("u2", "p")}, {Scheme: "ip", ID: "10.0.0.2"}},
	}}
	var zxid int64
	var c *Tree // the restored copy; nil before the first snapshot
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d zxid %d: %s", seed, zxid, fmt.Sprintf(format, args...))
	}
	apply := func(txn *Txn) Result {
		zxid++
		ra := a.Apply(zxid, txn)
		if c != nil {
			rc := c.Apply(zxid, txn)
			if !sameResult(ra, rc) {
				fail("%v gives different results after restore:\n original %+v\n restored %+v", txn.Op, ra, rc)
			}
		}
		return ra
	}
	for _, p := range []struct{ path, data string }{
		{"/a", ""},
		{QuotaPath + "/a", ""},
		{QuotaPath + "/a/" + quotaLimitNode, "count=4,bytes=-1,countHardLimit=8"},
		{QuotaPath + "/a/" + quotaStatNode, "count=0,bytes=0"},
	} {
		if r := apply(&Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: p.path, Data: []byte(p.data), ACL: openACL}}); r.Err != proto.ErrOk {
			fail("setup create %s: %v", p.path, r.Err)
		}
	}
	snaps, maxNodes := 0, 0
	next := 0
	for i := 0; i < steps; i++ {
		if i == next {
			from := a
			if c != nil && rng.IntN(2) == 0 {
				from = c
			}
			b := writeSnap(t, from)
			var r io.Reader = bytes.NewReader(b)
			switch rng.IntN(4) {
			case 0:
				r = iotest.OneByteReader(r)
			case 1:
				r = iotest.HalfReader(r)
			case 2:
				r = iotest.DataErrReader(r)
			}
			nc, err := ReadSnapshot(r, ReadOptions{})
			if err != nil {
				fail("ReadSnapshot: %v", err)
			}
			nc.SetOptions(snapOpts)
			if d := diffTrees(a, nc); len(d) > 0 {
				fail("restored tree differs:\n%s", strings.Join(d, "\n"))
			}
			if bad := checkInvariants(nc); len(bad) > 0 {
				fail("restored tree breaks invariants:\n%s", strings.Join(bad, "\n"))
			}
			if b2 := writeSnap(t, nc); !bytes.Equal(b, b2) {
				fail("snapshot of the restored tree differs")
			}
			c = nc
			snaps++
			next = i + 1 + rng.IntN(60)
		}
		apply(g.next())
		if d := diffTrees(a, c); len(d) > 0 {
			fail("trees diverged after replay:\n%s", strings.Join(d, "\n"))
		}
		maxNodes = max(maxNodes, a.NodeCount())
	}
	if testing.Verbose() {
		t.Logf("%d snapshots, up to %d nodes, %d sessions at the end", snaps, maxNodes, len(a.sessions))
	}
}

// --- corruption ---

// sampleSnapshotTree is a small tree with every kind of node, two ACLs, a
// quota and sessions.
func sampleSnapshotTree(tb testing.TB) *Tree {
	a := newApplier(snapOpts)
	for _, txn := range []*Txn{
		sessionTxn(5),
		sessionTxn(9),
		createTxn("/a", "data", proto.ModePersistent, 0),
		createTxn("/a/s-", "", proto.ModePersistentSequential, 0),
		createTxn("/a/e", "", proto.ModeEphemeral, 5),
		{Op: proto.OpCreateContainer, Req: &proto.CreateRequest{Path: "/c", ACL: openACL, Flags: proto.ModeContainer}},
		ttlTxn("/t", 10, 0),
		{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/r", ACL: []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}}},
		createTxn(QuotaPath+"/a", "", proto.ModePersistent, 0),
		createTxn(QuotaPath+"/a/"+quotaLimitNode, "count=10", proto.ModePersistent, 0),
	} {
		a.mustOK(tb, txn)
	}
	return a.t
}

func wantBad(tb testing.TB, b []byte, opts ReadOptions) error {
	tb.Helper()
	tr, err := ReadSnapshot(bytes.NewReader(b), opts)
	if err == nil || !errors.Is(err, ErrBadSnapshot) || tr != nil {
		tb.Fatalf("ReadSnapshot = %v, %v; want an ErrBadSnapshot", tr != nil, err)
	}
	return err
}

func TestSnapshotTruncated(t *testing.T) {
	b := writeSnap(t, sampleSnapshotTree(t))
	for n := 0; n < len(b); n++ {
		wantBad(t, b[:n], ReadOptions{})
	}
	err := wantBad(t, b[:len(b)/2], ReadOptions{})
	if !strings.Contains(err.Error(), "truncated") {
		t.Errorf("error %q does not say truncated", err)
	}
	wantBad(t, append(slices.Clone(b), 0), ReadOptions{}) // data after the trailer
}

func TestSnapshotBitFlips(t *testing.T) {
	b := writeSnap(t, sampleSnapshotTree(t))
	for i := range b {
		for _, bit := range []byte{0x01, 0x80} {
			c := slices.Clone(b)
			c[i] ^= bit
			wantBad(t, c, ReadOptions{})
		}
	}
	// Random multi-byte damage.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		c := slices.Clone(b)
		for range 1 + rng.IntN(4) {
			c[rng.IntN(len(c))] = byte(rng.Uint32())
		}
		if !bytes.Equal(c, b) {
			wantBad(t, c, ReadOptions{})
		}
	}
}

// rawSnap is a snapshot split by a parser written from the format
// description alone, for tests that forge snapshots with a valid CRC.
type rawSnap struct {
	head []byte // magic, version, lastZxid, counts
	recs []rawRec
}

type rawRec struct {
	kind byte
	body []byte
}

func parseRawSnap(tb testing.TB, b []byte) rawSnap {
	tb.Helper()
	if got, want := binary.BigEndian.Uint32(b[len(b)-4:]), crc32.Checksum(b[:len(b)-4], crc32.MakeTable(crc32.Castagnoli)); got != want {
		tb.Fatalf("trailer %08x, want CRC-32C %08x", got, want)
	}
	s := rawSnap{head: slices.Clone(b[:28])}
	rest := b[28 : len(b)-4]
	for len(rest) > 0 {
		n := binary.BigEndian.Uint32(rest[1:5])
		s.recs = append(s.recs, rawRec{kind: rest[0], body: slices.Clone(rest[5 : 5+n])})
		rest = rest[5+n:]
	}
	return s
}

func (s rawSnap) bytes() []byte {
	out := slices.Clone(s.head)
	for _, r := range s.recs {
		out = append(out, r.kind)
		out = binary.BigEndian.AppendUint32(out, uint32(len(r.body)))
		out = append(out, r.body...)
	}
	return withCRC(out)
}

func withCRC(b []byte) []byte {
	return binary.BigEndian.AppendUint32(slices.Clone(b), crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func (s rawSnap) clone() rawSnap {
	c := rawSnap{head: slices.Clone(s.head)}
	for _, r := range s.recs {
		c.recs = append(c.recs, rawRec{r.kind, slices.Clone(r.body)})
	}
	return c
}

// find returns the index of the node record for path.
func (s rawSnap) find(tb testing.TB, path string) int {
	for i, r := range s.recs {
		if r.kind == 'N' && decodeRawNode(r.body).path == path {
			return i
		}
	}
	tb.Fatalf("no node %s", path)
	return -1
}

type rawNode struct {
	path string
	data []byte
	acl  int32
	stat proto.Stat
}

func decodeRawNode(b []byte) rawNode {
	d := jute.NewDecoder(b)
	n := rawNode{path: d.ReadString(), data: d.ReadBuffer(), acl: d.ReadInt()}
	n.stat.Decode(d)
	return n
}

func (n rawNode) encode() []byte {
	var e jute.Encoder
	e.WriteString(n.path)
	e.WriteBuffer(n.data)
	e.WriteInt(n.acl)
	n.stat.Encode(&e)
	return e.Bytes()
}

func (s rawSnap) editNode(tb testing.TB, path string, f func(n *rawNode)) rawSnap {
	c := s.clone()
	i := c.find(tb, path)
	n := decodeRawNode(c.recs[i].body)
	f(&n)
	c.recs[i].body = n.encode()
	return c
}

func (s rawSnap) setCounts(nodes, sessions int32) rawSnap {
	c := s.clone()
	binary.BigEndian.PutUint32(c.head[20:], uint32(nodes))
	binary.BigEndian.PutUint32(c.head[24:], uint32(sessions))
	return c
}

func (s rawSnap) count(kind byte) int32 {
	n := int32(0)
	for _, r := range s.recs {
		if r.kind == kind {
			n++
		}
	}
	return n
}

// TestSnapshotForged feeds snapshots with a valid CRC but content that
// WriteSnapshot never produces and Apply could never have built.
func TestSnapshotForged(t *testing.T) {
	base := parseRawSnap(t, writeSnap(t, sampleSnapshotTree(t)))
	if !bytes.Equal(base.bytes(), writeSnap(t, sampleSnapshotTree(t))) {
		t.Fatal("rawSnap does not re-encode exactly")
	}
	nodeRec := func(n rawNode) rawRec { return rawRec{'N', n.encode()} }
	sessionRec := func(id int64) rawRec {
		var e jute.Encoder
		e.WriteLong(id)
		e.WriteInt(1)
		e.WriteBuffer([]byte("pw"))
		e.WriteLong(0) // claim
		return rawRec{'S', e.Bytes()}
	}
	first := func(kind byte) int {
		for i, r := range base.recs {
			if r.kind == kind {
				return i
			}
		}
		return -1
	}
	firstSession := first('S')
	insert := func(at int, recs ...rawRec) rawSnap {
		c := base.clone()
		c.recs = slices.Insert(c.recs, at, recs...)
		return c
	}
	remove := func(at int) rawSnap {
		c := base.clone()
		c.recs = slices.Delete(c.recs, at, at+1)
		return c
	}
	nodes, sessions := base.count('N'), base.count('S')
	// A forged node appended after the last node, counts adjusted.
	withNode := func(n rawNode) rawSnap {
		return insert(firstSession, nodeRec(n)).setCounts(nodes+1, sessions)
	}
	// "/a" gains a child: its numChildren must say so.
	withChildOfA := func(n rawNode) rawSnap {
		s := withNode(n)
		return s.editNode(t, "/a", func(a *rawNode) { a.stat.NumChildren++ })
	}
	// control: withChildOfA builds a valid snapshot.
	if _, err := ReadSnapshot(bytes.NewReader(withChildOfA(rawNode{path: "/a/new"}).bytes()), ReadOptions{}); err != nil {
		t.Fatalf("control snapshot rejected: %v", err)
	}
	bigPath := "/" + strings.Repeat("p", 100)
	tests := []struct {
		name string
		snap rawSnap
		raw  []byte // used instead of snap when set
		opts ReadOptions
		want string // part of the error
	}{
		{name: "bad magic", raw: append([]byte("ZKGOSNAQ"), base.bytes()[8:]...), want: "magic"},
		{name: "version 0", snap: func() rawSnap { c := base.clone(); c.head[11] = 0; return c }(), want: "version"},
		{name: "version 3", snap: func() rawSnap { c := base.clone(); c.head[11] = 3; return c }(), want: "version"},
		{name: "negative lastZxid", snap: func() rawSnap { c := base.clone(); c.head[12] = 0x80; return c }(), want: "lastZxid"},
		{name: "no nodes", snap: base.setCounts(0, sessions), want: "node count"},
		{name: "node count over MaxNodes", snap: base, opts: ReadOptions{MaxNodes: int(nodes) - 1}, want: "node count"},
		{name: "negative session count", snap: base.setCounts(nodes, -1), want: "session count"},
		{name: "session count over MaxSessions", snap: base, opts: ReadOptions{MaxSessions: 1}, want: "session count"},
		{name: "fewer nodes than counted", snap: base.setCounts(nodes+1, sessions), want: "where node"},
		{name: "more nodes than counted", snap: base.setCounts(nodes-1, sessions), want: "where session"},
		{name: "fewer sessions than counted", snap: base.setCounts(nodes, sessions+1), want: "truncated"},
		{name: "more sessions than counted", snap: base.setCounts(nodes, sessions-1), want: "CRC"},
		{name: "unknown record kind", snap: insert(firstSession, rawRec{'X', nil}), want: "unknown record kind"},
		{name: "root not first", snap: func() rawSnap {
			c := base.clone()
			c.recs[1], c.recs[2] = c.recs[2], c.recs[1] // [A, N /, N /a...] -> [A, N /a, N /]
			return c
		}(), want: "want the root"},
		{name: "root owned", snap: base.editNode(t, "/", func(n *rawNode) { n.stat.EphemeralOwner = 5 }), want: "want the root"},
		{name: "orphan", snap: withNode(rawNode{path: "/nope/x"}), want: "parent"},
		{name: "duplicate", snap: withChildOfA(rawNode{path: "/a/e"}), want: "duplicate"},
		{name: "root twice", snap: withNode(rawNode{path: "/"}), want: "bad path"},
		{name: "trailing slash", snap: withChildOfA(rawNode{path: "/a/"}), want: "bad path"},
		{name: "dot segment", snap: withChildOfA(rawNode{path: "/a/."}), want: "bad path"},
		{name: "relative path", snap: withNode(rawNode{path: "a"}), want: "bad path"},
		{name: "NUL in path", snap: withChildOfA(rawNode{path: "/a/x\x00"}), want: "bad path"},
		{name: "child of an ephemeral", snap: withNode(rawNode{path: "/a/e/x"}).editNode(t, "/a/e", func(n *rawNode) { n.stat.NumChildren = 1 }), want: "ephemeral"},
		{name: "dataLength mismatch", snap: base.editNode(t, "/a", func(n *rawNode) { n.stat.DataLength++ }), want: "dataLength"},
		{name: "numChildren mismatch", snap: base.editNode(t, "/a", func(n *rawNode) { n.stat.NumChildren++ }), want: "numChildren"},
		{name: "ACL index out of range", snap: base.editNode(t, "/a", func(n *rawNode) { n.acl = 99 }), want: "ACL index"},
		{name: "negative ACL index", snap: base.editNode(t, "/a", func(n *rawNode) { n.acl = -1 }), want: "ACL index"},
		{name: "ACL record not used next", snap: insert(first('N')+1, base.recs[first('A')]), want: "precedes"},
		{name: "ACL record after the nodes", snap: insert(firstSession, base.recs[first('A')]), want: "where session"},
		{name: "two ACL records in a row", snap: insert(0, base.recs[first('A')]), want: "not used"},
		{name: "null ACL list", snap: func() rawSnap { c := base.clone(); c.recs[0].body = []byte{0xff, 0xff, 0xff, 0xff}; return c }(), want: "null list"},
		{name: "ACL vector count huge", snap: func() rawSnap { c := base.clone(); c.recs[0].body[0] = 0x7f; return c }(), want: "bad length"},
		{name: "path length huge", snap: func() rawSnap {
			c := base.clone()
			c.recs[1].body[0] = 0x7f
			return c
		}(), want: "bad length"},
		{name: "data length huge", snap: func() rawSnap {
			c := base.clone()
			i := c.find(t, "/a")
			binary.BigEndian.PutUint32(c.recs[i].body[4+2:], 0x7ffffff0)
			return c
		}(), want: "bad length"},
		{name: "node record with extra bytes", snap: func() rawSnap {
			c := base.clone()
			c.recs[1].body = append(c.recs[1].body, 0)
			return c
		}(), want: "trailing"},
		{name: "node record short", snap: func() rawSnap {
			c := base.clone()
			c.recs[1].body = c.recs[1].body[:len(c.recs[1].body)-1]
			return c
		}(), want: "short"},
		{name: "path over MaxBuffer", snap: withNode(rawNode{path: bigPath}), opts: ReadOptions{MaxBuffer: 64}, want: "over the limit"},
		{name: "data over MaxBuffer", snap: withNode(rawNode{path: "/big", data: make([]byte, 65), stat: proto.Stat{DataLength: 65}}), opts: ReadOptions{MaxBuffer: 64}, want: "over the limit"},
		{name: "record over MaxBuffer", snap: withNode(rawNode{path: "/big", data: make([]byte, 300), stat: proto.Stat{DataLength: 300}}), opts: ReadOptions{MaxBuffer: 64}, want: "limit"},
		{name: "ephemeral without session", snap: remove(firstSession).setCounts(nodes, sessions-1), want: "not in the snapshot"},
		{name: "sessions out of order", snap: func() rawSnap {
			c := base.clone()
			c.recs[firstSession], c.recs[firstSession+1] = c.recs[firstSession+1], c.recs[firstSession]
			return c
		}(), want: "ids must increase"},
		{name: "duplicate session", snap: insert(firstSession, sessionRec(5)).setCounts(nodes, sessions+1), want: "ids must increase"},
		{name: "session record with extra bytes", snap: func() rawSnap {
			c := base.clone()
			c.recs[firstSession].body = append(c.recs[firstSession].body, 1)
			return c
		}(), want: "trailing"},
		{name: "system node missing", snap: func() rawSnap {
			c := base.clone()
			i := c.find(t, ConfigPath)
			if c.recs[i-1].kind != 'N' {
				t.Fatal("sample tree changed: /zookeeper/config's ACL is defined right before it")
			}
			c.recs = slices.Delete(c.recs, i, i+1)
			c = c.editNode(t, ZookeeperPath, func(n *rawNode) { n.stat.NumChildren-- })
			return c.setCounts(nodes-1, sessions)
		}(), want: "system node"},
		{name: "negative record length", raw: func() []byte {
			b := base.bytes()
			binary.BigEndian.PutUint32(b[29:], 0xffffffff)
			return b
		}(), want: "record"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.raw
			if b == nil {
				b = tc.snap.bytes()
			}
			err := wantBad(t, b, tc.opts)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// allocatedBy returns the bytes allocated while f runs.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestSnapshotHugeLengths checks that forged counts and lengths are refused
// or cost memory in proportion to the input, never to the claim.
func TestSnapshotHugeLengths(t *testing.T) {
	base := parseRawSnap(t, writeSnap(t, sampleSnapshotTree(t)))
	huge := func(b []byte, off int, v uint32) []byte {
		b = slices.Clone(b)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	snap := base.bytes()
	firstRec := 28
	tests := []struct {
		name string
		b    []byte
		opts ReadOptions
	}{
		{"node count", huge(snap, 20, 0x7fffffff), ReadOptions{}},
		{"node count allowed", huge(snap, 20, 0x7fffffff), ReadOptions{MaxNodes: math.MaxInt32, MaxSessions: math.MaxInt32}},
		{"session count allowed", huge(snap, 24, 0x7fffffff), ReadOptions{MaxNodes: math.MaxInt32, MaxSessions: math.MaxInt32}},
		{"record length", huge(snap, firstRec+1, 0x7fffffff), ReadOptions{}},
		{"record length allowed", huge(snap, firstRec+1, 0x7fffffff), ReadOptions{MaxBuffer: math.MaxInt}},
		{"record length allowed, header only", huge(snap[:firstRec+5], firstRec+1, 0x7fffffff), ReadOptions{MaxBuffer: math.MaxInt}},
		{"vector length", huge(snap, firstRec+5, 0x7fffffff), ReadOptions{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range [][]byte{tc.b, withCRC(tc.b[:len(tc.b)-4])} {
				var err error
				n := allocatedBy(func() { _, err = ReadSnapshot(bytes.NewReader(b), tc.opts) })
				if !errors.Is(err, ErrBadSnapshot) {
					t.Fatalf("err = %v", err)
				}
				if n > 2<<20 {
					t.Errorf("%d bytes allocated for a %d-byte input (%v)", n, len(b), err)
				}
			}
		})
	}
}

type errReader struct {
	r   io.Reader
	n   int
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, e.err
	}
	if len(p) > e.n {
		p = p[:e.n]
	}
	n, err := e.r.Read(p)
	e.n -= n
	return n, err
}

type errWriter struct {
	n   int
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if len(p) > e.n {
		n := e.n
		e.n = 0
		return n, e.err
	}
	e.n -= len(p)
	return len(p), nil
}

// TestSnapshotIOErrors checks that errors from the reader or writer are
// returned as such, not as ErrBadSnapshot.
func TestSnapshotIOErrors(t *testing.T) {
	tr := sampleSnapshotTree(t)
	for i := 0; i < 3000; i++ {
		tr.Apply(tr.LastZxid()+1, createTxn("/a/n"+strconv.Itoa(i), strings.Repeat("x", 50), proto.ModePersistent, 0))
	}
	b := writeSnap(t, tr)
	boom := errors.New("boom")
	for _, n := range []int{0, 10, 100, len(b) / 2, len(b) - 1} {
		_, err := ReadSnapshot(&errReader{r: bytes.NewReader(b), n: n, err: boom}, ReadOptions{})
		if !errors.Is(err, boom) || errors.Is(err, ErrBadSnapshot) {
			t.Errorf("read error after %d bytes: %v", n, err)
		}
		if err := tr.WriteSnapshot(&errWriter{n: n, err: boom}); !errors.Is(err, boom) {
			t.Errorf("write error after %d bytes: %v", n, err)
		}
	}
	if err := tr.WriteSnapshot(&errWriter{n: len(b), err: boom}); err != nil {
		t.Errorf("exact-size writer: %v", err)
	}
}

// --- fuzzing ---

// FuzzReadSnapshot reads arbitrary bytes as a snapshot, as they are and with
// their last four bytes replaced by the right CRC (so that mutations reach
// the record checks). Errors must wrap ErrBadSnapshot; a snapshot that is
// accepted must satisfy the tree's invariants, snapshot to bytes that read
// back to the same tree and bytes, and take further transactions without
// breaking the invariants.
// The seed corpus is testdata/fuzz/FuzzReadSnapshot (see
// TestWriteSnapshotFuzzSeeds).
func FuzzReadSnapshot(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		inputs := [][]byte{b}
		if len(b) >= 4 {
			inputs = append(inputs, withCRC(b[:len(b)-4]))
		}
		for _, in := range inputs {
			tr, err := ReadSnapshot(bytes.NewReader(in), ReadOptions{MaxBuffer: 1 << 16})
			if err != nil {
				if tr != nil || !errors.Is(err, ErrBadSnapshot) {
					t.Fatalf("ReadSnapshot = %v, %v", tr != nil, err)
				}
				continue
			}
			tr.SetOptions(snapOpts)
			if bad := checkInvariants(tr); len(bad) > 0 {
				t.Fatalf("accepted snapshot breaks invariants: %v", bad)
			}
			out := writeSnap(t, tr)
			again, err := ReadSnapshot(bytes.NewReader(out), ReadOptions{MaxBuffer: 1 << 16})
			if err != nil {
				t.Fatalf("snapshot of an accepted snapshot is refused: %v", err)
			}
			again.SetOptions(snapOpts)
			if d := diffTrees(tr, again); len(d) > 0 {
				t.Fatalf("re-read tree differs: %v", d)
			}
			if out2 := writeSnap(t, again); !bytes.Equal(out, out2) {
				t.Fatal("snapshot is not canonical after one round")
			}
			if tr.lastZxid > math.MaxInt64-100 {
				continue
			}
			zxid := tr.lastZxid
			apply := func(txn *Txn) {
				zxid++
				tr.Apply(zxid, txn)
			}
			for _, s := range tr.Sessions() {
				apply(&Txn{Op: proto.OpCloseSession, Session: s.ID})
			}
			for _, p := range tr.ReapCandidates(math.MaxInt64 / 2) {
				apply(&Txn{Op: proto.OpDeleteContainer, Time: math.MaxInt64 / 2, Req: &DeleteContainerReq{Path: p}})
			}
			apply(createTxn("/", "x", proto.ModePersistentSequential, 0))
			apply(createTxn(QuotaPath+"/q", "x", proto.ModePersistent, 0))
			if bad := checkInvariants(tr); len(bad) > 0 {
				t.Fatalf("invariants broken after applying to a restored tree: %v", bad)
			}
		}
	})
}

// TestWriteSnapshotFuzzSeeds regenerates testdata/fuzz/FuzzReadSnapshot when
// ZKGO_WRITE_FUZZ_SEEDS is set.
func TestWriteSnapshotFuzzSeeds(t *testing.T) {
	if os.Getenv("ZKGO_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set ZKGO_WRITE_FUZZ_SEEDS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReadSnapshot")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sample := writeSnap(t, sampleSnapshotTree(t))
	// A random tree of a few dozen nodes.
	a := New()
	a.SetOptions(snapOpts)
	g := &randGen{rng: rand.New(rand.NewPCG(7, 7)), tree: a, now: 1_000_000}
	for i := 0; i < 300; i++ {
		a.Apply(int64(i+1), g.next())
	}
	seeds := map[string][]byte{
		"new":       writeSnap(t, New()),
		"sample":    sample,
		"random":    writeSnap(t, a),
		"truncated": sample[:len(sample)/2],
		"flipped":   func() []byte { b := slices.Clone(sample); b[100] ^= 4; return b }(),
		"garbage":   []byte("ZKGOSNAP\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\x7f\xff\xff\xff\x00\x00\x00\x00N\x7f\xff\xff\xff"),
	}
	for name, b := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// --- benchmark ---

// snapBenchTree builds a tree of n nodes with 100-byte data: 100 parents
// with n/100 children each, a third of them ephemeral.
func snapBenchTree(tb testing.TB, n int) *Tree {
	tr := New()
	var zxid int64
	apply := func(txn *Txn) {
		zxid++
		if r := tr.Apply(zxid, txn); r.Err != proto.ErrOk {
			tb.Fatalf("%v: %v", txn.Op, r.Err)
		}
	}
	apply(sessionTxn(1))
	data := make([]byte, 100)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	for d := 0; d < 100; d++ {
		apply(createTxn("/d"+strconv.Itoa(d), "", proto.ModePersistent, 0))
	}
	for i := 0; tr.NodeCount()-1 < n; i++ {
		mode := proto.ModePersistent
		if i%3 == 0 {
			mode = proto.ModeEphemeral
		}
		apply(&Txn{Op: proto.OpCreate, Session: 1, Time: int64(i), Req: &proto.CreateRequest{
			Path: "/d" + strconv.Itoa(i%100) + "/node-" + strconv.Itoa(i), Data: data, ACL: openACL, Flags: mode}})
	}
	return tr
}

// BenchmarkSnapshot writes and reads a snapshot of a 100k-node tree with
// 100-byte data and reports ns/node and bytes/node.
func BenchmarkSnapshot(b *testing.B) {
	const n = 100_000
	tr := snapBenchTree(b, n)
	snap := writeSnap(b, tr)
	nodes := float64(tr.NodeCount() - 1)
	b.Run("write", func(b *testing.B) {
		var buf bytes.Buffer
		buf.Grow(len(snap))
		b.ReportAllocs()
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			buf.Reset()
			if err := tr.WriteSnapshot(&buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodes, "ns/node")
		b.ReportMetric(float64(len(snap))/nodes, "bytes/node")
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			if _, err := ReadSnapshot(bytes.NewReader(snap), ReadOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodes, "ns/node")
		b.ReportMetric(float64(len(snap))/nodes, "bytes/node")
	})
}
