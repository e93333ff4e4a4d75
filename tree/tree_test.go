package tree

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/zkgo/zkgo/proto"
)

// applier applies transactions with increasing zxids.
type applier struct {
	t    *Tree
	zxid int64
}

func newApplier(o Options) *applier {
	t := New()
	t.SetOptions(o)
	return &applier{t: t}
}

func (a *applier) apply(txn *Txn) Result {
	a.zxid++
	return a.t.Apply(a.zxid, txn)
}

func (a *applier) mustOK(tb testing.TB, txn *Txn) Result {
	tb.Helper()
	r := a.apply(txn)
	if r.Err != proto.ErrOk {
		tb.Fatalf("%v: %v", txn.Op, r.Err)
	}
	for _, m := range r.Multi {
		if m.Err != proto.ErrOk {
			tb.Fatalf("multi: %+v", r.Multi)
		}
	}
	return r
}

func createTxn(path string, data string, mode proto.CreateMode, session int64) *Txn {
	return &Txn{Op: proto.OpCreate, Session: session, Req: &proto.CreateRequest{Path: path, Data: []byte(data), ACL: openACL, Flags: mode}}
}

func TestNew(t *testing.T) {
	tr := New()
	if tr.LastZxid() != 0 || tr.NodeCount() != 5 {
		t.Fatalf("lastZxid=%d nodes=%d", tr.LastZxid(), tr.NodeCount())
	}
	for _, p := range []string{"/", ZookeeperPath, QuotaPath, ConfigPath} {
		n := tr.Get(p)
		if n == nil {
			t.Fatalf("%s missing", p)
		}
		if len(n.Data()) != 0 {
			t.Fatalf("%s has data %q", p, n.Data())
		}
	}
	if tr.Get("") != tr.Get("/") {
		t.Fatal(`Get("") is not the root (ZooKeeper keeps the root under "" too)`)
	}
	if got := tr.Get(ConfigPath).ACL(); !reflect.DeepEqual(got, []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}) {
		t.Fatalf("config ACL %v", got)
	}
	if got := tr.Get("/").Children(); !reflect.DeepEqual(got, []string{"zookeeper"}) {
		t.Fatalf("root children %v", got)
	}
	if bad := checkInvariants(tr); len(bad) > 0 {
		t.Fatal(bad)
	}
}

func TestApplyRejectsOldZxid(t *testing.T) {
	tr := New()
	tr.Apply(5, createTxn("/a", "", proto.ModePersistent, 0))
	for _, z := range []int64{5, 4, 0} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Apply(%d) after 5 did not panic", z)
				}
			}()
			tr.Apply(z, createTxn("/b", "", proto.ModePersistent, 0))
		}()
	}
	if tr.Get("/b") != nil || tr.LastZxid() != 5 {
		t.Fatal("rejected txn had an effect")
	}
	// A failed transaction still consumes its zxid.
	if r := tr.Apply(6, createTxn("/a", "", proto.ModePersistent, 0)); r.Err != proto.ErrNodeExists || tr.LastZxid() != 6 {
		t.Fatalf("err=%v lastZxid=%d", r.Err, tr.LastZxid())
	}
}

// aliasString returns a string sharing b's memory, as the aliasing decoder
// produces for requests read from a network buffer.
func aliasString(b []byte) string { return unsafe.String(&b[0], len(b)) }

func TestRequestBuffersNotRetained(t *testing.T) {
	a := newApplier(Options{})
	pathBuf := []byte("/node")
	dataBuf := []byte("data")
	schemeBuf, idBuf := []byte("world"), []byte("anyone")
	pwBuf := []byte("secret")
	a.mustOK(t, &Txn{Op: proto.OpCreateSession, Session: 1, Req: &CreateSessionReq{Timeout: 10, Passwd: pwBuf}})
	a.mustOK(t, &Txn{Op: proto.OpCreate, Session: 1, Req: &proto.CreateRequest{
		Path: aliasString(pathBuf), Data: dataBuf,
		ACL: []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: aliasString(schemeBuf), ID: aliasString(idBuf)}}},
	}})
	setBuf := []byte("/node")
	newData := []byte("new!")
	a.mustOK(t, &Txn{Op: proto.OpSetData, Session: 1, Req: &proto.SetDataRequest{Path: aliasString(setBuf), Data: newData, Version: -1}})
	for _, b := range [][]byte{pathBuf, dataBuf, schemeBuf, idBuf, pwBuf, setBuf, newData} {
		for i := range b {
			b[i] = 'X'
		}
	}
	n := a.t.Get("/node")
	if n == nil {
		t.Fatal("node lost after the request buffer was reused")
	}
	if string(n.Data()) != "new!" {
		t.Fatalf("data %q", n.Data())
	}
	if got := a.t.Get("/").Children(); !reflect.DeepEqual(got, []string{"node", "zookeeper"}) {
		t.Fatalf("root children %v", got)
	}
	if got := n.ACL(); got[0].ID.Scheme != "world" || got[0].ID.ID != "anyone" {
		t.Fatalf("ACL %v", got)
	}
	if s := a.t.Session(1); string(s.Passwd) != "secret" {
		t.Fatalf("passwd %q", s.Passwd)
	}
	if bad := checkInvariants(a.t); len(bad) > 0 {
		t.Fatal(bad)
	}
}

func TestDataIsReplacedNotMutated(t *testing.T) {
	a := newApplier(Options{})
	a.mustOK(t, createTxn("/a", "one", proto.ModePersistent, 0))
	old := a.t.Get("/a").Data()
	a.mustOK(t, &Txn{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/a", Data: []byte("two"), Version: -1}})
	a.mustOK(t, &Txn{Op: proto.OpMulti, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/a", Data: []byte("six"), Version: -1}},
	}}})
	if string(old) != "one" {
		t.Fatalf("old data slice changed to %q", old)
	}
	if string(a.t.Get("/a").Data()) != "six" {
		t.Fatal("data not updated")
	}
}

func TestReadHelpers(t *testing.T) {
	a := newApplier(Options{})
	a.mustOK(t, &Txn{Op: proto.OpCreateSession, Session: 9, Req: &CreateSessionReq{Timeout: 1}})
	a.mustOK(t, &Txn{Op: proto.OpCreateSession, Session: 3, Req: &CreateSessionReq{Timeout: 2}})
	a.mustOK(t, createTxn("/a", "12345", proto.ModePersistent, 0))
	a.mustOK(t, createTxn("/a/c", "", proto.ModePersistent, 0))
	a.mustOK(t, createTxn("/a/b", "x", proto.ModeEphemeral, 9))
	a.mustOK(t, createTxn("/a/c/d", "", proto.ModeEphemeral, 3))
	a.mustOK(t, createTxn("/z", "", proto.ModeEphemeral, 9))
	tr := a.t
	if got := tr.Get("/a").Children(); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Fatalf("children %v", got)
	}
	if tr.Get("/a").NumChildren() != 2 || tr.Get("/a/b").NumChildren() != 0 {
		t.Fatal("NumChildren")
	}
	if got := tr.CountDescendants("/a"); got != 3 {
		t.Fatalf("CountDescendants(/a)=%d", got)
	}
	if got := tr.CountDescendants("/"); got != 4+1+3 { // /a and below, /z, /zookeeper and below
		t.Fatalf("CountDescendants(/)=%d", got)
	}
	if got := tr.CountDescendants("/missing"); got != 0 {
		t.Fatalf("CountDescendants(/missing)=%d", got)
	}
	if got := tr.NodeCount(); got != 5+5 {
		t.Fatalf("NodeCount=%d", got)
	}
	if got := tr.EphemeralCount(); got != 3 {
		t.Fatalf("EphemeralCount=%d", got)
	}
	if got := tr.Ephemerals(9); !reflect.DeepEqual(got, []string{"/a/b", "/z"}) {
		t.Fatalf("Ephemerals(9)=%v", got)
	}
	if got := tr.Ephemerals(1234); len(got) != 0 {
		t.Fatalf("Ephemerals(1234)=%v", got)
	}
	var ids []int64
	for _, s := range tr.Sessions() {
		ids = append(ids, s.ID)
	}
	if !reflect.DeepEqual(ids, []int64{3, 9}) || tr.Session(3).Timeout != 2 || tr.Session(4) != nil {
		t.Fatalf("sessions %v", ids)
	}
	var want int64
	tr.Walk(func(p string, n *Node) { want += int64(len(p) + len(n.Data())) })
	if got := tr.ApproximateDataSize(); got != want {
		t.Fatalf("ApproximateDataSize=%d, sum over Walk=%d", got, want)
	}
	var walked []string
	tr.Walk(func(p string, _ *Node) { walked = append(walked, p) })
	if strings.Join(walked, " ") != "/ /a /a/b /a/c /a/c/d /z /zookeeper /zookeeper/config /zookeeper/quota" {
		t.Fatalf("Walk order %v", walked)
	}
	if !CheckACL(tr.Get("/a"), proto.PermAdmin, nil) || CheckACL(tr.Get(ConfigPath), proto.PermWrite, nil) {
		t.Fatal("CheckACL")
	}
}

func TestEphemeralOwnerEncodings(t *testing.T) {
	if IsTTLOwner(0) || IsTTLOwner(1) || IsTTLOwner(ContainerOwner) {
		t.Fatal("IsTTLOwner on a non-TTL owner")
	}
	o := int64(-1<<56) | 100
	if !IsTTLOwner(o) || TTLOf(o) != 100 {
		t.Fatalf("owner %x: ttl=%v %d", o, IsTTLOwner(o), TTLOf(o))
	}
	if owner := ContainerOwner; uint64(owner) != 0x8000000000000000 || MaxTTL != 0xffffffffff {
		t.Fatal("constants")
	}
}

func TestMarshallingError(t *testing.T) {
	a := newApplier(Options{})
	cases := []*Txn{
		{Op: proto.OpCreate, Req: &proto.DeleteRequest{Path: "/a"}},
		{Op: proto.OpCreateTTL, Req: &proto.CreateRequest{Path: "/a"}},
		{Op: proto.OpDelete, Req: nil},
		{Op: proto.OpSetData, Req: &proto.CheckVersionRequest{}},
		{Op: proto.OpSetACL, Req: &proto.SetDataRequest{}},
		{Op: proto.OpCheck, Req: &proto.DeleteRequest{}},
		{Op: proto.OpCreateSession, Session: 5, Req: nil},
		{Op: proto.OpDeleteContainer, Req: &proto.DeleteRequest{}},
		{Op: proto.OpMulti, Req: &proto.CreateRequest{}},
	}
	before := dumpState(a.t, false)
	for _, txn := range cases {
		if r := a.apply(txn); r.Err != proto.ErrMarshallingError {
			t.Errorf("%v with %T: %v", txn.Op, txn.Req, r.Err)
		}
	}
	r := a.apply(&Txn{Op: proto.OpMulti, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/a", ACL: openACL}},
		{Type: proto.OpSetData, Req: &proto.CreateRequest{Path: "/a"}},
	}}})
	if r.Multi[1].Err != proto.ErrMarshallingError {
		t.Errorf("multi: %+v", r.Multi)
	}
	if after := dumpState(a.t, false); after != before {
		t.Fatalf("state changed:\n%s", lineDiff(before, after))
	}
	// Read-only opcodes are not transactions.
	if r := a.apply(&Txn{Op: proto.OpGetData, Req: &proto.GetDataRequest{Path: "/"}}); r.Err != proto.ErrUnimplemented {
		t.Errorf("getData: %v", r.Err)
	}
}

func TestQuotaWarning(t *testing.T) {
	a := newApplier(Options{EnforceQuota: true})
	type warning struct {
		prefix, what string
		value, limit int64
	}
	var got []warning
	a.t.QuotaWarning = func(prefix, what string, value, limit int64) {
		got = append(got, warning{prefix, what, value, limit})
	}
	a.mustOK(t, createTxn("/app", "", proto.ModePersistent, 0))
	a.mustOK(t, createTxn(QuotaPath+"/app", "", proto.ModePersistent, 0))
	a.mustOK(t, createTxn(QuotaPath+"/app/"+quotaLimitNode, "count=2,bytes=4", proto.ModePersistent, 0))
	a.mustOK(t, createTxn(QuotaPath+"/app/"+quotaStatNode, "", proto.ModePersistent, 0))
	a.mustOK(t, createTxn("/app/a", "abc", proto.ModePersistent, 0)) // count 2, bytes 3: within
	if len(got) != 0 {
		t.Fatalf("warnings within limits: %v", got)
	}
	// Soft limits never fail a write, even with enforcement on.
	a.mustOK(t, createTxn("/app/b", "xy", proto.ModePersistent, 0)) // count 3 > 2, bytes 5 > 4
	want := []warning{{"/app", "count", 3, 2}, {"/app", "bytes", 5, 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings %v, want %v", got, want)
	}
	got = nil
	a.mustOK(t, &Txn{Op: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/app/b", Data: []byte("xyz"), Version: -1}})
	if want := []warning{{"/app", "bytes", 6, 4}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings %v, want %v", got, want)
	}
	if s := string(a.t.Get(QuotaPath + "/app/" + quotaStatNode).Data()); s != "count=3,bytes=6" {
		t.Fatalf("stats %q", s)
	}
}

// TestMultiRejectsNonMultiOps: a multi may only hold create, create2,
// createContainer, createTTL, delete, setData and check
// (MultiOperationRecord rejects anything else with an IOException, which
// PrepRequestProcessor turns into MarshallingError for the whole request).
// The wire decoder already refuses other ops, but a Txn built in Go could
// carry them, and Apply runs them without journaling, so a later failing
// op cannot undo them.
func TestMultiRejectsNonMultiOps(t *testing.T) {
	a := newApplier(Options{})
	a.mustOK(t, &Txn{Op: proto.OpCreateSession, Session: 1, Req: &CreateSessionReq{Timeout: 1}})
	a.mustOK(t, createTxn("/a", "", proto.ModePersistent, 0))
	a.mustOK(t, createTxn("/e", "", proto.ModeEphemeral, 1))
	before := dumpState(a.t, false)
	for _, op := range []proto.MultiOp{
		{Type: proto.OpSetACL, Req: &proto.SetACLRequest{Path: "/a", ACL: []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}, Version: -1}},
		{Type: proto.OpCloseSession},
		{Type: proto.OpCreateSession, Req: &CreateSessionReq{Timeout: 5}},
	} {
		r := a.apply(&Txn{Op: proto.OpMulti, Session: 1, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
			op,
			{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/missing", Version: -1}},
		}}})
		if r.Err == proto.ErrOk && (len(r.Multi) == 0 || r.Multi[0].Err == proto.ErrOk && r.Multi[1].Err == proto.ErrOk) {
			t.Errorf("multi with %v succeeded: %+v", op.Type, r)
		}
		if after := dumpState(a.t, false); after != before {
			t.Fatalf("multi with %v failed but changed the tree:\n%s", op.Type, lineDiff(before, after))
		}
	}
}
