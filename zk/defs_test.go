package zk_test

import (
	"reflect"
	"testing"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk"
)

// The aliases must stay aliases: values of zk's and proto's names are
// interchangeable.
var (
	_ []proto.ACL      = zk.OpenACLUnsafe
	_ proto.Id         = zk.AnyoneIDUnsafe
	_ *proto.Stat      = (*zk.Stat)(nil)
	_ proto.Perm       = zk.PermAll
	_ proto.CreateMode = zk.ModePersistent
)

// TestDefsMatchACL keeps zk's copies of ZooDefs.Ids and the digest
// function identical to package acl's, which the server applies.
func TestDefsMatchACL(t *testing.T) {
	for _, c := range []struct {
		name    string
		zk, acl []proto.ACL
	}{
		{"OpenACLUnsafe", zk.OpenACLUnsafe, acl.OpenACLUnsafe},
		{"ReadACLUnsafe", zk.ReadACLUnsafe, acl.ReadACLUnsafe},
		{"CreatorAllACL", zk.CreatorAllACL, acl.CreatorAllACL},
		{"WorldACL(PermAll)", zk.WorldACL(zk.PermAll), acl.OpenACLUnsafe},
		{"WorldACL(PermRead)", zk.WorldACL(zk.PermRead), acl.ReadACLUnsafe},
		{"AuthACL(PermAll)", zk.AuthACL(zk.PermAll), acl.CreatorAllACL},
	} {
		if !reflect.DeepEqual(c.zk, c.acl) {
			t.Errorf("zk.%s = %+v, acl has %+v", c.name, c.zk, c.acl)
		}
	}
	if want := (proto.Id{Scheme: acl.SchemeWorld, ID: acl.Anyone}); zk.AnyoneIDUnsafe != want {
		t.Errorf("AnyoneIDUnsafe = %+v, want %+v", zk.AnyoneIDUnsafe, want)
	}
	if want := acl.CreatorAllACL[0].ID; zk.AuthIDs != want {
		t.Errorf("AuthIDs = %+v, want %+v", zk.AuthIDs, want)
	}
	for _, c := range [][2]string{
		{zk.SchemeWorld, acl.SchemeWorld}, {zk.SchemeAuth, acl.SchemeAuth},
		{zk.SchemeDigest, acl.SchemeDigest}, {zk.SchemeIP, acl.SchemeIP},
		{zk.SchemeSASL, acl.SchemeSASL}, {zk.SchemeX509, acl.SchemeX509},
	} {
		if c[0] != c[1] {
			t.Errorf("scheme %q, acl has %q", c[0], c[1])
		}
	}
	for _, up := range [][2]string{
		{"bob", "secret"}, {"", ""}, {"alice", "pa:ss"}, {"a:b", "c"}, {"ünï", "cødé"}, {"super", "test"},
	} {
		if got, want := zk.DigestID(up[0], up[1]), acl.DigestID(up[0], up[1]); got != want {
			t.Errorf("DigestID(%q, %q) = %q, acl has %q", up[0], up[1], got, want)
		}
	}
}

// TestDigestACLGrants checks DigestACL against the server's rules: the ids
// an addauth of "user:password" yields are granted the perms, others not.
func TestDigestACLGrants(t *testing.T) {
	a := zk.DigestACL(zk.PermRead|zk.PermWrite, "bob", "secret")
	if len(a) != 1 || a[0].ID.Scheme != zk.SchemeDigest {
		t.Fatalf("DigestACL = %+v", a)
	}
	if _, err := acl.Fixup(a, nil); err != nil {
		t.Fatalf("server refuses DigestACL: %v", err)
	}
	ids, err := acl.Authenticate(zk.SchemeDigest, []byte("bob:secret"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !acl.Check(a, zk.PermWrite, ids) {
		t.Error("bob:secret is not granted write")
	}
	if acl.Check(a, zk.PermDelete, ids) {
		t.Error("bob:secret is granted delete")
	}
	other, _ := acl.Authenticate(zk.SchemeDigest, []byte("bob:wrong"), "")
	if acl.Check(a, zk.PermRead, other) {
		t.Error("bob:wrong is granted read")
	}
	if !acl.Check(zk.OpenACLUnsafe, zk.PermAll, nil) || acl.Check(zk.ReadACLUnsafe, zk.PermWrite, nil) {
		t.Error("world ACLs do not behave as ZooDefs.Ids")
	}
}

// TestModesMatchProto pins the create modes and permissions to the wire
// values.
func TestModesMatchProto(t *testing.T) {
	modes := []zk.CreateMode{zk.ModePersistent, zk.ModeEphemeral, zk.ModePersistentSequential,
		zk.ModeEphemeralSequential, zk.ModeContainer, zk.ModePersistentWithTTL, zk.ModePersistentSequentialWithTTL}
	for i, m := range modes {
		if int(m) != i { // CreateMode.toFlag
			t.Errorf("mode %v = %d, want %d", m, m, i)
		}
	}
	if zk.PermRead != 1 || zk.PermWrite != 2 || zk.PermCreate != 4 || zk.PermDelete != 8 || zk.PermAdmin != 16 || zk.PermAll != 31 {
		t.Error("permissions differ from ZooDefs.Perms")
	}
}
