package gozk

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkgo/zkgo/zktest"
)

// digestID is ZooKeeper's DigestAuthenticationProvider.generateDigest.
func digestID(user, pass string) string {
	h := sha1.Sum([]byte(user + ":" + pass))
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

func addAuth(t *testing.T, c *client, userPass string) {
	t.Helper()
	if err := c.AddAuth("digest", []byte(userPass)); err != nil {
		t.Fatalf("AddAuth %s: %v", userPass, err)
	}
}

func TestDigestACL(t *testing.T) {
	srv, owner := start(t)
	addAuth(t, owner, "user:pass")
	acl := zk.DigestACL(zk.PermAll, "user", "pass")
	if acl[0].ID != digestID("user", "pass") {
		t.Fatalf("go-zookeeper digest %q != %q", acl[0].ID, digestID("user", "pass"))
	}
	if _, err := owner.Create("/sec", []byte("secret"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create("/sec/kid", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if d, _, err := owner.Get("/sec"); err != nil || string(d) != "secret" {
		t.Fatalf("owner get = %q, %v", d, err)
	}
	got, _, err := owner.GetACL("/sec")
	if err != nil || len(got) != 1 || got[0] != acl[0] {
		t.Fatalf("getACL = %v, %v; want %v", got, err, acl)
	}

	anon := connect(t, srv.Addr())
	wrong := connect(t, srv.Addr())
	// The digest provider accepts any user:password pair; it just maps to
	// an id that does not match the ACL.
	addAuth(t, wrong, "user:wrong")
	for name, c := range map[string]*client{"unauthenticated": anon, "wrong password": wrong} {
		t.Run(name, func(t *testing.T) {
			_, _, err := c.Get("/sec")
			expectErr(t, "get", err, zk.ErrNoAuth)
			_, _, _, err = c.GetW("/sec")
			expectErr(t, "getW", err, zk.ErrNoAuth)
			_, err = c.Set("/sec", []byte("x"), -1)
			expectErr(t, "set", err, zk.ErrNoAuth)
			_, _, err = c.Children("/sec")
			expectErr(t, "children", err, zk.ErrNoAuth)
			_, err = c.Create("/sec/new", nil, 0, openACL)
			expectErr(t, "create child", err, zk.ErrNoAuth)
			expectErr(t, "delete child", c.Delete("/sec/kid", -1), zk.ErrNoAuth)
			_, _, err = c.GetACL("/sec")
			expectErr(t, "getACL", err, zk.ErrNoAuth)
			_, err = c.SetACL("/sec", openACL, -1)
			expectErr(t, "setACL", err, zk.ErrNoAuth)
			res, err := c.Multi(&zk.CheckVersionRequest{Path: "/sec", Version: -1})
			expectErr(t, "multi check", err, zk.ErrNoAuth)
			checkResults(t, res, zk.ErrNoAuth)
			// Permission is checked before the node is looked up on the
			// parent side: deleting a missing child is still NoAuth.
			expectErr(t, "delete missing child", c.Delete("/sec/missing", -1), zk.ErrNoAuth)
		})
	}
	if d, st, err := owner.Get("/sec"); err != nil || string(d) != "secret" || st.Version != 0 {
		t.Fatalf("data changed: %q %+v %v", d, st, err)
	}

	// Authenticating later grants access on the same session.
	addAuth(t, anon, "user:pass")
	if d, _, err := anon.Get("/sec"); err != nil || string(d) != "secret" {
		t.Fatalf("get after auth = %q, %v", d, err)
	}
	// Deleting a node needs DELETE on its parent, not on the node: the
	// root is open, so anyone may delete /sec once it is empty.
	if err := anon.Delete("/sec/kid", -1); err != nil {
		t.Fatal(err)
	}
	if err := wrong.Delete("/sec", -1); err != nil {
		t.Fatalf("delete /sec with open parent: %v", err)
	}
}

func TestPermissionBits(t *testing.T) {
	_, c := start(t)
	for _, tc := range []struct {
		perm                             int32
		read, write, create, del, setACL bool
	}{
		{zk.PermRead, true, false, false, false, false},
		{zk.PermWrite, false, true, false, false, false},
		{zk.PermCreate, false, false, true, false, false},
		{zk.PermDelete, false, false, false, true, false},
		{zk.PermAdmin, false, false, false, false, true},
	} {
		p := fmt.Sprintf("/p%d", tc.perm)
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, c, p+"/victim", nil, 0)
		if _, err := c.SetACL(p, zk.WorldACL(tc.perm), -1); err != nil {
			t.Fatal(err)
		}
		check := func(op string, allowed bool, err error) {
			t.Helper()
			if allowed && err != nil {
				t.Fatalf("perm %#x %s: %v, want allowed", tc.perm, op, err)
			}
			if !allowed && err != zk.ErrNoAuth {
				t.Fatalf("perm %#x %s: %v, want ErrNoAuth", tc.perm, op, err)
			}
		}
		_, _, err := c.Get(p)
		check("get", tc.read, err)
		_, _, err = c.Children(p)
		check("children", tc.read, err)
		_, err = c.Set(p, []byte("x"), -1)
		check("set", tc.write, err)
		_, err = c.Create(p+"/new", nil, 0, openACL)
		check("create child", tc.create, err)
		err = c.Delete(p+"/victim", -1)
		check("delete child", tc.del, err)
		// getACL needs READ or ADMIN.
		_, _, err = c.GetACL(p)
		check("getACL", tc.read || tc.setACL, err)
		_, err = c.SetACL(p, zk.WorldACL(tc.perm), -1)
		check("setACL", tc.setACL, err)
	}
}

func TestWorldReadOnly(t *testing.T) {
	_, c := start(t)
	ro := zk.WorldACL(zk.PermRead)
	if _, err := c.Create("/ro", []byte("r"), 0, ro); err != nil {
		t.Fatal(err)
	}
	if d, _, err := c.Get("/ro"); err != nil || string(d) != "r" {
		t.Fatalf("get = %q, %v", d, err)
	}
	// Even the creator cannot write.
	_, err := c.Set("/ro", []byte("w"), -1)
	expectErr(t, "set", err, zk.ErrNoAuth)
	_, err = c.Create("/ro/kid", nil, 0, openACL)
	expectErr(t, "create child", err, zk.ErrNoAuth)
	_, err = c.SetACL("/ro", openACL, -1)
	expectErr(t, "setACL", err, zk.ErrNoAuth)
	got, _, err := c.GetACL("/ro")
	if err != nil || len(got) != 1 || got[0] != ro[0] {
		t.Fatalf("getACL = %v, %v", got, err)
	}
	// /zookeeper/config is read-only in ZooKeeper 3.5+.
	_, err = c.Set("/zookeeper/config", []byte("x"), -1)
	expectErr(t, "set /zookeeper/config", err, zk.ErrNoAuth)
	if err := c.Delete("/ro", -1); err != nil {
		t.Fatalf("delete /ro (root is open): %v", err)
	}
}

func TestGetACLMasksDigestsWithoutAdmin(t *testing.T) {
	srv, owner := start(t)
	acl := []zk.ACL{
		{Perms: zk.PermRead, Scheme: "world", ID: "anyone"},
		{Perms: zk.PermAll, Scheme: "digest", ID: digestID("user", "pass")},
	}
	if _, err := owner.Create("/m", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	other := connect(t, srv.Addr())
	got, _, err := other.GetACL("/m")
	if err != nil {
		t.Fatal(err)
	}
	want := []zk.ACL{acl[0], {Perms: zk.PermAll, Scheme: "digest", ID: "user:x"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("getACL without ADMIN = %v, want %v", got, want)
	}
	addAuth(t, other, "user:pass")
	got, _, err = other.GetACL("/m")
	if err != nil || len(got) != 2 || got[0] != acl[0] || got[1] != acl[1] {
		t.Fatalf("getACL with ADMIN = %v, %v; want %v", got, err, acl)
	}
}

func TestAuthSchemeACL(t *testing.T) {
	srv, c := start(t)
	// "auth" with no authenticated identity (the ip id does not count).
	_, err := c.Create("/a", nil, 0, zk.AuthACL(zk.PermAll))
	expectErr(t, "create with auth ACL, unauthenticated", err, zk.ErrInvalidACL)
	mustNotExist(t, c, "/a")

	addAuth(t, c, "u1:p1")
	addAuth(t, c, "u2:p2")
	if _, err := c.Create("/a", nil, 0, zk.AuthACL(zk.PermRead|zk.PermWrite)); err != nil {
		t.Fatal(err)
	}
	// Expanded to one entry per authenticated digest identity (the ip id
	// does not count). c lacks ADMIN, so getACL masks the digests.
	got, _, err := c.GetACL("/a")
	if err != nil {
		t.Fatal(err)
	}
	masked := map[zk.ACL]bool{
		{Perms: zk.PermRead | zk.PermWrite, Scheme: "digest", ID: "u1:x"}: true,
		{Perms: zk.PermRead | zk.PermWrite, Scheme: "digest", ID: "u2:x"}: true,
	}
	if len(got) != 2 || !masked[got[0]] || !masked[got[1]] || got[0] == got[1] {
		t.Fatalf("auth ACL expanded to %v, want %v", got, masked)
	}
	u1 := connect(t, srv.Addr())
	addAuth(t, u1, "u1:p1")
	if _, err := u1.Set("/a", []byte("x"), -1); err != nil {
		t.Fatalf("first identity cannot write: %v", err)
	}
	other := connect(t, srv.Addr())
	addAuth(t, other, "u2:p2")
	if _, err := other.Set("/a", []byte("x"), -1); err != nil {
		t.Fatalf("second identity cannot write: %v", err)
	}
	_, err = other.SetACL("/a", zk.AuthACL(zk.PermAll), -1)
	expectErr(t, "setACL without ADMIN", err, zk.ErrNoAuth)

	// setACL with "auth" expands too, and fails without identities.
	mustCreate(t, c, "/b", nil, 0)
	anon := connect(t, srv.Addr())
	_, err = anon.SetACL("/b", zk.AuthACL(zk.PermAll), -1)
	expectErr(t, "setACL auth unauthenticated", err, zk.ErrInvalidACL)
	if _, err := other.SetACL("/b", zk.AuthACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	got, _, err = other.GetACL("/b")
	if err != nil || len(got) != 1 || got[0] != (zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: digestID("u2", "p2")}) {
		t.Fatalf("getACL /b = %v, %v", got, err)
	}
}

func TestInvalidACL(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/x", nil, 0)
	for _, tc := range []struct {
		name string
		acl  []zk.ACL
	}{
		{"empty", []zk.ACL{}},
		{"nil", nil},
		{"unknown scheme", []zk.ACL{{Perms: zk.PermAll, Scheme: "nosuch", ID: "x"}}},
		{"world not anyone", []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "nobody"}}},
		{"digest without colon", []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "user"}}},
		{"bad ip", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "300.1.2.3"}}},
		{"bad ip prefix", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1/33"}}},
		{"valid then invalid", []zk.ACL{openACL[0], {Perms: zk.PermAll, Scheme: "nosuch", ID: "x"}}},
		{"super is not an ACL scheme", []zk.ACL{{Perms: zk.PermAll, Scheme: "super", ID: ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Create("/y", nil, 0, tc.acl)
			expectErr(t, "create", err, zk.ErrInvalidACL)
			mustNotExist(t, c, "/y")
			_, err = c.SetACL("/x", tc.acl, -1)
			expectErr(t, "setACL", err, zk.ErrInvalidACL)
		})
	}
	if st := mustExists(t, c, "/x"); st.Aversion != 0 {
		t.Fatalf("aversion = %d after failed setACLs", st.Aversion)
	}
	// Duplicate entries are collapsed (ZOOKEEPER-1877).
	dup := []zk.ACL{openACL[0], openACL[0]}
	mustCreateACL(t, c, "/dup", dup)
	if got, _, err := c.GetACL("/dup"); err != nil || len(got) != 1 || got[0] != openACL[0] {
		t.Fatalf("getACL of duplicate ACL = %v, %v", got, err)
	}
}

func mustCreateACL(t *testing.T, c *client, path string, acl []zk.ACL) {
	t.Helper()
	if _, err := c.Create(path, nil, 0, acl); err != nil {
		t.Fatalf("create %s with %v: %v", path, acl, err)
	}
}

func TestIPACL(t *testing.T) {
	_, c := start(t)
	mustCreateACL(t, c, "/ip", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}})
	mustCreateACL(t, c, "/net", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.0/8"}})
	mustCreateACL(t, c, "/elsewhere", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.0.0.0/8"}})
	mustCreateACL(t, c, "/host", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.1.2.3"}})
	for _, p := range []string{"/ip", "/net"} {
		if _, err := c.Set(p, []byte("ok"), -1); err != nil {
			t.Fatalf("set %s from 127.0.0.1: %v", p, err)
		}
		mustCreate(t, c, p+"/kid", nil, 0)
	}
	for _, p := range []string{"/elsewhere", "/host"} {
		_, _, err := c.Get(p)
		expectErr(t, "get "+p, err, zk.ErrNoAuth)
	}
	got, _, err := c.GetACL("/net")
	if err != nil || len(got) != 1 || got[0] != (zk.ACL{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.0/8"}) {
		t.Fatalf("getACL = %v, %v", got, err)
	}
}

func TestSuperDigest(t *testing.T) {
	srv, c := start(t, zktest.WithSuperDigest(digestID("super", "secret")))
	addAuth(t, c, "user:pass")
	if _, err := c.Create("/locked", []byte("d"), 0, zk.DigestACL(zk.PermAll, "user", "pass")); err != nil {
		t.Fatal(err)
	}
	mustCreateACL(t, c, "/locked/kid", zk.DigestACL(zk.PermAll, "user", "pass"))
	mustCreateACL(t, c, "/none", []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.9.9.9"}})

	wrongSuper := connect(t, srv.Addr())
	addAuth(t, wrongSuper, "super:guess")
	_, _, err := wrongSuper.Get("/locked")
	expectErr(t, "get with wrong super password", err, zk.ErrNoAuth)

	su := connect(t, srv.Addr())
	addAuth(t, su, "super:secret")
	if d, _, err := su.Get("/locked"); err != nil || string(d) != "d" {
		t.Fatalf("super get = %q, %v", d, err)
	}
	if _, _, err := su.Get("/none"); err != nil {
		t.Fatalf("super get /none: %v", err)
	}
	// The super user sees the ACL unmasked (it has ADMIN everywhere).
	got, _, err := su.GetACL("/locked")
	if err != nil || len(got) != 1 || got[0].ID != digestID("user", "pass") {
		t.Fatalf("super getACL = %v, %v", got, err)
	}
	if _, err := su.Set("/locked", []byte("su"), -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, su, "/locked/bysuper", nil, 0)
	if err := su.Delete("/locked/kid", -1); err != nil {
		t.Fatal(err)
	}
	if _, err := su.SetACL("/none", openACL, -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get("/none"); err != nil {
		t.Fatalf("get /none after super opened it: %v", err)
	}
}

func TestAddAuthUnknownScheme(t *testing.T) {
	_, c := start(t)
	mustCreate(t, c, "/eph", nil, zk.FlagEphemeral)
	sid := c.SessionID()
	from := len(c.Events())
	// ZooKeeper answers ZAUTHFAILED and closes the connection; the session
	// survives and go-zookeeper resumes it on a new connection.
	err := c.AddAuth("nosuch", []byte("x"))
	expectErr(t, "AddAuth unknown scheme", err, zk.ErrAuthFailed)
	i := c.waitState(from, zk.StateDisconnected)
	c.waitState(i, zk.StateHasSession)
	if c.SessionID() != sid {
		t.Fatalf("session changed from %#x to %#x", sid, c.SessionID())
	}
	if st := mustExists(t, c, "/eph"); st.EphemeralOwner != sid {
		t.Fatalf("ephemeral owner %#x, want %#x", st.EphemeralOwner, sid)
	}
}
