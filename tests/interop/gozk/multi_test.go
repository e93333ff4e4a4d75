package gozk

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

func create(path string, data []byte, flags int32) *zk.CreateRequest {
	return &zk.CreateRequest{Path: path, Data: data, Acl: openACL, Flags: flags}
}

// checkResults compares per-op errors. A nil want entry means success;
// an int means a server code go-zookeeper has no sentinel for.
func checkResults(t *testing.T, res []zk.MultiResponse, want ...interface{}) {
	t.Helper()
	if len(res) != len(want) {
		t.Fatalf("got %d results, want %d: %+v", len(res), len(want), res)
	}
	for i, w := range want {
		switch w := w.(type) {
		case nil:
			if res[i].Error != nil {
				t.Fatalf("op %d: error %v, want success", i, res[i].Error)
			}
		case error:
			expectErr(t, "op "+string(rune('0'+i)), res[i].Error, w)
		case int:
			expectUnknownCode(t, "op "+string(rune('0'+i)), res[i].Error, w)
		}
	}
}

func TestMultiSuccess(t *testing.T) {
	srv, c := start(t)
	b := connect(t, srv.Addr())
	mustCreate(t, c, "/m", nil, 0)
	_, _, childCh, err := b.ChildrenW("/m")
	if err != nil {
		t.Fatal(err)
	}

	res, err := c.Multi(
		create("/m/a", []byte("a"), 0),
		create("/m/s-", nil, zk.FlagSequence),
		&zk.SetDataRequest{Path: "/m/a", Data: []byte("aa"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m/a", Version: 1},
		create("/m/b", nil, 0),
		&zk.DeleteRequest{Path: "/m/b", Version: 0},
	)
	if err != nil {
		t.Fatalf("multi: %v (%+v)", err, res)
	}
	checkResults(t, res, nil, nil, nil, nil, nil, nil)
	if res[0].String != "/m/a" || res[1].String != "/m/s-0000000001" {
		t.Fatalf("created paths %q %q", res[0].String, res[1].String)
	}
	if res[2].Stat == nil || res[2].Stat.Version != 1 || res[2].Stat.DataLength != 2 {
		t.Fatalf("setData result stat %+v", res[2].Stat)
	}
	// All ops of a multi share one zxid.
	a := mustExists(t, c, "/m/a")
	s := mustExists(t, c, "/m/s-0000000001")
	if a.Czxid != s.Czxid || a.Mzxid != a.Czxid || res[2].Stat.Mzxid != a.Czxid {
		t.Fatalf("multi zxids differ: /m/a %+v, /m/s %+v", a, s)
	}
	mustNotExist(t, c, "/m/b")
	if st := mustExists(t, c, "/m"); st.Cversion != 4 || st.NumChildren != 2 || st.Pzxid != a.Czxid { // 3 creates + 1 delete
		t.Fatalf("/m stat %+v", st)
	}
	expectWatch(t, childCh, zk.EventNodeChildrenChanged, "/m")

	// An empty multi succeeds with no results.
	res, err = c.Multi()
	if err != nil || len(res) != 0 {
		t.Fatalf("empty multi = %+v, %v", res, err)
	}
}

func TestMultiRollback(t *testing.T) {
	srv, c := start(t)
	b := connect(t, srv.Addr())
	mustCreate(t, c, "/m", []byte("0"), 0)
	mustCreate(t, c, "/m/exists", nil, 0)
	before := mustExists(t, c, "/m")

	// Watches that a successful multi would fire.
	_, _, existCh, err := b.ExistsW("/m/a")
	if err != nil {
		t.Fatal(err)
	}
	_, _, dataCh, err := b.GetW("/m")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := b.ChildrenW("/m")
	if err != nil {
		t.Fatal(err)
	}

	// ZooKeeper reports ZOK for ops before the failing one, the failure
	// itself, and ZRUNTIMEINCONSISTENCY for the ops after it.
	res, err := c.Multi(
		create("/m/a", nil, 0),
		&zk.SetDataRequest{Path: "/m", Data: []byte("1"), Version: -1},
		create("/m/b", nil, 0),
		create("/m/exists", nil, 0),
		create("/m/c", nil, 0),
		&zk.DeleteRequest{Path: "/m/exists", Version: -1},
	)
	expectErr(t, "multi", err, zk.ErrNodeExists)
	checkResults(t, res, nil, nil, nil, zk.ErrNodeExists, codeRuntimeInconsistency, codeRuntimeInconsistency)
	for i, r := range res {
		if r.String != "" || r.Stat != nil {
			t.Fatalf("failed multi result %d carries data: %+v", i, r)
		}
	}
	for _, p := range []string{"/m/a", "/m/b", "/m/c"} {
		mustNotExist(t, c, p)
	}
	mustExists(t, c, "/m/exists")
	after := mustExists(t, c, "/m")
	if after.Version != before.Version || after.Cversion != before.Cversion || after.NumChildren != before.NumChildren ||
		after.Pzxid != before.Pzxid || after.Mzxid != before.Mzxid {
		t.Fatalf("/m changed by failed multi: %+v -> %+v", before, after)
	}
	if d, _, _ := c.Get("/m"); string(d) != "0" {
		t.Fatalf("data = %q after failed multi", d)
	}
	// No watch fired (a later read by b would have seen it first).
	mustExists(t, b, "/m")
	for name, ch := range map[string]<-chan zk.Event{"exists": existCh, "data": dataCh, "child": childCh} {
		if ev, ok := pending(ch); ok {
			t.Fatalf("%s watch fired on failed multi: %+v", name, ev)
		}
	}

	// A sequential create rolled back does not consume a number.
	_, err = c.Multi(create("/m/s-", nil, zk.FlagSequence), create("/nope/x", nil, 0))
	expectErr(t, "multi", err, zk.ErrNoNode)
	if p := mustCreate(t, c, "/m/s-", nil, zk.FlagSequence); p != "/m/s-0000000001" {
		t.Fatalf("sequential after rollback = %q, want /m/s-0000000001", p)
	}
}

func TestMultiCheckAndErrors(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/k", nil, 0)
	if _, err := c.Set("/k", []byte("x"), -1); err != nil { // version 1
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		ops  []interface{}
		err  error
		want []interface{}
	}{
		{
			name: "check version mismatch first",
			ops:  []interface{}{&zk.CheckVersionRequest{Path: "/k", Version: 0}, create("/k/a", nil, 0)},
			err:  zk.ErrBadVersion,
			want: []interface{}{zk.ErrBadVersion, codeRuntimeInconsistency},
		},
		{
			name: "check missing node",
			ops:  []interface{}{create("/k/a", nil, 0), &zk.CheckVersionRequest{Path: "/k/zz", Version: -1}},
			err:  zk.ErrNoNode,
			want: []interface{}{nil, zk.ErrNoNode},
		},
		{
			name: "setData bad version",
			ops:  []interface{}{&zk.SetDataRequest{Path: "/k", Data: nil, Version: 7}, create("/k/a", nil, 0), create("/k/b", nil, 0)},
			err:  zk.ErrBadVersion,
			want: []interface{}{zk.ErrBadVersion, codeRuntimeInconsistency, codeRuntimeInconsistency},
		},
		{
			name: "delete non-empty",
			ops:  []interface{}{create("/k/a", nil, 0), &zk.DeleteRequest{Path: "/k", Version: -1}},
			err:  zk.ErrNotEmpty,
			want: []interface{}{nil, zk.ErrNotEmpty},
		},
		{
			name: "ops see earlier ops: create then create child then delete parent",
			ops: []interface{}{
				create("/k/a", nil, 0), create("/k/a/b", nil, 0),
				&zk.DeleteRequest{Path: "/k/a", Version: -1},
			},
			err:  zk.ErrNotEmpty,
			want: []interface{}{nil, nil, zk.ErrNotEmpty},
		},
		{
			name: "child of ephemeral created in same multi",
			ops:  []interface{}{create("/k/e", nil, zk.FlagEphemeral), create("/k/e/x", nil, 0)},
			err:  zk.ErrNoChildrenForEphemerals,
			want: []interface{}{nil, zk.ErrNoChildrenForEphemerals},
		},
		{
			name: "invalid path",
			ops:  []interface{}{create("/k/a", nil, 0), create("/k/bad/", nil, 0)},
			err:  zk.ErrNoNode, // parent "/k/bad" is looked up before the path is validated
			want: []interface{}{nil, zk.ErrNoNode},
		},
		{
			name: "invalid path under existing parent",
			ops:  []interface{}{create("/k/a", nil, 0), create("/k/a/", nil, 0)},
			err:  zk.ErrBadArguments,
			want: []interface{}{nil, zk.ErrBadArguments},
		},
		{
			name: "invalid ACL",
			ops:  []interface{}{&zk.CreateRequest{Path: "/k/a", Acl: []zk.ACL{}}},
			err:  zk.ErrInvalidACL,
			want: []interface{}{zk.ErrInvalidACL},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Multi(tc.ops...)
			expectErr(t, "multi", err, tc.err)
			checkResults(t, res, tc.want...)
			kids, st, err := c.Children("/k")
			if err != nil || len(kids) != 0 || st.Version != 1 || st.Cversion != 0 {
				t.Fatalf("/k after failed multi: %v %+v %v", kids, st, err)
			}
		})
	}

	t.Run("check passes", func(t *testing.T) {
		res, err := c.Multi(&zk.CheckVersionRequest{Path: "/k", Version: 1}, create("/k/ok", nil, 0))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, nil, nil)
		mustExists(t, c, "/k/ok")
		res, err = c.Multi(&zk.CheckVersionRequest{Path: "/k", Version: -1})
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, res, nil)
	})
}
