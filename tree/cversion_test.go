package tree

import (
	"math"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// setCversion gives the node at path a child-create count, as a snapshot
// may (the digest follows).
func setCversion(t *Tree, path string, cversion int32) {
	n := t.Get(path)
	st := n.rawStat()
	st.Cversion = cversion
	n.setRawStat(&st)
	t.resetDigest()
}

// A parent whose child-create count reaches math.MaxInt32 names one more
// sequential child (suffix 2147483647) and then stays there, as in
// ZooKeeper's DataTree: further sequential creates fail with NodeExists
// while that child exists (also inside a multi, where ZooKeeper would name
// the next one -2147483648), and no child ever gets a negative suffix that
// sorts before its older siblings.
func TestSequentialCounterStopsAtMaxInt32(t *testing.T) {
	a := newApplier(Options{})
	a.mustOK(t, &Txn{Op: proto.OpCreateSession, Session: 1, Req: &CreateSessionReq{Timeout: 30000}})
	a.mustOK(t, createTxn("/s", "", proto.ModePersistent, 0))
	a.mustOK(t, createTxn("/s/n-", "", proto.ModePersistentSequential, 0))
	setCversion(a.t, "/s", math.MaxInt32-1)

	if r := a.mustOK(t, createTxn("/s/n-", "", proto.ModePersistentSequential, 0)); r.Path != "/s/n-2147483646" {
		t.Fatalf("created %s", r.Path)
	}
	r := a.mustOK(t, createTxn("/s/n-", "", proto.ModePersistentSequential, 1))
	if r.Path != "/s/n-2147483647" {
		t.Fatalf("created %s", r.Path)
	}
	atMax := a.t.Get("/s").rawStat()
	if atMax.Cversion != math.MaxInt32 {
		t.Fatalf("cversion %d after the last number", atMax.Cversion)
	}
	for _, mode := range []proto.CreateMode{proto.ModePersistentSequential, proto.ModeEphemeralSequential} {
		if r := a.apply(createTxn("/s/n-", "", mode, 1)); r.Err != proto.ErrNodeExists {
			t.Fatalf("sequential create at the end of the counter: %v %s", r.Err, r.Path)
		}
	}
	multi := &Txn{Op: proto.OpMulti, Session: 1, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/s/m-", ACL: openACL, Flags: proto.ModePersistentSequential}},
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/s/m-", ACL: openACL, Flags: proto.ModePersistentSequential}},
	}}}
	if r := a.apply(multi); len(r.Multi) != 2 || r.Multi[1].Err != proto.ErrNodeExists || a.t.Get("/s/m-2147483647") != nil {
		t.Fatalf("multi of two sequential creates at the end of the counter: %v %+v", r.Err, r.Multi)
	}
	// A plain create still works and, as in ZooKeeper, changes neither
	// cversion nor pzxid.
	a.mustOK(t, createTxn("/s/plain", "", proto.ModePersistent, 0))
	if st := a.t.Get("/s").rawStat(); st.Cversion != math.MaxInt32 || st.Pzxid != atMax.Pzxid {
		t.Fatalf("after a plain create: cversion %d pzxid %d, want %d %d", st.Cversion, st.Pzxid, int32(math.MaxInt32), atMax.Pzxid)
	}
	// Once the last-numbered child is gone its name is free again.
	a.mustOK(t, &Txn{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/s/n-2147483647", Version: -1}})
	if r := a.mustOK(t, createTxn("/s/n-", "", proto.ModePersistentSequential, 0)); r.Path != "/s/n-2147483647" {
		t.Fatalf("created %s", r.Path)
	}
	for name := range childSet(a.t.Get("/s")) {
		if strings.Contains(name, "--") {
			t.Fatalf("child %q has a negative sequence number", name)
		}
	}
	if bad := checkInvariants(a.t); len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
}

// A negative count (only a snapshot can carry one) gives no sequence
// number: its suffix would sort before every older sibling.
func TestSequentialCounterNegativeRefused(t *testing.T) {
	a := newApplier(Options{})
	a.mustOK(t, createTxn("/s", "", proto.ModePersistent, 0))
	setCversion(a.t, "/s", math.MinInt32)
	if r := a.apply(createTxn("/s/n-", "", proto.ModePersistentSequential, 0)); r.Err != proto.ErrNodeExists {
		t.Fatalf("sequential create with a negative cversion: %v %s", r.Err, r.Path)
	}
	a.mustOK(t, createTxn("/s/plain", "", proto.ModePersistent, 0))
	if st := a.t.Get("/s").rawStat(); st.Cversion != math.MinInt32+1 {
		t.Fatalf("cversion %d", st.Cversion)
	}
}
