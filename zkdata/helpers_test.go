package zkdata

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

var (
	worldAll  = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	digestACL = []proto.ACL{
		{Perms: proto.PermAll, ID: proto.Id{Scheme: "digest", ID: "u:mb4TgWmdu6O4YMtLk/RxGgo2P1Q="}},
		{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}},
	}
)

// testTree builds a zkgo tree with every kind of node, through Apply.
func testTree(t testing.TB) *tree.Tree {
	t.Helper()
	tr := tree.New()
	tr.SetOptions(tree.Options{ExtendedTypes: true})
	zxid := int64(0x100000000)
	now := int64(1700000000000)
	apply := func(sess int64, op proto.OpCode, req proto.Record) {
		t.Helper()
		zxid++
		now += 7
		res := tr.Apply(zxid, &tree.Txn{Op: op, Session: sess, Time: now, Req: req})
		if res.Err != proto.ErrOk {
			t.Fatalf("apply %v %+v: %v", op, req, res.Err)
		}
	}
	const s1, s2 = 0x100000abc0000, 0x100000abc0001
	apply(s1, proto.OpCreateSession, &tree.CreateSessionReq{Timeout: 30000, Passwd: SessionPassword(s1)})
	apply(s2, proto.OpCreateSession, &tree.CreateSessionReq{Timeout: 4000, Passwd: SessionPassword(s2)})
	create := func(sess int64, p string, data []byte, acl []proto.ACL, mode proto.CreateMode) {
		apply(sess, proto.OpCreate, &proto.CreateRequest{Path: p, Data: data, ACL: acl, Flags: mode})
	}
	create(s1, "/app", []byte("app data"), worldAll, proto.ModePersistent)
	create(s1, "/app/bin", []byte{0, 1, 2, 0xff, 0xfe, '\n'}, digestACL, proto.ModePersistent)
	create(s1, "/app/null", nil, worldAll, proto.ModePersistent)
	create(s1, "/app/empty", []byte{}, digestACL, proto.ModePersistent)
	for range 4 {
		create(s1, "/app/seq-", []byte("s"), worldAll, proto.ModePersistentSequential)
	}
	apply(s1, proto.OpDelete, &proto.DeleteRequest{Path: "/app/seq-0000000004", Version: -1})
	create(s1, "/app/eph", []byte("e"), worldAll, proto.ModeEphemeral)
	create(s2, "/app/eph2-", nil, worldAll, proto.ModeEphemeralSequential)
	apply(s1, proto.OpCreateContainer, &proto.CreateRequest{Path: "/box", Data: []byte("c"), ACL: worldAll, Flags: proto.ModeContainer})
	create(s1, "/box/item", nil, worldAll, proto.ModePersistent)
	apply(s1, proto.OpCreateTTL, &proto.CreateTTLRequest{Path: "/ttl", Data: []byte("t"), ACL: worldAll, Flags: proto.ModePersistentWithTTL, TTL: 60000})
	apply(s1, proto.OpSetData, &proto.SetDataRequest{Path: "/app", Data: []byte("v2"), Version: -1})
	apply(s1, proto.OpSetData, &proto.SetDataRequest{Path: "/app", Data: []byte("v3"), Version: 1})
	apply(s1, proto.OpSetACL, &proto.SetACLRequest{Path: "/app/null", ACL: digestACL, Version: -1})
	// A quota on /app, as zkCli's setquota writes it.
	create(s1, "/zookeeper/quota/app", nil, worldAll, proto.ModePersistent)
	create(s1, "/zookeeper/quota/app/zookeeper_limits", []byte("count=100,bytes=-1"), worldAll, proto.ModePersistent)
	create(s1, "/zookeeper/quota/app/zookeeper_stats", []byte("count=0,bytes=0"), worldAll, proto.ModePersistent)
	create(s1, "/app/after-quota", []byte("12345"), worldAll, proto.ModePersistent)
	return tr
}

// zkgoBytes is the tree's own snapshot: equal bytes, equal trees.
func zkgoBytes(t testing.TB, tr *tree.Tree) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// logWriter builds a ZooKeeper transaction log by hand.
type logWriter struct {
	buf bytes.Buffer
}

func newLog() *logWriter {
	w := &logWriter{}
	var e jute.Encoder
	e.WriteInt(logMagic)
	e.WriteInt(fileVersion)
	e.WriteLong(0)
	w.buf.Write(e.Bytes())
	return w
}

// entry encodes a TxnHeader and a body.
func entry(session int64, zxid, time int64, typ proto.OpCode, body func(e *jute.Encoder)) []byte {
	var e jute.Encoder
	e.WriteLong(session)
	e.WriteInt(1)
	e.WriteLong(zxid)
	e.WriteLong(time)
	e.WriteInt(int32(typ))
	if body != nil {
		body(&e)
	}
	return e.Bytes()
}

// add appends a record and returns its offset.
func (w *logWriter) add(b []byte) int64 {
	off := int64(w.buf.Len())
	var h [12]byte
	binary.BigEndian.PutUint64(h[:], uint64(adler32.Checksum(b)))
	binary.BigEndian.PutUint32(h[8:], uint32(len(b)))
	w.buf.Write(h[:])
	w.buf.Write(b)
	w.buf.WriteByte('B')
	return off
}

func (w *logWriter) pad(n int) { w.buf.Write(make([]byte, n)) }

func createBody(path string, data []byte, acl []proto.ACL, eph bool, parentCVersion int32) func(*jute.Encoder) {
	return func(e *jute.Encoder) {
		e.WriteString(path)
		e.WriteBuffer(data)
		e.WriteVectorLen(len(acl))
		for i := range acl {
			acl[i].Encode(e)
		}
		e.WriteBool(eph)
		e.WriteInt(parentCVersion)
	}
}

func pathBody(path string) func(*jute.Encoder) {
	return func(e *jute.Encoder) { e.WriteString(path) }
}

func setDataBody(path string, data []byte, version int32) func(*jute.Encoder) {
	return func(e *jute.Encoder) {
		e.WriteString(path)
		e.WriteBuffer(data)
		e.WriteInt(version)
	}
}

// writeDir lays out a data directory: files by name in version-2.
func writeDir(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	v2 := filepath.Join(dir, versionDir)
	if err := os.MkdirAll(v2, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(v2, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapBytes writes the image as a plain ZooKeeper snapshot.
func snapBytes(t testing.TB, im *Image, opts WriteOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := im.WriteSnapshot(&b, opts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
