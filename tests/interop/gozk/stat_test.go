package gozk

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/go-zookeeper/zk"
)

func TestStatSemantics(t *testing.T) {
	_, c := start(t)

	mustCreate(t, c, "/s", []byte("hello"), 0)
	st0 := mustExists(t, c, "/s")
	if st0.Czxid <= 0 || st0.Czxid != st0.Mzxid || st0.Czxid != st0.Pzxid {
		t.Fatalf("fresh node zxids: %+v", st0)
	}
	if st0.Version != 0 || st0.Cversion != 0 || st0.Aversion != 0 || st0.DataLength != 5 ||
		st0.NumChildren != 0 || st0.EphemeralOwner != 0 || st0.Ctime != st0.Mtime || st0.Ctime <= 0 {
		t.Fatalf("fresh node stat: %+v", st0)
	}

	// setData: version and mzxid/mtime move; czxid, pzxid, cversion do not.
	st1, err := c.Set("/s", []byte("hi"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if st1.Version != 1 || st1.Mzxid <= st0.Mzxid || st1.Czxid != st0.Czxid || st1.Pzxid != st0.Pzxid ||
		st1.DataLength != 2 || st1.Cversion != 0 || st1.Aversion != 0 || st1.Mtime < st0.Mtime || st1.Ctime != st0.Ctime {
		t.Fatalf("after set: %+v (before %+v)", st1, st0)
	}
	if got := mustExists(t, c, "/s"); *got != *st1 {
		t.Fatalf("exists stat %+v != set stat %+v", got, st1)
	}
	data, gst, err := c.Get("/s")
	if err != nil || string(data) != "hi" || *gst != *st1 {
		t.Fatalf("get = %q %+v %v", data, gst, err)
	}

	// Creating a child: parent's cversion, numChildren, pzxid move; its
	// version and mzxid do not.
	mustCreate(t, c, "/s/a", nil, 0)
	child := mustExists(t, c, "/s/a")
	st2 := mustExists(t, c, "/s")
	if st2.Cversion != 1 || st2.NumChildren != 1 || st2.Pzxid != child.Czxid ||
		st2.Mzxid != st1.Mzxid || st2.Version != 1 || st2.Mtime != st1.Mtime {
		t.Fatalf("parent after child create: %+v (child %+v)", st2, child)
	}
	if child.Czxid <= st1.Mzxid {
		t.Fatalf("child czxid %d not after parent mzxid %d", child.Czxid, st1.Mzxid)
	}

	// Deleting a child: numChildren drops, pzxid moves to the delete's
	// zxid, and cversion counts the delete (clients see creates + deletes,
	// DataNode.copyStat).
	if err := c.Delete("/s/a", -1); err != nil {
		t.Fatal(err)
	}
	st3 := mustExists(t, c, "/s")
	if st3.NumChildren != 0 || st3.Cversion != 2 || st3.Pzxid <= st2.Pzxid || st3.Mzxid != st2.Mzxid {
		t.Fatalf("parent after child delete: %+v (before %+v)", st3, st2)
	}
	mustCreate(t, c, "/later", nil, 0)
	if later := mustExists(t, c, "/later"); later.Czxid <= st3.Pzxid {
		t.Fatalf("later czxid %d <= pzxid of delete %d", later.Czxid, st3.Pzxid)
	}

	// setACL: aversion moves; version, mzxid, cversion do not.
	st4, err := c.SetACL("/s", zk.WorldACL(zk.PermAll), -1)
	if err != nil {
		t.Fatal(err)
	}
	if st4.Aversion != 1 || st4.Version != 1 || st4.Mzxid != st3.Mzxid || st4.Cversion != st3.Cversion || st4.Pzxid != st3.Pzxid {
		t.Fatalf("after setACL: %+v (before %+v)", st4, st3)
	}

	// Ephemeral owner, and root/system nodes.
	mustCreate(t, c, "/s/eph", []byte{1, 2, 3}, zk.FlagEphemeral)
	if e := mustExists(t, c, "/s/eph"); e.EphemeralOwner != c.SessionID() || e.DataLength != 3 {
		t.Fatalf("ephemeral stat: %+v (session %#x)", e, c.SessionID())
	}
	if z := mustExists(t, c, "/zookeeper"); z.EphemeralOwner != 0 {
		t.Fatalf("/zookeeper stat: %+v", z)
	}

	// Empty and nil data.
	mustCreate(t, c, "/empty", []byte{}, 0)
	if d, st, err := c.Get("/empty"); err != nil || len(d) != 0 || st.DataLength != 0 {
		t.Fatalf("empty node: %q %+v %v", d, st, err)
	}
	if st, err := c.Set("/empty", nil, 0); err != nil || st.DataLength != 0 || st.Version != 1 {
		t.Fatalf("set nil: %+v %v", st, err)
	}
}

func TestVersionsAndDeletes(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/v", []byte("0"), 0)

	_, err := c.Set("/v", []byte("x"), 5)
	expectErr(t, "set with wrong version", err, zk.ErrBadVersion)
	st, err := c.Set("/v", []byte("1"), 0)
	if err != nil || st.Version != 1 {
		t.Fatalf("set version 0: %+v %v", st, err)
	}
	_, err = c.Set("/v", []byte("x"), 0)
	expectErr(t, "set with stale version", err, zk.ErrBadVersion)
	if st, err = c.Set("/v", []byte("2"), -1); err != nil || st.Version != 2 {
		t.Fatalf("set version -1: %+v %v", st, err)
	}
	if d, _, _ := c.Get("/v"); string(d) != "2" {
		t.Fatalf("data = %q after failed sets", d)
	}
	_, err = c.Set("/nope", nil, -1)
	expectErr(t, "set missing node", err, zk.ErrNoNode)

	// Delete: version is checked before children.
	mustCreate(t, c, "/v/kid", nil, 0)
	expectErr(t, "delete with wrong version", c.Delete("/v", 0), zk.ErrBadVersion)
	expectErr(t, "delete non-empty", c.Delete("/v", 2), zk.ErrNotEmpty)
	expectErr(t, "delete non-empty, any version", c.Delete("/v", -1), zk.ErrNotEmpty)
	expectErr(t, "delete missing", c.Delete("/v/nope", -1), zk.ErrNoNode)
	expectErr(t, "delete under missing parent", c.Delete("/nope/nope", -1), zk.ErrNoNode)
	if err := c.Delete("/v/kid", 0); err != nil {
		t.Fatal(err)
	}
	expectErr(t, "delete again", c.Delete("/v/kid", -1), zk.ErrNoNode)
	expectErr(t, "delete with stale version", c.Delete("/v", 1), zk.ErrBadVersion)
	if err := c.Delete("/v", 2); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, c, "/v")

	// The root and ZooKeeper's system nodes cannot be deleted.
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		expectErr(t, "delete "+p, c.Delete(p, -1), zk.ErrBadArguments)
	}
}

func TestSetACLVersions(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/a", nil, 0)
	_, err := c.SetACL("/a", zk.WorldACL(zk.PermRead|zk.PermAdmin), 1)
	expectErr(t, "setACL wrong aversion", err, zk.ErrBadVersion)
	st, err := c.SetACL("/a", zk.WorldACL(zk.PermRead|zk.PermAdmin), 0)
	if err != nil || st.Aversion != 1 || st.Version != 0 {
		t.Fatalf("setACL version 0: %+v %v", st, err)
	}
	acl, gst, err := c.GetACL("/a")
	if err != nil || len(acl) != 1 || acl[0] != (zk.ACL{Perms: zk.PermRead | zk.PermAdmin, Scheme: "world", ID: "anyone"}) || *gst != *st {
		t.Fatalf("getACL = %v %+v %v", acl, gst, err)
	}
	// The data version is not the ACL version.
	_, err = c.SetACL("/a", openACL, 0)
	expectErr(t, "setACL stale aversion", err, zk.ErrBadVersion)
	if st, err = c.SetACL("/a", openACL, -1); err != nil || st.Aversion != 2 {
		t.Fatalf("setACL -1: %+v %v", st, err)
	}
	_, err = c.SetACL("/nope", openACL, -1)
	expectErr(t, "setACL missing", err, zk.ErrNoNode)
	_, _, err = c.GetACL("/nope")
	expectErr(t, "getACL missing", err, zk.ErrNoNode)
}

func TestSync(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/x", nil, 0)
	for _, p := range []string{"/x", "/", "/does/not/exist"} {
		got, err := c.Sync(p)
		if err != nil || got != p {
			t.Fatalf("sync %q = %q, %v", p, got, err)
		}
	}
}

func TestChildren(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/k", nil, 0)
	names := make([]string, 30)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
	}
	rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names {
		mustCreate(t, c, "/k/"+n, nil, 0)
	}
	kids, st, err := c.Children("/k")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sorted(kids), sorted(names); !equal(got, want) {
		t.Fatalf("children = %v, want %v", got, want)
	}
	if st.NumChildren != 30 || st.Cversion != 30 {
		t.Fatalf("stat = %+v", st)
	}
	// Grandchildren are not children.
	mustCreate(t, c, "/k/c00/deep", nil, 0)
	if kids, _, _ = c.Children("/k"); len(kids) != 30 {
		t.Fatalf("children after grandchild = %d", len(kids))
	}
	if kids, _, err = c.Children("/k/c01"); err != nil || len(kids) != 0 {
		t.Fatalf("leaf children = %v, %v", kids, err)
	}
	_, _, err = c.Children("/nope")
	expectErr(t, "children of missing node", err, zk.ErrNoNode)
	root, _, err := c.Children("/")
	if err != nil || !equal(sorted(root), []string{"k", "zookeeper"}) {
		t.Fatalf("root children = %v, %v", root, err)
	}
	zkKids, _, err := c.Children("/zookeeper")
	if err != nil || !equal(sorted(zkKids), []string{"config", "quota"}) {
		t.Fatalf("/zookeeper children = %v, %v", zkKids, err)
	}
}

// TestRootStat: ZooKeeper builds the root and /zookeeper without
// transactions, so a fresh root has zero zxids and, since clients see
// 2*creates - children, cversion -1 (adding /zookeeper was no create)
// while numChildren counts /zookeeper.
func TestRootStat(t *testing.T) {
	_, c := start(t)
	st := mustExists(t, c, "/")
	if st.Czxid != 0 || st.Mzxid != 0 || st.Pzxid != 0 || st.Ctime != 0 || st.Mtime != 0 ||
		st.Version != 0 || st.Cversion != -1 || st.Aversion != 0 || st.EphemeralOwner != 0 ||
		st.DataLength != 0 || st.NumChildren != 1 {
		t.Fatalf("fresh root stat = %+v", st)
	}
	if p := mustCreate(t, c, "/s-", nil, zk.FlagSequence); p != "/s-0000000000" {
		t.Fatalf("first sequential child of the root = %q, want /s-0000000000", p)
	}
	if st := mustExists(t, c, "/"); st.Cversion != 0 || st.NumChildren != 2 || st.Pzxid == 0 { // 2*1 - 2
		t.Fatalf("root after create = %+v", st)
	}
	if z := mustExists(t, c, "/zookeeper"); z.NumChildren != 2 || z.Cversion != -2 || z.Czxid != 0 { // 2*0 - 2, as ZooKeeper
		t.Fatalf("/zookeeper stat = %+v", z)
	}
	acl, _, err := c.GetACL("/")
	if err != nil || len(acl) != 1 || acl[0] != openACL[0] {
		t.Fatalf("root ACL = %v, %v", acl, err)
	}
}

// TestLargeData: data up to jute.maxbuffer (0xfffff bytes per packet)
// round-trips; a larger request makes the server drop the connection, which
// the session survives.
func TestLargeData(t *testing.T) {
	_, c := start(t)
	big := make([]byte, 1000*1000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	mustCreate(t, c, "/big", big, 0)
	d, st, err := c.Get("/big")
	if err != nil || st.DataLength != int32(len(big)) || string(d) != string(big) {
		t.Fatalf("get big: len %d stat %+v err %v", len(d), st, err)
	}

	sid := c.SessionID()
	from := len(c.Events())
	_, err = c.Create("/huge", make([]byte, 1<<20+1), 0, openACL)
	if err == nil {
		t.Fatal("create with a packet over jute.maxbuffer succeeded")
	}
	i := c.waitState(from, zk.StateDisconnected)
	c.waitState(i, zk.StateHasSession)
	if c.SessionID() != sid {
		t.Fatalf("session changed %#x -> %#x", sid, c.SessionID())
	}
	mustNotExist(t, c, "/huge")
	mustExists(t, c, "/big")
}
