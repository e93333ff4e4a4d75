package zk

import (
	"bytes"
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
)

var openACL = acl.OpenACLUnsafe

// runSuite runs the client suite against one server.
func runSuite(t *testing.T, e *env) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"CRUD", testCRUD},
		{"Errors", testErrors},
		{"Create2AndModes", testCreateModes},
		{"TTLAndContainer", testTTLAndContainer},
		{"ACLAndAuth", testACLAndAuth},
		{"MiscReads", testMiscReads},
		{"Multi", testMulti},
		{"MultiRead", testMultiRead},
		{"OneShotWatches", testOneShotWatches},
		{"PersistentWatches", testPersistentWatches},
		{"RemoveWatches", testRemoveWatches},
		{"Chroot", testChroot},
		{"Pipelining", testPipelining},
		{"Helpers", testHelpers},
		{"Reconnect", testReconnect},
		{"WatchReregistration", testWatchReregistration},
		{"AuthAfterReconnect", testAuthAfterReconnect},
		{"ExpiryLost", testExpiryLost},
		{"TimeoutLost", testTimeoutLost},
		{"ProtectedCreate", testProtectedCreate},
		{"ProtectedCreateListed", testProtectedCreateListed},
		{"Close", testClose},
		{"FourLetterWord", testFourLetterWord},
		{"Config", testConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, e) })
	}
}

// must returns v, panicking on err (a test helper: Go cannot pass a
// multi-value call along with t).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

func testCRUD(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	p := root + "/a"
	got := must(c.Create(ctx, p, []byte("hello"), openACL, proto.ModePersistent))
	if got != p {
		t.Fatalf("create returned %q", got)
	}
	data, st, err := c.Get(ctx, p)
	if err != nil || string(data) != "hello" || st.Version != 0 || st.DataLength != 5 {
		t.Fatalf("get: %q %+v %v", data, st, err)
	}
	st2 := must(c.Set(ctx, p, []byte("world"), 0))
	if st2.Version != 1 || st2.Mzxid <= st.Mzxid {
		t.Fatalf("set stat %+v", st2)
	}
	ex := must(c.Exists(ctx, p))
	if ex == nil || *ex != *st2 {
		t.Fatalf("exists stat %+v, want %+v", ex, st2)
	}
	if ex := must(c.Exists(ctx, root+"/missing")); ex != nil {
		t.Fatalf("exists of a missing node: %+v", ex)
	}
	must(c.Create(ctx, p+"/x", nil, openACL, proto.ModePersistent))
	must(c.Create(ctx, p+"/y", []byte{}, openACL, proto.ModePersistent))
	kids, cst, err := c.Children(ctx, p)
	slices.Sort(kids)
	if err != nil || !slices.Equal(kids, []string{"x", "y"}) || cst.NumChildren != 2 {
		t.Fatalf("children %v %+v %v", kids, cst, err)
	}
	kids, _, err = c.Children(ctx, p+"/x")
	if err != nil || kids == nil || len(kids) != 0 {
		t.Fatalf("children of a leaf: %#v %v", kids, err)
	}
	wantErr(t, c.Delete(ctx, p+"/x", 5), ErrBadVersion)
	if err := c.Delete(ctx, p+"/x", 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, p+"/y", AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, p, AnyVersion); err != nil {
		t.Fatal(err)
	}
	if ex := must(c.Exists(ctx, p)); ex != nil {
		t.Fatal("node survived delete")
	}
	// Empty and nil data both read back empty.
	must(c.Create(ctx, p, nil, openACL, proto.ModePersistent))
	if d, _, err := c.Get(ctx, p); err != nil || len(d) != 0 {
		t.Fatalf("get of empty node: %q %v", d, err)
	}
	// Large value (500 KB).
	big := bytes.Repeat([]byte("0123456789"), 50_000)
	must(c.Set(ctx, p, big, AnyVersion))
	if d, _, err := c.Get(ctx, p); err != nil || !bytes.Equal(d, big) {
		t.Fatalf("big get: %d bytes, %v", len(d), err)
	}
}

func testErrors(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	missing := root + "/missing"
	_, _, err := c.Get(ctx, missing)
	wantErr(t, err, ErrNoNode)
	var ze *Error
	if !errors.As(err, &ze) || ze.Code != proto.ErrNoNode || ze.Path != missing || ze.Op != "getData" {
		t.Fatalf("error detail: %#v", err)
	}
	if !strings.Contains(err.Error(), missing) {
		t.Fatalf("error text %q lacks the path", err)
	}
	_, err = c.Set(ctx, missing, nil, AnyVersion)
	wantErr(t, err, ErrNoNode)
	wantErr(t, c.Delete(ctx, missing, AnyVersion), ErrNoNode)
	_, _, err = c.Children(ctx, missing)
	wantErr(t, err, ErrNoNode)
	_, _, err = c.GetACL(ctx, missing)
	wantErr(t, err, ErrNoNode)
	_, err = c.Create(ctx, missing+"/child", nil, openACL, proto.ModePersistent)
	wantErr(t, err, ErrNoNode)

	p := root + "/n"
	must(c.Create(ctx, p, nil, openACL, proto.ModePersistent))
	_, err = c.Create(ctx, p, nil, openACL, proto.ModePersistent)
	wantErr(t, err, ErrNodeExists)
	_, err = c.Set(ctx, p, nil, 7)
	wantErr(t, err, ErrBadVersion)
	must(c.Create(ctx, p+"/c", nil, openACL, proto.ModePersistent))
	wantErr(t, c.Delete(ctx, p, AnyVersion), ErrNotEmpty)
	eph := must(c.Create(ctx, root+"/eph", nil, openACL, proto.ModeEphemeral))
	_, err = c.Create(ctx, eph+"/c", nil, openACL, proto.ModePersistent)
	wantErr(t, err, ErrNoChildrenForEphemerals)
	_, err = c.Create(ctx, root+"/noacl", nil, nil, proto.ModePersistent)
	wantErr(t, err, ErrInvalidACL)
	_, err = c.Create(ctx, root+"/badacl", nil, []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "digest", ID: "nocolon"}}}, proto.ModePersistent)
	wantErr(t, err, ErrInvalidACL)
	_, err = c.SetACL(ctx, p, openACL, 3)
	wantErr(t, err, ErrBadVersion)
	// Client-side validation: nothing is sent.
	for _, bad := range []string{"", "a", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\x00b"} {
		_, _, err := c.Get(ctx, bad)
		wantErr(t, err, ErrInvalidPath)
	}
	_, err = c.Create(ctx, root+"/ttl", nil, openACL, proto.ModePersistentWithTTL)
	wantErr(t, err, ErrBadArguments)
	_, err = c.Create(ctx, root+"/ttl", nil, openACL, proto.ModePersistent, WithTTL(100))
	wantErr(t, err, ErrBadArguments)
	_, err = c.Create(ctx, root+"/mode", nil, openACL, proto.CreateMode(42))
	wantErr(t, err, ErrBadArguments)
	// Server-side unsupported: reconfig-less config is readable, removing
	// a watch that does not exist is an error.
	wantErr(t, c.RemoveWatches(ctx, p, proto.WatcherData), ErrNoWatcher)
	wantErr(t, c.CheckWatches(ctx, p, proto.WatcherChildren), ErrNoWatcher)
	// A canceled context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = c.Get(cctx, p)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ctx: %v", err)
	}
}

func testCreateModes(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	p, st, err := c.Create2(ctx, root+"/c2", []byte("abc"), openACL, proto.ModePersistent)
	if err != nil || p != root+"/c2" || st == nil || st.DataLength != 3 || st.Czxid == 0 {
		t.Fatalf("create2: %q %+v %v", p, st, err)
	}
	s1 := must(c.Create(ctx, root+"/seq-", nil, openACL, proto.ModePersistentSequential))
	s2, st2, err := c.Create2(ctx, root+"/seq-", nil, openACL, proto.ModePersistentSequential)
	if err != nil || !strings.HasPrefix(s1, root+"/seq-") || len(s1) != len(root+"/seq-")+10 || s2 <= s1 || st2 == nil {
		t.Fatalf("sequential: %q %q %v", s1, s2, err)
	}
	eph := must(c.Create(ctx, root+"/eph", nil, openACL, proto.ModeEphemeral))
	est := must(c.Exists(ctx, eph))
	if est.EphemeralOwner != c.SessionID() {
		t.Fatalf("ephemeral owner %x, session %x", est.EphemeralOwner, c.SessionID())
	}
	es := must(c.Create(ctx, root+"/es-", nil, openACL, proto.ModeEphemeralSequential))
	ephs := must(c.GetEphemerals(ctx, root))
	slices.Sort(ephs)
	if want := []string{eph, es}; !slices.Equal(ephs, want) {
		t.Fatalf("getEphemerals %v, want %v", ephs, want)
	}
	n := must(c.GetAllChildrenNumber(ctx, root))
	if n != 5 {
		t.Fatalf("getAllChildrenNumber %d, want 5", n)
	}
}

func testTTLAndContainer(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	p, st, err := c.Create2(ctx, root+"/ttl", []byte("x"), openACL, proto.ModePersistentWithTTL, WithTTL(60_000))
	if err != nil || p != root+"/ttl" || st == nil {
		t.Fatalf("ttl create: %q %v", p, err)
	}
	sp := must(c.Create(ctx, root+"/ttls-", nil, openACL, proto.ModePersistentSequentialWithTTL, WithTTL(60_000)))
	if !strings.HasPrefix(sp, root+"/ttls-") {
		t.Fatalf("ttl sequential %q", sp)
	}
	cont := must(c.Create(ctx, root+"/cont", nil, openACL, proto.ModeContainer))
	must(c.Create(ctx, cont+"/kid", nil, openACL, proto.ModePersistent))
	// The container is reaped once its last child is deleted.
	_, ev, err := c.ExistsW(ctx, cont)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cont+"/kid", AnyVersion); err != nil {
		t.Fatal(err)
	}
	if got := waitEvent(t, ev); got.Type != EventNodeDeleted || got.Path != cont {
		t.Fatalf("container event %+v", got)
	}
}

func testACLAndAuth(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	digest := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "digest", ID: acl.DigestID("alice", "secret")}}}
	p := must(c.Create(ctx, root+"/priv", []byte("s"), digest, proto.ModePersistent))
	_, _, err := c.Get(ctx, p)
	wantErr(t, err, ErrNoAuth)
	_, _, err = c.GetACL(ctx, p) // getACL needs READ or ADMIN since 3.6
	wantErr(t, err, ErrNoAuth)
	if err := c.AddAuth(ctx, "digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	got, st, err := c.GetACL(ctx, p)
	if err != nil || len(got) != 1 || got[0].ID.Scheme != "digest" || st.Aversion != 0 {
		t.Fatalf("getACL %+v %v", got, err)
	}
	if d, _, err := c.Get(ctx, p); err != nil || string(d) != "s" {
		t.Fatalf("get after auth: %q %v", d, err)
	}
	who := must(c.WhoAmI(ctx))
	found := false
	for _, ci := range who {
		if ci.AuthScheme == "digest" && ci.User == "alice" {
			found = true
		}
	}
	if !found {
		t.Fatalf("whoAmI %+v", who)
	}
	st2 := must(c.SetACL(ctx, p, openACL, 0))
	if st2.Aversion != 1 {
		t.Fatalf("setACL aversion %d", st2.Aversion)
	}
	// CreatorAllACL uses the session's identities.
	cp := must(c.Create(ctx, root+"/creator", nil, acl.CreatorAllACL, proto.ModePersistent))
	got, _, err = c.GetACL(ctx, cp)
	if err != nil || len(got) != 1 || got[0].ID.ID != acl.DigestID("alice", "secret") {
		t.Fatalf("creator ACL %+v %v", got, err)
	}
	other := connect(t, e.addr)
	_, _, err = other.Get(ctx, cp)
	wantErr(t, err, ErrNoAuth)
	// WithAuth authenticates at connect.
	withAuth := connect(t, e.addr, WithAuth("digest", []byte("alice:secret")))
	if _, _, err := withAuth.Get(ctx, cp); err != nil {
		t.Fatal(err)
	}
	// A refused scheme fails Connect.
	_, err = Connect(ctx, e.addr, WithAuth("nosuchscheme", []byte("x")), WithSessionTimeout(5*time.Second))
	wantErr(t, err, ErrAuthFailed)
}

func testMiscReads(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	sp, err := c.Sync(ctx, root)
	if err != nil || sp != root {
		t.Fatalf("sync %q %v", sp, err)
	}
	_, _, err = c.GetConfig(ctx)
	if err != nil && !errors.Is(err, ErrNoNode) {
		t.Fatalf("getConfig: %v", err)
	}
	if c.LastZxid() == 0 || c.SessionID() == 0 || c.SessionTimeout() <= 0 || c.Server() != e.addr {
		t.Fatalf("session info: zxid %d id %x timeout %v server %q", c.LastZxid(), c.SessionID(), c.SessionTimeout(), c.Server())
	}
	if c.State() != StateConnected {
		t.Fatalf("state %v", c.State())
	}
}

func testMulti(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	must(c.Create(ctx, root+"/old", []byte("o"), openACL, proto.ModePersistent))
	res, err := c.Multi(ctx,
		CreateOp(root+"/a", []byte("a"), openACL, proto.ModePersistent),
		CreateOp(root+"/s-", nil, openACL, proto.ModePersistentSequential),
		SetDataOp(root+"/old", []byte("new"), 0),
		CheckOp(root+"/a", 0),
		DeleteOp(root+"/old", 1),
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 5 || res[0].Path != root+"/a" || res[0].Type != proto.OpCreate || !strings.HasPrefix(res[1].Path, root+"/s-") ||
		res[2].Stat == nil || res[2].Stat.Version != 1 || res[3].Type != proto.OpCheck || res[4].Type != proto.OpDelete {
		t.Fatalf("multi results %+v", res)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("result error %v", r.Err)
		}
	}
	if ex := must(c.Exists(ctx, root+"/old")); ex != nil {
		t.Fatal("delete in multi not applied")
	}
	// A failing multi applies nothing.
	res, err = c.Multi(ctx,
		CreateOp(root+"/b", nil, openACL, proto.ModePersistent),
		CreateOp(root+"/a", nil, openACL, proto.ModePersistent),
		SetDataOp(root+"/a", nil, AnyVersion),
	)
	wantErr(t, err, ErrNodeExists)
	if len(res) != 3 || res[0].Err != nil || !errors.Is(res[1].Err, ErrNodeExists) || !errors.Is(res[2].Err, ErrRuntimeInconsistency) {
		t.Fatalf("failed multi results %+v", res)
	}
	if ex := must(c.Exists(ctx, root+"/b")); ex != nil {
		t.Fatal("failed multi applied an op")
	}
	_, err = c.Multi(ctx, CheckOp(root+"/a", 3))
	wantErr(t, err, ErrBadVersion)
	_, err = c.Multi(ctx, CreateOp(root+"/x/y", nil, openACL, proto.ModePersistent))
	wantErr(t, err, ErrNoNode)
	if res, err := c.Multi(ctx); err != nil || len(res) != 0 {
		t.Fatalf("empty multi %v %v", res, err)
	}
	// TTL and container creates in a multi.
	res, err = c.Multi(ctx,
		CreateOp(root+"/cont", nil, openACL, proto.ModeContainer),
		CreateOp(root+"/ttl", nil, openACL, proto.ModePersistentWithTTL, WithTTL(60_000)),
	)
	if err != nil || res[0].Path != root+"/cont" || res[1].Path != root+"/ttl" {
		t.Fatalf("multi container/ttl %+v %v", res, err)
	}
}

func testMultiRead(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	must(c.Create(ctx, root+"/a", []byte("A"), openACL, proto.ModePersistent))
	must(c.Create(ctx, root+"/a/k", nil, openACL, proto.ModePersistent))
	res, err := c.MultiRead(ctx, GetDataOp(root+"/a"), GetChildrenOp(root+"/a"), GetDataOp(root+"/missing"), GetChildrenOp(root+"/a/k"))
	if err != nil {
		t.Fatal(err)
	}
	if string(res[0].Data) != "A" || res[0].Stat == nil || res[0].Err != nil ||
		!slices.Equal(res[1].Children, []string{"k"}) || !errors.Is(res[2].Err, ErrNoNode) ||
		res[3].Children == nil || len(res[3].Children) != 0 {
		t.Fatalf("multiRead %+v", res)
	}
}

func testOneShotWatches(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	w := connect(t, e.addr)
	root := testRoot(t, c)
	p := root + "/n"

	// exists on a missing node fires NodeCreated.
	st, ev, err := c.ExistsW(ctx, p)
	if err != nil || st != nil {
		t.Fatalf("existsW: %v %v", st, err)
	}
	kids, _, cev, err := c.ChildrenW(ctx, root)
	if err != nil || len(kids) != 0 {
		t.Fatal(err)
	}
	must(w.Create(ctx, p, []byte("1"), openACL, proto.ModePersistent))
	if got := typePath(waitEvent(t, ev)); got != (Event{Type: EventNodeCreated, Path: p}) {
		t.Fatalf("exists event %+v", got)
	}
	if got := typePath(waitEvent(t, cev)); got != (Event{Type: EventNodeChildrenChanged, Path: root}) {
		t.Fatalf("children event %+v", got)
	}
	if _, ok := <-ev; ok {
		t.Fatal("second event on a one-shot watch")
	}
	// Two data watches on one node both fire, once.
	_, _, d1, err := c.GetW(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, d2, err := c.ExistsW(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	must(w.Set(ctx, p, []byte("2"), AnyVersion))
	must(w.Set(ctx, p, []byte("3"), AnyVersion))
	for _, ch := range []<-chan Event{d1, d2} {
		if got := waitEvent(t, ch); got.Type != EventNodeDataChanged || got.Path != p {
			t.Fatalf("data event %+v", got)
		}
		if _, ok := <-ch; ok {
			t.Fatal("channel not closed after its event")
		}
	}
	// Delete fires data and child watches.
	_, _, d3, err := c.GetW(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, _, c3, err := c.ChildrenW(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(ctx, p, AnyVersion); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan Event{d3, c3} {
		if got := waitEvent(t, ch); got.Type != EventNodeDeleted || got.Path != p {
			t.Fatalf("delete event %+v", got)
		}
	}
	// A failed GetW sets no watch.
	if _, _, ch, err := c.GetW(ctx, p); !errors.Is(err, ErrNoNode) || ch != nil {
		t.Fatalf("getW on a missing node: %v %v", ch, err)
	}
	// Watches on many nodes, many events: nothing is dropped.
	const n = 50
	chans := make([]<-chan Event, n)
	for i := range chans {
		pp := root + "/m" + itoa(i)
		must(w.Create(ctx, pp, nil, openACL, proto.ModePersistent))
		_, _, chans[i], err = c.GetW(ctx, pp)
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range chans {
		must(w.Set(ctx, root+"/m"+itoa(i), []byte("x"), AnyVersion))
	}
	for i, ch := range chans {
		if got := waitEvent(t, ch); got.Path != root+"/m"+itoa(i) {
			t.Fatalf("event %+v", got)
		}
	}
}

func testPersistentWatches(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	w := connect(t, e.addr)
	root := testRoot(t, c)
	pw, err := c.AddWatch(ctx, root, proto.AddWatchPersistent)
	if err != nil {
		t.Fatal(err)
	}
	// Another session: one session has one server-side mode per path.
	c2 := connect(t, e.addr)
	rw, err := c2.AddWatch(ctx, root, proto.AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	must(w.Create(ctx, root+"/a", nil, openACL, proto.ModePersistent))
	must(w.Create(ctx, root+"/a/b", nil, openACL, proto.ModePersistent))
	must(w.Set(ctx, root+"/a/b", []byte("x"), AnyVersion))
	must(w.Set(ctx, root, []byte("r"), AnyVersion))
	if err := w.Delete(ctx, root+"/a/b", AnyVersion); err != nil {
		t.Fatal(err)
	}
	// Persistent: child changes and data changes of root itself, repeatedly.
	want := []Event{
		{Type: EventNodeChildrenChanged, Path: root},
		{Type: EventNodeDataChanged, Path: root},
	}
	for _, wev := range want {
		if got := typePath(waitEvent(t, pw.Events())); got != wev {
			t.Fatalf("persistent event %+v, want %+v", got, wev)
		}
	}
	// Recursive: every node event below root, no child events.
	rwant := []Event{
		{Type: EventNodeCreated, Path: root + "/a"},
		{Type: EventNodeCreated, Path: root + "/a/b"},
		{Type: EventNodeDataChanged, Path: root + "/a/b"},
		{Type: EventNodeDataChanged, Path: root},
		{Type: EventNodeDeleted, Path: root + "/a/b"},
	}
	for _, wev := range rwant {
		if got := typePath(waitEvent(t, rw.Events())); got != wev {
			t.Fatalf("recursive event %+v, want %+v", got, wev)
		}
	}
	// A burst nobody reads while it happens is queued, not dropped.
	const n = 300
	for i := 0; i < n; i++ {
		must(w.Set(ctx, root+"/a", []byte{byte(i)}, AnyVersion))
	}
	for i := 0; i < n; i++ {
		if got := waitEvent(t, rw.Events()); got.Type != EventNodeDataChanged || got.Path != root+"/a" {
			t.Fatalf("burst event %d: %+v", i, got)
		}
	}
	// Close ends the stream; the server-side registration goes too once no
	// watcher remains.
	pw.Close()
	if _, ok := <-pw.Events(); ok {
		// A buffered event may precede the close; drain.
		for range pw.Events() {
		}
	}
	rw.Close()
	for range rw.Events() {
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, cc := range []*Conn{c, c2} {
		for {
			err := cc.CheckWatches(ctx, root, proto.WatcherAny)
			if errors.Is(err, ErrNoWatcher) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server still has the watch: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Watch on a node that does not exist yet.
	nw, err := c.AddWatch(ctx, root+"/later", proto.AddWatchPersistent)
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	must(w.Create(ctx, root+"/later", nil, openACL, proto.ModePersistent))
	if got := waitEvent(t, nw.Events()); got.Type != EventNodeCreated {
		t.Fatalf("later %+v", got)
	}
}

func testRemoveWatches(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	p := must(c.Create(ctx, root+"/n", nil, openACL, proto.ModePersistent))
	_, _, dch, err := c.GetW(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, _, cch, err := c.ChildrenW(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckWatches(ctx, p, proto.WatcherData); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveWatches(ctx, p, proto.WatcherData); err != nil {
		t.Fatal(err)
	}
	if got := waitEvent(t, dch); got.Type != EventDataWatchRemoved {
		t.Fatalf("data removed event %+v", got)
	}
	wantErr(t, c.CheckWatches(ctx, p, proto.WatcherData), ErrNoWatcher)
	if err := c.CheckWatches(ctx, p, proto.WatcherChildren); err != nil {
		t.Fatal(err)
	}
	pw, err := c.AddWatch(ctx, p, proto.AddWatchPersistent)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveWatches(ctx, p, proto.WatcherAny); err != nil {
		t.Fatal(err)
	}
	if got := waitEvent(t, cch); got.Type != EventChildWatchRemoved {
		t.Fatalf("child removed event %+v", got)
	}
	if got := waitEvent(t, pw.Events()); got.Type != EventPersistentWatchRemoved {
		t.Fatalf("persistent removed event %+v", got)
	}
	if _, ok := <-pw.Events(); ok {
		t.Fatal("stream not closed after removal")
	}
	wantErr(t, c.CheckWatches(ctx, p, proto.WatcherAny), ErrNoWatcher)
}

func testChroot(t *testing.T, e *env) {
	ctx := testCtx(t)
	plain := connect(t, e.addr)
	root := testRoot(t, plain)
	c := connect(t, e.addr+root)
	p := must(c.Create(ctx, "/a", []byte("x"), openACL, proto.ModePersistent))
	if p != "/a" {
		t.Fatalf("chroot create returned %q", p)
	}
	if d, _, err := plain.Get(ctx, root+"/a"); err != nil || string(d) != "x" {
		t.Fatalf("node not under the chroot: %v", err)
	}
	seq := must(c.Create(ctx, "/s-", nil, openACL, proto.ModeEphemeralSequential))
	if !strings.HasPrefix(seq, "/s-") {
		t.Fatalf("sequential under chroot %q", seq)
	}
	kids, _, err := c.Children(ctx, "/")
	slices.Sort(kids)
	if err != nil || len(kids) != 2 || kids[0] != "a" {
		t.Fatalf("children of chroot: %v %v", kids, err)
	}
	ephs := must(c.GetEphemerals(ctx, "/"))
	if !slices.Equal(ephs, []string{seq}) {
		t.Fatalf("ephemerals under chroot %v", ephs)
	}
	_, _, ev, err := c.GetW(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	_, _, rev, err := c.ChildrenW(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	// A second session: one session's persistent and one-shot watches on
	// one path share a server-side registration (see the package doc).
	c1 := connect(t, e.addr+root)
	rw, err := c1.AddWatch(ctx, "/", proto.AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	must(plain.Set(ctx, root+"/a", []byte("y"), AnyVersion))
	if got := waitEvent(t, ev); got.Path != "/a" {
		t.Fatalf("chroot event path %q", got.Path)
	}
	if got := waitEvent(t, rw.Events()); got.Path != "/a" {
		t.Fatalf("chroot recursive event path %q", got.Path)
	}
	must(plain.Create(ctx, root+"/b", nil, openACL, proto.ModePersistent))
	if got := typePath(waitEvent(t, rev)); got != (Event{Type: EventNodeChildrenChanged, Path: "/"}) {
		t.Fatalf("chroot root event %+v", got)
	}
	if sp, err := c.Sync(ctx, "/a"); err != nil || sp != "/a" {
		t.Fatalf("sync under chroot %q %v", sp, err)
	}
	res, err := c.Multi(ctx, CreateOp("/m", nil, openACL, proto.ModePersistent), SetDataOp("/a", nil, AnyVersion))
	if err != nil || res[0].Path != "/m" {
		t.Fatalf("multi under chroot %+v %v", res, err)
	}
	// WithChroot overrides, and "/" means none.
	c2 := connect(t, e.addr, WithChroot(root+"/a"))
	if _, st, err := c2.Get(ctx, "/"); err != nil || st.DataLength != 0 {
		t.Fatalf("WithChroot get: %v", err)
	}
}

func testPipelining(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	const workers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			p := root + "/w" + itoa(w)
			if _, err := c.Create(ctx, p, nil, openACL, proto.ModePersistent); err != nil {
				errs <- err
				return
			}
			for i := 0; i < each; i++ {
				if _, err := c.Set(ctx, p, []byte(itoa(i)), int32(i)); err != nil {
					errs <- err
					return
				}
				d, _, err := c.Get(ctx, p)
				if err != nil || string(d) != itoa(i) {
					errs <- errors.New("read your own write failed: " + string(d))
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := must(c.GetAllChildrenNumber(ctx, root)); n != workers {
		t.Fatalf("%d children", n)
	}
}

func testHelpers(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr)
	root := testRoot(t, c)
	if err := c.EnsurePath(ctx, root+"/a/b/c", openACL); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePath(ctx, root+"/a/b/c", openACL); err != nil {
		t.Fatal(err)
	}
	p := must(c.CreateAll(ctx, root+"/x/y/z", []byte("z"), openACL, proto.ModePersistent))
	if p != root+"/x/y/z" {
		t.Fatal(p)
	}
	p = must(c.CreateAll(ctx, root+"/k/l/e-", nil, openACL, proto.ModeEphemeralSequential, AsContainers()))
	if !strings.HasPrefix(p, root+"/k/l/e-") {
		t.Fatal(p)
	}
	for _, cp := range []string{root + "/k", root + "/k/l"} {
		st := must(c.Exists(ctx, cp))
		if st == nil {
			t.Fatalf("%s missing", cp)
		}
	}
	if err := c.DeleteAll(ctx, root); err != nil {
		t.Fatal(err)
	}
	if ex := must(c.Exists(ctx, root)); ex != nil {
		t.Fatal("DeleteAll left the root")
	}
	if err := c.DeleteAll(ctx, root); err != nil {
		t.Fatalf("DeleteAll of a missing node: %v", err)
	}
}

// testReconnect cuts the connection: Suspended, then Reconnected with the
// same session; requests issued while disconnected wait for the new
// connection.
func testReconnect(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial))
	rec := recordStates(c)
	root := testRoot(t, c)
	eph := must(c.Create(ctx, root+"/eph", nil, openACL, proto.ModeEphemeral))
	sid := c.SessionID()
	nc.block(true)
	nc.cut()
	rec.wait(t, 0, StateSuspended)
	// Issued while disconnected: waits.
	type result struct {
		st  *proto.Stat
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := c.Exists(ctx, eph)
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("request completed while disconnected: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	// A short ctx expires while waiting.
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := c.Exists(sctx, eph)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting request with short ctx: %v", err)
	}
	nc.block(false)
	rec.wait(t, 0, StateReconnected)
	r := <-done
	if r.err != nil || r.st == nil || r.st.EphemeralOwner != sid {
		t.Fatalf("after reconnect: %+v %v", r.st, r.err)
	}
	if c.SessionID() != sid {
		t.Fatal("session changed")
	}
	if got := rec.snapshot(); !slices.Equal(got, []State{StateSuspended, StateReconnected}) {
		t.Fatalf("states %v", got)
	}
	// Requests in flight when the connection breaks fail with connection
	// loss (and do not hang).
	var wg sync.WaitGroup
	lost := make(chan error, 100)
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Exists(ctx, eph)
			if err != nil {
				lost <- err
			}
		}()
	}
	nc.cut()
	wg.Wait()
	close(lost)
	for err := range lost {
		if !errors.Is(err, ErrConnectionLoss) {
			t.Fatalf("in-flight error %v", err)
		}
	}
	rec.wait(t, 2, StateReconnected)
	if _, err := c.Exists(ctx, eph); err != nil {
		t.Fatal(err)
	}
}

// testWatchReregistration changes nodes while the client is cut off: the
// missed events fire after the reconnection (setWatches2).
func testWatchReregistration(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial))
	w := connect(t, e.addr)
	rec := recordStates(c)
	root := testRoot(t, c)
	p := must(c.Create(ctx, root+"/n", nil, openACL, proto.ModePersistent))
	_, _, dch, err := c.GetW(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, ech, err := c.ExistsW(ctx, root+"/new")
	if err != nil {
		t.Fatal(err)
	}
	_, _, cch, err := c.ChildrenW(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	_, _, stay, err := c.GetW(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.AddWatch(ctx, root, proto.AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	nc.block(true)
	nc.cut()
	rec.wait(t, 0, StateSuspended)
	must(w.Set(ctx, p, []byte("changed"), AnyVersion))
	must(w.Create(ctx, root+"/new", nil, openACL, proto.ModePersistent))
	nc.block(false)
	rec.wait(t, 0, StateReconnected)
	if got := typePath(waitEvent(t, dch)); got != (Event{Type: EventNodeDataChanged, Path: p}) {
		t.Fatalf("missed data event %+v", got)
	}
	if got := typePath(waitEvent(t, ech)); got != (Event{Type: EventNodeCreated, Path: root + "/new"}) {
		t.Fatalf("missed exists event %+v", got)
	}
	if got := typePath(waitEvent(t, cch)); got != (Event{Type: EventNodeChildrenChanged, Path: root}) {
		t.Fatalf("missed child event %+v", got)
	}
	// The persistent recursive watch was re-registered: later events arrive.
	must(w.Set(ctx, root+"/new", []byte("x"), AnyVersion))
	for {
		got := waitEvent(t, rw.Events())
		if typePath(got) == (Event{Type: EventNodeDataChanged, Path: root + "/new"}) {
			break
		}
	}
	// The untouched node's watch is still armed and fires once.
	select {
	case ev := <-stay:
		t.Fatalf("unchanged node fired %+v", ev)
	default:
	}
	must(w.Set(ctx, root, []byte("x"), AnyVersion))
	if got := waitEvent(t, stay); got.Type != EventNodeDataChanged {
		t.Fatalf("re-armed watch %+v", got)
	}
}

// testAuthAfterReconnect checks that credentials are re-sent.
func testAuthAfterReconnect(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial), WithAuth("digest", []byte("bob:pw")))
	rec := recordStates(c)
	root := testRoot(t, c)
	if err := c.AddAuth(ctx, "digest", []byte("carol:pw")); err != nil {
		t.Fatal(err)
	}
	bob := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "digest", ID: acl.DigestID("bob", "pw")}}}
	carol := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "digest", ID: acl.DigestID("carol", "pw")}}}
	pb := must(c.Create(ctx, root+"/bob", []byte("b"), bob, proto.ModePersistent))
	pc := must(c.Create(ctx, root+"/carol", []byte("c"), carol, proto.ModePersistent))
	nc.cut()
	rec.wait(t, 0, StateReconnected)
	for _, p := range []string{pb, pc} {
		if _, _, err := c.Get(ctx, p); err != nil {
			t.Fatalf("after reconnect %s: %v", p, err)
		}
	}
}

// testExpiryLost expires the session from outside: Lost, then every
// operation fails with ErrSessionExpired and watches end.
func testExpiryLost(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial))
	rec := recordStates(c)
	root := testRoot(t, c)
	_, _, ev, err := c.GetW(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := c.AddWatch(ctx, root, proto.AddWatchPersistent)
	if err != nil {
		t.Fatal(err)
	}
	nc.block(true)
	nc.cut()
	rec.wait(t, 0, StateSuspended)
	killSession(t, e.addr, c.SessionID(), c.SessionPassword())
	nc.block(false)
	rec.wait(t, 0, StateLost)
	_, _, err = c.Get(ctx, root)
	wantErr(t, err, ErrSessionExpired)
	_, err = c.Create(ctx, root+"/x", nil, openACL, proto.ModePersistent)
	wantErr(t, err, ErrSessionExpired)
	if got := waitEvent(t, ev); got.Type != EventNotWatching || !errors.Is(got.Err, ErrSessionExpired) {
		t.Fatalf("watch after expiry %+v", got)
	}
	if got := waitEvent(t, pw.Events()); got.Type != EventNotWatching {
		t.Fatalf("stream after expiry %+v", got)
	}
	if _, ok := <-pw.Events(); ok {
		t.Fatal("stream not closed")
	}
	if c.State() != StateLost {
		t.Fatalf("state %v", c.State())
	}
	c.Close()
	<-rec.done
	if got := rec.snapshot(); !slices.Equal(got, []State{StateSuspended, StateLost, StateClosed}) {
		t.Fatalf("states %v", got)
	}
}

// testTimeoutLost keeps the client disconnected longer than its session
// timeout: Lost without hearing from a server (Curator's behaviour).
func testTimeoutLost(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial), WithSessionTimeout(time.Second))
	rec := recordStates(c)
	if to := c.SessionTimeout(); to != time.Second {
		t.Fatalf("negotiated timeout %v", to)
	}
	// The client counts the timeout from the last packet it received: a
	// reply just before the cut makes that now, whatever the pings did
	// on a loaded machine.
	if _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nc.block(true)
	nc.cut()
	rec.wait(t, 0, StateSuspended)
	rec.wait(t, 0, StateLost)
	if el := time.Since(start); el < 600*time.Millisecond {
		t.Fatalf("lost %v after the last reply, before the session timeout", el)
	}
	nc.block(false)
	_, err := c.Exists(ctx, "/")
	wantErr(t, err, ErrSessionExpired)
}

// cutOnFirstProtectedCreate makes nc cut the connection once, after
// writing the first request that creates a protected node.
func (nc *netCtl) cutOnFirstProtectedCreate() {
	var once sync.Once
	nc.mu.Lock()
	nc.cutOnWrite = func(b []byte) bool {
		hit := false
		if bytes.Contains(b, []byte(ProtectedPrefix)) {
			once.Do(func() { hit = true })
		}
		return hit
	}
	nc.mu.Unlock()
}

// testProtectedCreate loses the reply of a protected create: the node is
// found by its prefix after the reconnection.
func testProtectedCreate(t *testing.T, e *env) {
	ctx := testCtx(t)
	nc := netCtl{addr: e.addr}
	c := connect(t, e.addr, WithDialer(nc.dial))
	rec := recordStates(c)
	root := testRoot(t, c)
	nc.cutOnFirstProtectedCreate()
	type result struct {
		p   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := c.CreateProtectedEphemeralSequential(ctx, root+"/lock-", []byte("d"), openACL)
		done <- result{p, err}
	}()
	rec.wait(t, 0, StateSuspended)
	nc.release()
	r := <-done
	p, err := r.p, r.err
	if err != nil {
		t.Fatal(err)
	}
	rec.wait(t, 0, StateReconnected)
	kids, _, err := c.Children(ctx, root)
	if err != nil || len(kids) != 1 || joinPath(root, kids[0]) != p {
		t.Fatalf("children %v, created %q, %v", kids, p, err)
	}
	name := kids[0]
	if !strings.HasPrefix(name, ProtectedPrefix) || !strings.Contains(name, "-lock-") {
		t.Fatalf("protected name %q", name)
	}
	// Without a connection loss it is a plain create.
	p2, err := c.CreateProtectedEphemeralSequential(ctx, root+"/lock-", nil, openACL)
	if err != nil || p2 == p {
		t.Fatalf("second create %q %v", p2, err)
	}
}

// testProtectedCreateListed: the recipes' protected create with the
// parent's children sent right behind it (createProtected with list):
// the list holds the new node and the nodes before it, under a chroot
// too; a missing parent fails the create with NoNode; a create whose
// reply is lost is found by its prefix, and the list is then left to
// the caller (nil).
func testProtectedCreateListed(t *testing.T, e *env) {
	ctx := testCtx(t)
	plain := connect(t, e.addr)
	root := testRoot(t, plain)
	first := must(plain.Create(ctx, root+"/lock-", nil, openACL, proto.ModeEphemeralSequential))
	c := connect(t, e.addr+root)
	p, st, kids, err := c.createProtected(ctx, "/lock-", []byte("d"), openACL, ModeEphemeralSequential, nil, true)
	if err != nil || st == nil || st.Czxid == 0 {
		t.Fatalf("create: %q %v %v", p, st, err)
	}
	slices.Sort(kids)
	want := []string{p[1:], path.Base(first)}
	slices.Sort(want)
	if !slices.Equal(kids, want) {
		t.Fatalf("listed %q, want %q", kids, want)
	}
	if _, _, kids, err := c.createProtected(ctx, "/none/lock-", nil, openACL, ModeEphemeralSequential, nil, true); !errors.Is(err, ErrNoNode) || kids != nil {
		t.Fatalf("missing parent: %v %q", err, kids)
	}

	// The create's reply lost with the connection.
	nc := netCtl{addr: e.addr}
	lossy := connect(t, e.addr, WithDialer(nc.dial))
	nc.cutOnFirstProtectedCreate()
	rec := recordStates(lossy)
	type result struct {
		p    string
		kids []string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		p, _, kids, err := lossy.createProtected(ctx, root+"/lock-", nil, openACL, ModeEphemeralSequential, nil, true)
		done <- result{p, kids, err}
	}()
	rec.wait(t, 0, StateSuspended)
	nc.release()
	r := <-done
	if r.err != nil || r.kids != nil {
		t.Fatalf("after a lost reply: %q %q %v", r.p, r.kids, r.err)
	}
	if st, err := plain.Exists(ctx, r.p); err != nil || st == nil {
		t.Fatalf("the node %q: %v %v", r.p, st, err)
	}
}

// testClose: closeSession removes ephemerals at once, state Closed is last,
// operations fail with ErrClosing, and no goroutine is left.
func testClose(t *testing.T, e *env) {
	ctx := testCtx(t)
	other := connect(t, e.addr)
	root := testRoot(t, other)
	var listened []State
	var lmu sync.Mutex
	c, err := Connect(ctx, e.addr, WithSessionTimeout(20*time.Second), WithStateListener(func(s State) {
		lmu.Lock()
		listened = append(listened, s)
		lmu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	rec := recordStates(c)
	eph := must(c.Create(ctx, root+"/eph", nil, openACL, proto.ModeEphemeral))
	_, ev, err := c.ExistsW(ctx, root+"/never")
	if err != nil {
		t.Fatal(err)
	}
	pw, err := c.AddWatch(ctx, root, proto.AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close() // idempotent
	<-rec.done
	if got := rec.snapshot(); !slices.Equal(got, []State{StateClosed}) {
		t.Fatalf("states %v", got)
	}
	// The ephemeral went with the session, without waiting for a timeout.
	if st := must(other.Exists(ctx, eph)); st != nil {
		t.Fatal("ephemeral survived Close")
	}
	_, _, err = c.Get(ctx, "/")
	wantErr(t, err, ErrClosing)
	if got := waitEvent(t, ev); got.Type != EventNotWatching || !errors.Is(got.Err, ErrClosing) {
		t.Fatalf("watch after close %+v", got)
	}
	for range pw.Events() {
	}
	if ch := c.StateChanges(); ch != nil {
		if _, ok := <-ch; ok {
			t.Fatal("StateChanges after Close delivered a state")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		lmu.Lock()
		got := slices.Clone(listened)
		lmu.Unlock()
		if slices.Equal(got, []State{StateConnected, StateClosed}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listener saw %v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testFourLetterWord(t *testing.T, e *env) {
	out, err := FourLetterWord(testCtx(t), e.addr, "srvr")
	if err != nil || !strings.Contains(out, "Zookeeper version") {
		t.Fatalf("srvr: %q %v", out, err)
	}
	if _, err := FourLetterWord(testCtx(t), e.addr, "toolong"); err == nil {
		t.Fatal("five letters accepted")
	}
}

// testConfig: GetConfigW and reconfig on a standalone server, where
// reconfiguration is disabled.
func testConfig(t *testing.T, e *env) {
	ctx := testCtx(t)
	c := connect(t, e.addr+"/cfg")
	data, st, ch, err := c.GetConfigW(ctx)
	if err != nil || st == nil || ch == nil {
		t.Fatalf("GetConfigW: %q %+v %v", data, st, err)
	}
	_, _, err = c.Reconfig(ctx, []string{"server.1=127.0.0.1:2888:3888;2181"}, -1)
	wantErr(t, err, ErrReconfigDisabled)
	_, _, err = c.IncrementalReconfig(ctx, nil, []string{"2"}, -1)
	wantErr(t, err, ErrReconfigDisabled)
	_, _, err = c.Reconfig(ctx, nil, -1)
	wantErr(t, err, ErrBadArguments)
	_, _, err = c.IncrementalReconfig(ctx, nil, nil, -1)
	wantErr(t, err, ErrBadArguments)
	select {
	case ev := <-ch:
		t.Fatalf("unexpected config event %+v", ev)
	default:
	}
}
