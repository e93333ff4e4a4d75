package gozk

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkgo/zkgo/zktest"
)

// ZooKeeper error codes, for the raw client and for codes go-zookeeper has
// no sentinel for (-2, -6).
const (
	codeRuntimeInconsistency = -2
	codeUnimplemented        = -6
	codeBadArguments         = -8
	codeNoNode               = -101
	codeNodeExists           = -110
)

func TestCreateModes(t *testing.T) {
	_, c := start(t)

	t.Run("persistent", func(t *testing.T) {
		if p := mustCreate(t, c, "/p", []byte("data"), zk.FlagPersistent); p != "/p" {
			t.Fatalf("path = %q", p)
		}
		st := mustExists(t, c, "/p")
		if st.EphemeralOwner != 0 || st.DataLength != 4 || st.Version != 0 || st.NumChildren != 0 {
			t.Fatalf("stat = %+v", st)
		}
	})

	t.Run("ephemeral", func(t *testing.T) {
		if p := mustCreate(t, c, "/e", nil, zk.FlagEphemeral); p != "/e" {
			t.Fatalf("path = %q", p)
		}
		if st := mustExists(t, c, "/e"); st.EphemeralOwner != c.SessionID() {
			t.Fatalf("ephemeralOwner = %#x, want session %#x", st.EphemeralOwner, c.SessionID())
		}
	})

	t.Run("sequential", func(t *testing.T) {
		mustCreate(t, c, "/seq", nil, 0)
		for i, want := range []string{"/seq/n-0000000000", "/seq/n-0000000001"} {
			if p := mustCreate(t, c, "/seq/n-", nil, zk.FlagSequence); p != want {
				t.Fatalf("create %d = %q, want %q", i, p, want)
			}
		}
		if err := c.Delete("/seq/n-0000000001", -1); err != nil {
			t.Fatal(err)
		}
		// The suffix is the parent's cversion, which in ZooKeeper 3.8 only
		// child creation increments: a deleted number is never reused.
		if p := mustCreate(t, c, "/seq/n-", nil, zk.FlagSequence); p != "/seq/n-0000000002" {
			t.Fatalf("create after delete = %q, want /seq/n-0000000002", p)
		}
		// The counter is per parent, shared by all prefixes and modes.
		p := mustCreate(t, c, "/seq/e-", nil, zk.FlagEphemeralSequential)
		if p != "/seq/e-0000000003" {
			t.Fatalf("ephemeral sequential = %q, want /seq/e-0000000003", p)
		}
		if st := mustExists(t, c, p); st.EphemeralOwner != c.SessionID() {
			t.Fatalf("ephemeralOwner = %#x, want %#x", st.EphemeralOwner, c.SessionID())
		}
		st := mustExists(t, c, "/seq")
		// Clients see cversion as child creates plus deletes (4 + 1).
		if st.Cversion != 5 || st.NumChildren != 3 {
			t.Fatalf("/seq cversion=%d numChildren=%d, want 5 and 3", st.Cversion, st.NumChildren)
		}
		kids, _, err := c.Children("/seq")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"e-0000000003", "n-0000000000", "n-0000000002"}
		if got := sorted(kids); !equal(got, want) {
			t.Fatalf("children = %v, want %v", got, want)
		}
	})

	t.Run("sequential trailing slash", func(t *testing.T) {
		mustCreate(t, c, "/m", nil, 0)
		if p := mustCreate(t, c, "/m/", nil, zk.FlagSequence); p != "/m/0000000000" {
			t.Fatalf("path = %q, want /m/0000000000", p)
		}
		if p := mustCreate(t, c, "/m/", nil, zk.FlagEphemeralSequential); p != "/m/0000000001" {
			t.Fatalf("path = %q, want /m/0000000001", p)
		}
	})

	t.Run("sequential suffix is zero-padded to 10 digits", func(t *testing.T) {
		mustCreate(t, c, "/fmt", nil, 0)
		p := mustCreate(t, c, "/fmt/x", nil, zk.FlagSequence)
		if p != "/fmt/x0000000000" {
			t.Fatalf("path = %q", p)
		}
	})

	t.Run("errors", func(t *testing.T) {
		mustCreate(t, c, "/dup", nil, 0)
		_, err := c.Create("/dup", nil, 0, openACL)
		expectErr(t, "create existing", err, zk.ErrNodeExists)
		_, err = c.Create("/", nil, 0, openACL)
		expectErr(t, "create /", err, zk.ErrNodeExists)
		_, err = c.Create("/missing/child", nil, 0, openACL)
		expectErr(t, "create under missing parent", err, zk.ErrNoNode)
		_, err = c.Create("/missing/child", nil, zk.FlagSequence, openACL)
		expectErr(t, "sequential under missing parent", err, zk.ErrNoNode)
		_, err = c.Create("/e/child", nil, 0, openACL)
		expectErr(t, "child of ephemeral", err, zk.ErrNoChildrenForEphemerals)
		_, err = c.Create("/e/child", nil, zk.FlagEphemeralSequential, openACL)
		expectErr(t, "sequential child of ephemeral", err, zk.ErrNoChildrenForEphemerals)
		// A failed create does not change the parent.
		if st := mustExists(t, c, "/e"); st.Cversion != 0 || st.NumChildren != 0 {
			t.Fatalf("/e stat after failed creates = %+v", st)
		}
	})
}

func equal(a, b []string) bool {
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

// TestCreateInvalidPaths covers invalid paths go-zookeeper sends as is
// (its own check misses them); the server must reject them with
// ZBADARGUMENTS. ZooKeeper's PathUtils.validatePath works on Java UTF-16
// chars and rejects U+D800..U+F8FF, so a private-use character and any
// non-BMP character (a surrogate pair in Java) are invalid.
func TestCreateInvalidPaths(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/a", nil, 0)
	for _, tc := range []struct{ name, path string }{
		{"private use", "/a/x\ue000"},
		{"surrogate range", "/a/x\ud7ff\U00010000"},
		{"non-BMP emoji", "/a/x\U0001F600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Create(tc.path, nil, 0, openACL)
			expectErr(t, "create "+tc.path, err, zk.ErrBadArguments)
		})
	}
	t.Run("valid unusual names", func(t *testing.T) {
		for _, p := range []string{"/a/.x", "/a/...", "/a/x.", "/a/\u00fc", "/a/x y", "/a/zookeeper", "/a/\ud7ff", "/a/\uf900"} {
			mustCreate(t, c, p, nil, 0)
		}
	})
}

// TestCreateRaw uses the hand-written client for requests go-zookeeper
// refuses to send or whose replies it does not expose.
func TestCreateRaw(t *testing.T) {
	srv, c := start(t)
	mustCreate(t, c, "/a", nil, 0)
	r := rawDial(t, srv.Addr())

	t.Run("invalid paths", func(t *testing.T) {
		for _, tc := range []struct {
			name, path string
			flags      int32
			want       int32
		}{
			{"empty", "", 0, codeBadArguments},
			{"relative", "a", 0, codeBadArguments},
			{"trailing slash", "/a/", 0, codeBadArguments},
			{"double slash", "//a", 0, codeBadArguments},
			{"dot", "/a/.", 0, codeBadArguments},
			{"dotdot", "/a/..", 0, codeBadArguments},
			{"root dot", "/.", 0, codeBadArguments},
			{"nul", "/a/x\x00y", 0, codeBadArguments},
			{"nul sequential", "/a/x\x00", zk.FlagSequence, codeBadArguments},
			// ZooKeeper looks the parent up before validating the whole
			// path: "/a/" is no node.
			{"empty component below existing node", "/a//b", 0, codeNoNode},
			{"control char", "/a/x\x01y", 0, codeBadArguments},
			{"unit separator", "/a/x\x1f", 0, codeBadArguments},
			{"DEL", "/a/x\x7f", 0, codeBadArguments},
			{"C1 control", "/a/x\u0085", 0, codeBadArguments},
			{"specials block", "/a/x\ufff5", 0, codeBadArguments},
			{"invalid UTF-8 (U+FFFD in Java)", "/a/x\xff", 0, codeBadArguments},
			{"unknown flags", "/a/f", 99, codeBadArguments},
			{"negative flags", "/a/f", -1, codeBadArguments},
			// CreateMode PERSISTENT_WITH_TTL through plain create: TTL
			// nodes are disabled (no extended types) -> ZUNIMPLEMENTED.
			{"ttl flag without extended types", "/a/f", 5, codeUnimplemented},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, _ := r.call(opCreate, createBody(tc.path, nil, openACL, tc.flags))
				if code != tc.want {
					t.Fatalf("create %q flags %d: code %d, want %d", tc.path, tc.flags, code, tc.want)
				}
			})
		}
		kids, _, err := c.Children("/a")
		if err != nil || len(kids) != 0 {
			t.Fatalf("children of /a = %v, %v; want none", kids, err)
		}
	})

	t.Run("sequential suffix makes a dot name valid", func(t *testing.T) {
		// "/a/." is validated after the suffix is appended.
		code, d := r.call(opCreate, createBody("/a/.", nil, openACL, zk.FlagSequence))
		if p := d.str(); code != 0 || p != "/a/.0000000000" {
			t.Fatalf("sequential /a/.: code %d path %q, want /a/.0000000000", code, p)
		}
	})

	t.Run("create2 stat", func(t *testing.T) {
		code, d := r.call(opCreate2, createBody("/c2", []byte("abc"), openACL, 0))
		if code != 0 {
			t.Fatalf("create2: code %d", code)
		}
		path := d.str()
		st := d.stat()
		if d.err || path != "/c2" {
			t.Fatalf("create2 reply: path %q decodeErr %v", path, d.err)
		}
		if st.Czxid <= 0 || st.Czxid != st.Mzxid || st.Czxid != st.Pzxid {
			t.Fatalf("create2 zxids: %+v (want czxid == mzxid == pzxid > 0)", st)
		}
		if st.Version != 0 || st.Cversion != 0 || st.Aversion != 0 || st.DataLength != 3 ||
			st.NumChildren != 0 || st.EphemeralOwner != 0 || st.Ctime != st.Mtime || st.Ctime <= 0 {
			t.Fatalf("create2 stat = %+v", st)
		}
		if got := mustExists(t, c, "/c2"); *got != st {
			t.Fatalf("exists stat %+v != create2 stat %+v", *got, st)
		}
		// Ephemeral create2 reports the owner.
		code, d = r.call(opCreate2, createBody("/c2e", nil, openACL, zk.FlagEphemeral))
		d.str()
		if st := d.stat(); code != 0 || st.EphemeralOwner != r.sessionID || st.DataLength != 0 {
			t.Fatalf("ephemeral create2: code %d stat %+v (session %#x)", code, st, r.sessionID)
		}
		code, _ = r.call(opCreate2, createBody("/c2", nil, openACL, 0))
		if code != codeNodeExists {
			t.Fatalf("create2 existing: code %d", code)
		}
	})

	t.Run("createContainer returns stat", func(t *testing.T) {
		code, d := r.call(opCreateContainer, createBody("/cc", []byte("x"), openACL, zk.FlagContainer))
		path := d.str()
		st := d.stat()
		if code != 0 || path != "/cc" || d.err {
			t.Fatalf("createContainer: code %d path %q", code, path)
		}
		if st.EphemeralOwner != 0 || st.DataLength != 1 || st.Czxid != st.Pzxid { // containers show owner 0
			t.Fatalf("container stat = %+v", st)
		}
	})

	t.Run("createTTL without extended types", func(t *testing.T) {
		code, _ := r.call(opCreateTTL, createTTLBody("/ttl", nil, openACL, zk.FlagTTL, 1000))
		if code != codeUnimplemented {
			t.Fatalf("createTTL: code %d, want ZUNIMPLEMENTED (-6)", code)
		}
	})

	t.Run("read paths", func(t *testing.T) {
		// exists rejects NUL; getData just does not find the node.
		if code, _ := r.call(opExists, pathWatchBody("/a\x00")); code != codeBadArguments {
			t.Fatalf("exists with NUL: code %d", code)
		}
		if code, _ := r.call(opGetData, pathWatchBody("/a\x00")); code != codeNoNode {
			t.Fatalf("getData with NUL: code %d", code)
		}
	})
}

func TestContainer(t *testing.T) {
	_, c := start(t)
	p, err := c.CreateContainer("/c", []byte("x"), zk.FlagContainer, openACL)
	if err != nil || p != "/c" {
		t.Fatalf("CreateContainer = %q, %v", p, err)
	}
	// ZooKeeper hides the container marker from clients (getClientEphemeralOwner).
	if st := mustExists(t, c, "/c"); st.EphemeralOwner != 0 {
		t.Fatalf("container ephemeralOwner = %#x, want 0", st.EphemeralOwner)
	}
	// A container that never had a child is not reaped; one that still has
	// children is not reaped.
	if _, err := c.CreateContainer("/never", nil, zk.FlagContainer, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateContainer("/busy", nil, zk.FlagContainer, openACL); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "/busy/kid", nil, 0)
	// Containers may have sequential and ephemeral children.
	if p := mustCreate(t, c, "/c/s-", nil, zk.FlagEphemeralSequential); p != "/c/s-0000000000" {
		t.Fatalf("child = %q", p)
	}

	ok, _, ch, err := c.ExistsW("/c")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := c.Delete("/c/s-0000000000", -1); err != nil {
		t.Fatal(err)
	}
	expectWatch(t, ch, zk.EventNodeDeleted, "/c")
	mustNotExist(t, c, "/c")
	mustExists(t, c, "/never")
	mustExists(t, c, "/busy")

	// A container cannot be ephemeral / a child of an ephemeral.
	mustCreate(t, c, "/eph", nil, zk.FlagEphemeral)
	_, err = c.CreateContainer("/eph/c", nil, zk.FlagContainer, openACL)
	expectErr(t, "container under ephemeral", err, zk.ErrNoChildrenForEphemerals)
}

func TestTTL(t *testing.T) {
	t.Run("disabled", func(t *testing.T) {
		_, c := start(t)
		_, err := c.CreateTTL("/t", nil, zk.FlagTTL, openACL, time.Second)
		expectUnknownCode(t, "CreateTTL without extended types", err, codeUnimplemented)
		mustNotExist(t, c, "/t")
	})

	t.Run("enabled", func(t *testing.T) {
		_, c := start(t, zktest.WithExtendedTypes())
		const ttl = 300 * time.Millisecond
		p, err := c.CreateTTL("/t", []byte("x"), zk.FlagTTL, openACL, ttl)
		if err != nil || p != "/t" {
			t.Fatalf("CreateTTL = %q, %v", p, err)
		}
		// ZooKeeper hides the TTL marker from clients (getClientEphemeralOwner).
		wantOwner := int64(0)
		if st := mustExists(t, c, "/t"); st.EphemeralOwner != wantOwner {
			t.Fatalf("TTL ephemeralOwner = %#x, want %#x", st.EphemeralOwner, wantOwner)
		}
		// A TTL node with children is not reaped.
		if _, err := c.CreateTTL("/kept", nil, zk.FlagTTL, openACL, ttl); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, c, "/kept/kid", nil, 0)
		// Sequential TTL.
		mustCreate(t, c, "/sq", nil, 0)
		p, err = c.CreateTTL("/sq/t-", nil, zk.FlagPersistentSequentialWithTTL, openACL, time.Hour)
		if err != nil || p != "/sq/t-0000000000" {
			t.Fatalf("sequential TTL = %q, %v", p, err)
		}

		ok, _, ch, err := c.ExistsW("/t")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		expectWatch(t, ch, zk.EventNodeDeleted, "/t")
		mustExists(t, c, "/kept")
		mustExists(t, c, "/sq/t-0000000000")

		// Invalid TTLs: must be in (0, 2^40-1] ms.
		_, err = c.CreateTTL("/bad", nil, zk.FlagTTL, openACL, 0)
		expectErr(t, "ttl 0", err, zk.ErrBadArguments)
		_, err = c.CreateTTL("/bad", nil, zk.FlagTTL, openACL, time.Duration(1<<40)*time.Millisecond)
		expectErr(t, "ttl 2^40", err, zk.ErrBadArguments)
		mustNotExist(t, c, "/bad")
	})

	t.Run("enabled raw", func(t *testing.T) {
		srv, _ := start(t, zktest.WithExtendedTypes())
		r := rawDial(t, srv.Addr())
		// createTTL with a non-TTL mode and plain create with a TTL mode are
		// both bad arguments (EphemeralType.validateTTL).
		if code, _ := r.call(opCreateTTL, createTTLBody("/x", nil, openACL, 0, 1000)); code != codeBadArguments {
			t.Fatalf("createTTL with persistent mode: code %d", code)
		}
		if code, _ := r.call(opCreate, createBody("/x", nil, openACL, zk.FlagTTL)); code != codeBadArguments {
			t.Fatalf("create with TTL mode: code %d", code)
		}
		code, d := r.call(opCreateTTL, createTTLBody("/x", []byte("ab"), openACL, zk.FlagTTL, 60000))
		path := d.str()
		st := d.stat()
		if code != 0 || path != "/x" || st.DataLength != 2 || st.EphemeralOwner != 0 {
			t.Fatalf("createTTL: code %d path %q stat %+v", code, path, st)
		}
	})
}
