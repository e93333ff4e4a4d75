package acl

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"github.com/zkgo/zkgo/internal/javanum"
	"reflect"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

func digest(id string) proto.Id { return proto.Id{Scheme: SchemeDigest, ID: id} }
func ip(id string) proto.Id     { return proto.Id{Scheme: SchemeIP, ID: id} }

var (
	world = proto.Id{Scheme: SchemeWorld, ID: Anyone}
	super = proto.Id{Scheme: SchemeSuper, ID: ""}
)

// refDigest computes the expected digest id directly from its definition.
func refDigest(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

func TestDigestID(t *testing.T) {
	tt := []struct {
		user, password string
		want           string
	}{
		// Values asserted by ZooKeeper's own tests and documentation.
		{"super", "test", "super:D/InIHSb7yEEbrWz8b9l71RjZJU="},
		{"super", "zookeeper", "super:yyuhPKumRtNj4r8GnSbbwuq1vhE="},
		{"user", "test", "user:tl+z3z0vO6PfPfEENfLF96E6pM0="},
		{"user1", "12345", "user1:+owfoSBn/am19roBPzR1/MfCblE="},
		{"zookeeper", "admin", "zookeeper:qW/HnTfCSoQpB5G8LgkwT3IbiFc="},
		// Computed independently (openssl sha1 | base64).
		{"super", "superpw", "super:g9oN2HttPfn8MMWJZ2r45Np/LIA="},
		{"jack", "jack", "jack:p4FVWKzcf0HsYG6jAmAOvoHGCt8="},
		{"", "", ":BaefBs8/Z/cm2uaNGKIpD2yaUMk="}, // sha1(":")
		{"ünï", "pässwörd", refDigest("ünï", "pässwörd")},
		{"a", "b:c", "a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0="},
	}
	for _, tc := range tt {
		if got := DigestID(tc.user, tc.password); got != tc.want {
			t.Errorf("DigestID(%q, %q) = %q, want %q", tc.user, tc.password, got, tc.want)
		}
		if got, want := DigestID(tc.user, tc.password), refDigest(tc.user, tc.password); got != want {
			t.Errorf("DigestID(%q, %q) = %q, reference %q", tc.user, tc.password, got, want)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	superDigest := "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
	tt := []struct {
		name        string
		scheme      string
		auth        string
		superDigest string
		want        []proto.Id
		wantErr     error
	}{
		{"digest", "digest", "user:test", superDigest,
			[]proto.Id{digest("user:tl+z3z0vO6PfPfEENfLF96E6pM0=")}, nil},
		{"super", "digest", "super:test", superDigest,
			[]proto.Id{super, digest("super:D/InIHSb7yEEbrWz8b9l71RjZJU=")}, nil},
		{"super wrong password", "digest", "super:nope", superDigest,
			[]proto.Id{digest(DigestID("super", "nope"))}, nil},
		{"super not configured", "digest", "super:test", "",
			[]proto.Id{digest("super:D/InIHSb7yEEbrWz8b9l71RjZJU=")}, nil},
		{"password with colons", "digest", "a:b:c", "",
			[]proto.Id{digest("a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0=")}, nil},
		{"no colon still succeeds", "digest", "nocolon", "",
			[]proto.Id{digest("nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g=")}, nil},
		{"empty payload", "digest", "", "",
			[]proto.Id{digest(":2jmj7l5rSw0yVb/vlWAYkK/YBwk=")}, nil},
		{"ip adds nothing new", "ip", "whatever", "", nil, nil},
		{"world", "world", "anyone", "", nil, ErrAuthFailed},
		{"auth", "auth", "", "", nil, ErrAuthFailed},
		{"super scheme", "super", "test", superDigest, nil, ErrAuthFailed},
		{"sasl", "sasl", "x", "", nil, ErrAuthFailed},
		{"x509", "x509", "x", "", nil, ErrAuthFailed},
		{"unknown", "kerberos", "x", "", nil, ErrAuthFailed},
		{"scheme is case-sensitive", "Digest", "user:test", "", nil, ErrAuthFailed},
		{"empty scheme", "", "user:test", "", nil, ErrAuthFailed},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Authenticate(tc.scheme, []byte(tc.auth), tc.superDigest)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ids = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAuthenticateInvalidUTF8(t *testing.T) {
	got, err := Authenticate("digest", []byte("u:\xffp"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := refDigest("u", "\uFFFDp")
	if len(got) != 1 || got[0].ID != want {
		t.Errorf("ids = %v, want digest %q", got, want)
	}
}

func TestFixup(t *testing.T) {
	user := digest("user:tl+z3z0vO6PfPfEENfLF96E6pM0=")
	other := digest("jack:p4FVWKzcf0HsYG6jAmAOvoHGCt8=")
	session := []proto.Id{ip("127.0.0.1"), user}
	a := func(p proto.Perm, id proto.Id) proto.ACL { return proto.ACL{Perms: p, ID: id} }
	auth := func(p proto.Perm, id string) proto.ACL {
		return proto.ACL{Perms: p, ID: proto.Id{Scheme: SchemeAuth, ID: id}}
	}
	tt := []struct {
		name string
		acls []proto.ACL
		ids  []proto.Id
		want []proto.ACL // nil: ErrInvalidACL
	}{
		{"nil", nil, session, nil},
		{"empty", []proto.ACL{}, session, nil},
		{"open", OpenACLUnsafe, nil, OpenACLUnsafe},
		{"read unsafe", ReadACLUnsafe, nil, ReadACLUnsafe},
		{"world other id", []proto.ACL{a(31, proto.Id{Scheme: "world", ID: "everyone"})}, nil, nil},
		{"world empty id", []proto.ACL{a(31, proto.Id{Scheme: "world", ID: ""})}, nil, nil},
		{"world wrong case", []proto.ACL{a(31, proto.Id{Scheme: "World", ID: "anyone"})}, nil, nil},
		{"duplicates removed", []proto.ACL{a(31, world), a(1, world), a(31, world), a(1, world)}, nil,
			[]proto.ACL{a(31, world), a(1, world)}},
		{"creator all", CreatorAllACL, session, []proto.ACL{a(31, user)}},
		{"auth id ignored", []proto.ACL{auth(5, "whatever")}, session, []proto.ACL{a(5, user)}},
		{"auth several ids", []proto.ACL{auth(31, "")}, []proto.Id{user, ip("1.2.3.4"), other},
			[]proto.ACL{a(31, user), a(31, other)}},
		{"auth skips super", []proto.ACL{auth(31, "")}, []proto.Id{super, ip("1.2.3.4"), user},
			[]proto.ACL{a(31, user)}},
		{"auth only super", []proto.ACL{auth(31, "")}, []proto.Id{super}, nil},
		{"auth only ip", []proto.ACL{auth(31, "")}, []proto.Id{ip("127.0.0.1")}, nil},
		{"auth no ids", CreatorAllACL, nil, nil},
		{"auth x509 and sasl", []proto.ACL{auth(1, "")},
			[]proto.Id{{Scheme: "x509", ID: "CN=a"}, {Scheme: "sasl", ID: "bob"}},
			[]proto.ACL{a(1, proto.Id{Scheme: "x509", ID: "CN=a"}), a(1, proto.Id{Scheme: "sasl", ID: "bob"})}},
		{"auth expansion keeps later duplicate", []proto.ACL{auth(31, ""), a(31, user)}, session,
			[]proto.ACL{a(31, user), a(31, user)}},
		{"auth plus world", []proto.ACL{a(1, world), auth(30, "")}, session,
			[]proto.ACL{a(1, world), a(30, user)}},
		{"digest", []proto.ACL{a(31, other)}, nil, []proto.ACL{a(31, other)}},
		{"digest no colon", []proto.ACL{a(31, digest("user"))}, nil, nil},
		{"digest empty", []proto.ACL{a(31, digest(""))}, nil, nil},
		{"digest trailing colon", []proto.ACL{a(31, digest("user:"))}, nil, nil},
		{"digest only colons", []proto.ACL{a(31, digest("::"))}, nil, nil},
		{"digest three fields", []proto.ACL{a(31, digest("u:h:c"))}, nil, nil},
		{"digest empty user", []proto.ACL{a(31, digest(":h"))}, nil, []proto.ACL{a(31, digest(":h"))}},
		{"digest trailing empty dropped", []proto.ACL{a(31, digest("u:h::"))}, nil, []proto.ACL{a(31, digest("u:h::"))}},
		{"digest hash unchecked", []proto.ACL{a(31, digest("u:not base64!"))}, nil, []proto.ACL{a(31, digest("u:not base64!"))}},
		{"ip v4", []proto.ACL{a(31, ip("10.0.0.1"))}, nil, []proto.ACL{a(31, ip("10.0.0.1"))}},
		{"ip v4 cidr", []proto.ACL{a(31, ip("10.0.0.0/8"))}, nil, []proto.ACL{a(31, ip("10.0.0.0/8"))}},
		{"ip v6 (ZooKeeper 3.8 knows IPv4 only)", []proto.ACL{a(31, ip("::1"))}, nil, nil},
		{"ip v6 cidr", []proto.ACL{a(31, ip("::1/128"))}, nil, nil},
		{"ip v4 in v6 form", []proto.ACL{a(31, ip("0:0:0:0:0:ffff:7f00:1"))}, nil, nil},
		{"ip bad", []proto.ACL{a(31, ip("10.0.0"))}, nil, nil},
		{"ip hostname", []proto.ACL{a(31, ip("localhost"))}, nil, nil},
		{"ip bad bits", []proto.ACL{a(31, ip("10.0.0.0/33"))}, nil, nil},
		{"perms zero accepted", []proto.ACL{a(0, world)}, nil, []proto.ACL{a(0, world)}},
		{"perms high bits accepted", []proto.ACL{a(-1, world)}, nil, []proto.ACL{a(-1, world)}},
		{"unknown scheme", []proto.ACL{a(31, proto.Id{Scheme: "kerberos", ID: "x"})}, nil, nil},
		{"super scheme", []proto.ACL{a(31, super)}, nil, nil},
		{"x509 scheme", []proto.ACL{a(31, proto.Id{Scheme: "x509", ID: "CN=a"})}, nil, nil},
		{"sasl scheme", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "bob"})}, nil, []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "bob"})}},
		{"sasl kerberos principal", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "zk/host.example.com@EXAMPLE.COM"})}, nil,
			[]proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "zk/host.example.com@EXAMPLE.COM"})}},
		{"sasl user@realm", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "bob@EXAMPLE.COM"})}, nil,
			[]proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "bob@EXAMPLE.COM"})}},
		{"sasl empty", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: ""})}, nil, []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: ""})}},
		{"sasl two ats", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "a@b@c"})}, nil, nil},
		{"sasl two slashes", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "a/b/c@R"})}, nil, nil},
		{"sasl slash in realm", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "a@R/x"})}, nil, nil},
		{"sasl slashes without realm", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "a/b/c"})}, nil, []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "a/b/c"})}},
		{"one bad spoils all", []proto.ACL{a(31, world), a(31, digest("bad"))}, nil, nil},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			var in []proto.ACL
			if tc.acls != nil {
				in = append([]proto.ACL{}, tc.acls...)
			}
			got, err := Fixup(tc.acls, tc.ids)
			if tc.want == nil {
				if !errors.Is(err, ErrInvalidACL) {
					t.Fatalf("Fixup = %v, %v; want ErrInvalidACL", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fixup: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Fixup = %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.acls, in) {
				t.Errorf("input modified: %v", tc.acls)
			}
		})
	}
}

func TestFixupReturnsCopy(t *testing.T) {
	in := []proto.ACL{{Perms: 31, ID: world}}
	out, err := Fixup(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	out[0].Perms = 1
	if in[0].Perms != 31 {
		t.Error("Fixup result aliases its input")
	}
}

func TestCheck(t *testing.T) {
	user := digest("user:tl+z3z0vO6PfPfEENfLF96E6pM0=")
	other := digest("jack:p4FVWKzcf0HsYG6jAmAOvoHGCt8=")
	local := ip("127.0.0.1")
	a := func(p proto.Perm, id proto.Id) proto.ACL { return proto.ACL{Perms: p, ID: id} }
	const (
		r   = proto.PermRead
		w   = proto.PermWrite
		c   = proto.PermCreate
		d   = proto.PermDelete
		adm = proto.PermAdmin
	)
	tt := []struct {
		name string
		acls []proto.ACL
		perm proto.Perm
		ids  []proto.Id
		want bool
	}{
		{"nil acl", nil, w, nil, true},
		{"empty acl", []proto.ACL{}, adm, nil, true},
		{"open", OpenACLUnsafe, d, []proto.Id{local}, true},
		{"read unsafe read", ReadACLUnsafe, r, nil, true},
		{"read unsafe write", ReadACLUnsafe, w, nil, false},
		{"world other id", []proto.ACL{a(31, proto.Id{Scheme: "world", ID: "x"})}, r, []proto.Id{{Scheme: "world", ID: "x"}}, false},
		{"super", []proto.ACL{a(r, user)}, adm, []proto.Id{local, super}, true},
		{"super even with zero perms", []proto.ACL{a(0, user)}, w, []proto.Id{super}, true},
		{"digest match", []proto.ACL{a(r|w, user)}, w, []proto.Id{local, user}, true},
		{"digest other user", []proto.ACL{a(31, user)}, w, []proto.Id{local, other}, false},
		{"digest missing perm", []proto.ACL{a(r, user)}, w, []proto.Id{user}, false},
		{"second entry matches", []proto.ACL{a(31, other), a(c, user)}, c, []proto.Id{user}, true},
		{"any bit of a multi-bit perm", []proto.ACL{a(r, user)}, r | adm, []proto.Id{user}, true},
		{"no bit of a multi-bit perm", []proto.ACL{a(w, user)}, r | adm, []proto.Id{user}, false},
		{"scheme must match", []proto.ACL{a(31, proto.Id{Scheme: "digest", ID: "127.0.0.1"})}, r, []proto.Id{local}, false},
		{"ip exact", []proto.ACL{a(31, local)}, r, []proto.Id{local}, true},
		{"ip cidr", []proto.ACL{a(31, ip("127.0.0.0/8"))}, r, []proto.Id{ip("127.9.8.7")}, true},
		{"ip cidr miss", []proto.ACL{a(31, ip("10.0.0.0/8"))}, r, []proto.Id{local}, false},
		{"ip v6", []proto.ACL{a(31, ip("::1"))}, r, []proto.Id{ip("::1")}, true},
		{"ip v4 acl v6 client", []proto.ACL{a(31, ip("0.0.0.0/0"))}, r, []proto.Id{ip("::1")}, false},
		{"x509 equality", []proto.ACL{a(31, proto.Id{Scheme: "x509", ID: "CN=a"})}, r, []proto.Id{{Scheme: "x509", ID: "CN=a"}}, true},
		{"sasl equality", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "bob"})}, r, []proto.Id{{Scheme: "sasl", ID: "bob"}}, true},
		{"sasl other", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "bob"})}, r, []proto.Id{{Scheme: "sasl", ID: "eve"}}, false},
		{"sasl super matches any sasl", []proto.ACL{a(31, proto.Id{Scheme: "sasl", ID: "bob"})}, r, []proto.Id{{Scheme: "sasl", ID: "super"}}, true},
		{"sasl super not digest", []proto.ACL{a(31, digest("bob:h"))}, r, []proto.Id{{Scheme: "sasl", ID: "super"}}, false},
		{"unknown scheme never matches", []proto.ACL{a(31, proto.Id{Scheme: "foo", ID: "x"})}, r, []proto.Id{{Scheme: "foo", ID: "x"}}, false},
		{"no ids", []proto.ACL{a(31, user)}, r, nil, false},
		{"auth entry never matches", []proto.ACL{a(31, proto.Id{Scheme: "auth", ID: ""})}, r, []proto.Id{{Scheme: "auth", ID: ""}}, false},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			if got := Check(tc.acls, tc.perm, tc.ids); got != tc.want {
				t.Errorf("Check = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMasked(t *testing.T) {
	a := func(p proto.Perm, id proto.Id) proto.ACL { return proto.ACL{Perms: p, ID: id} }
	tt := []struct {
		name string
		in   []proto.ACL
		want []proto.ACL
	}{
		{"nil", nil, nil},
		{"empty", []proto.ACL{}, []proto.ACL{}},
		{"mixed",
			[]proto.ACL{a(31, digest("user:tl+z3z0vO6PfPfEENfLF96E6pM0=")), a(1, world), a(3, ip("10.0.0.0/8")),
				a(2, proto.Id{Scheme: "sasl", ID: "a:b"})},
			[]proto.ACL{a(31, digest("user:x")), a(1, world), a(3, ip("10.0.0.0/8")),
				a(2, proto.Id{Scheme: "sasl", ID: "a:b"})}},
		{"no colon", []proto.ACL{a(1, digest("user"))}, []proto.ACL{a(1, digest("user"))}},
		{"empty user", []proto.ACL{a(1, digest(":h"))}, []proto.ACL{a(1, digest(":x"))}},
		{"trailing colon", []proto.ACL{a(1, digest("u:"))}, []proto.ACL{a(1, digest("u:x"))}},
		{"several colons", []proto.ACL{a(1, digest("u:h:c"))}, []proto.ACL{a(1, digest("u:x"))}},
		{"line terminators", []proto.ACL{a(1, digest("u:h\nv:i\r\nw"))}, []proto.ACL{a(1, digest("u:x\nv:x\r\nw"))}},
	}
	for _, tc := range tt {
		t.Run(tc.name, func(t *testing.T) {
			var orig []proto.ACL
			if tc.in != nil {
				orig = append([]proto.ACL{}, tc.in...)
			}
			got := Masked(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Masked = %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.in, orig) {
				t.Errorf("input modified: %v", tc.in)
			}
			if len(got) > 0 && &got[0] == &tc.in[0] {
				t.Error("Masked returned its input")
			}
		})
	}
}

func TestIPMatches(t *testing.T) {
	tt := []struct {
		acl, client string
		want        bool
	}{
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "127.0.0.2", false},
		{"127.0.0.1/32", "127.0.0.1", true},
		{"127.0.0.0/8", "127.255.1.2", true},
		{"127.0.0.0/8", "128.0.0.1", false},
		{"10.1.2.3/8", "10.200.0.1", true}, // the ACL address is masked too
		{"192.168.0.0/16", "192.168.77.1", true},
		{"192.168.0.0/16", "192.169.0.1", false},
		{"192.168.0.0/12", "192.175.255.255", true},
		{"192.168.0.0/12", "192.176.0.0", false},
		{"0.0.0.0/0", "8.8.8.8", true},
		{"1.2.3.4/0", "200.1.1.1", true},
		{"010.001.0.1", "10.1.0.1", true}, // Integer.parseInt accepts leading zeros
		{"+10.1.0.1", "10.1.0.1", true},   // and a sign
		{"127.0.0.1", "::ffff:127.0.0.1", true},
		{"127.0.0.1", "::1", false},
		{"::1", "127.0.0.1", false},
		{"0.0.0.0/0", "::1", false},
		{"::/0", "127.0.0.1", false},
		{"::1", "::1", true},
		{"0:0:0:0:0:0:0:1", "::1", true},
		{"::1", "0:0:0:0:0:0:0:1", true},
		{"::1", "::2", false},
		{"2001:db8::/32", "2001:db8:ffff::1", true},
		{"2001:db8::/32", "2001:db9::1", false},
		{"2001:DB8::1", "2001:db8::1", true},
		{"fe80::/10", "fe80::1%eth0", true},
		{"fe80::/10", "fec0::1", false},
		{"::/0", "2001:db8::1", true},
		{"2001:db8::1/128", "2001:db8::1", true},
		{"1::", "1::", true},
		// Invalid expressions never match.
		{"", "127.0.0.1", false},
		{"127.0.0", "127.0.0.1", false},
		{"127.0.0.1.5", "127.0.0.1", false},
		{"127.0.0.256", "127.0.0.1", false},
		{"127.0.0.-1", "127.0.0.1", false},
		{"127.0.0.1/", "127.0.0.1", false},
		{"127.0.0.1/33", "127.0.0.1", false},
		{"127.0.0.1/-1", "127.0.0.1", false},
		{"127.0.0.1/x", "127.0.0.1", false},
		{"localhost", "127.0.0.1", false},
		{"::1/129", "::1", false},
		{"1:2:3:4:5:6:7", "::1", false},
		{"1:2:3:4:5:6:7:8:9", "::1", false},
		{"1::2::3", "1::2", false},
		{"1:2:3:4::5:6:7:8", "1:2:3:4:5:6:7:8", false},
		{"12345::1", "::1", false},
		{"g::1", "::1", false},
		{":::1", "::1", false},
		{"::ffff:127.0.0.1", "127.0.0.1", false}, // no embedded dotted IPv4
		// Bad client addresses never match.
		{"127.0.0.1", "", false},
		{"127.0.0.1", "localhost", false},
	}
	for _, tc := range tt {
		if got := IPMatches(tc.acl, tc.client); got != tc.want {
			t.Errorf("IPMatches(%q, %q) = %v, want %v", tc.acl, tc.client, got, tc.want)
		}
	}
}

func TestValidIPExpr(t *testing.T) {
	tt := []struct {
		expr string
		want bool
	}{
		{"1.2.3.4", true},
		{"1.2.3.4/24", true},
		{"1.2.3.4/0", true},
		{"1.2.3.4/+8", true},
		{"1.2.3.4/08", true},
		{"::", true},
		{"::/0", true},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", true},
		{"1:2:3:4:5:6:7::", true},
		{"1:2:3:4:5:6:7:8::", false},
		{"1.2.3.4/24/1", false},
		{"1.2.3.4 ", false},
		{"1..3.4", false},
		{"", false},
		{"/8", false},
	}
	for _, tc := range tt {
		_, _, got := parseIPExpr(tc.expr)
		if got != tc.want {
			t.Errorf("parseIPExpr(%q) ok = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestJavaParseInt(t *testing.T) {
	tt := []struct {
		s     string
		radix int
		want  int32
		ok    bool
	}{
		{"0", 10, 0, true},
		{"+7", 10, 7, true},
		{"-7", 10, -7, true},
		{"007", 10, 7, true},
		{"2147483647", 10, 2147483647, true},
		{"-2147483648", 10, -2147483648, true},
		{"2147483648", 10, 0, false},
		{"", 10, 0, false},
		{"+", 10, 0, false},
		{"1_0", 10, 0, false},
		{" 1", 10, 0, false},
		{"ffff", 16, 0xffff, true},
		{"FfFf", 16, 0xffff, true},
		{"-1", 16, -1, true},
		{"0x1", 16, 0, false},
		{"g", 16, 0, false},
	}
	for _, tc := range tt {
		got, ok := javanum.ParseInt(tc.s, tc.radix)
		if got != tc.want || ok != tc.ok {
			t.Errorf("javaParseInt(%q, %d) = %d, %v; want %d, %v", tc.s, tc.radix, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFixupProviders(t *testing.T) {
	sasl := []proto.ACL{{Perms: 31, ID: proto.Id{Scheme: SchemeSASL, ID: "bob"}}}
	x509 := []proto.ACL{{Perms: 31, ID: proto.Id{Scheme: SchemeX509, ID: "CN=bob,O=example"}}}
	badDN := []proto.ACL{{Perms: 31, ID: proto.Id{Scheme: SchemeX509, ID: "bob"}}}
	escaped := []proto.ACL{{Perms: 31, ID: proto.Id{Scheme: SchemeX509, ID: `CN=Acme\, Inc.,O=example`}}}
	unknownType := []proto.ACL{{Perms: 31, ID: proto.Id{Scheme: SchemeX509, ID: "FOO=bar"}}}
	for _, tt := range []struct {
		name string
		acls []proto.ACL
		p    Providers
		ok   bool
	}{
		{"sasl without the provider", sasl, Providers{}, false},
		{"sasl with it", sasl, Providers{SASL: true}, true},
		{"x509 without the provider", x509, Providers{SASL: true}, false},
		{"x509 with it", x509, Providers{X509: true}, true},
		{"x509 not a distinguished name", badDN, Providers{X509: true}, false},
		{"x509 with an escaped comma", escaped, Providers{X509: true}, true},
		{"x509 with a type Java does not know", unknownType, Providers{X509: true}, false},
	} {
		_, err := FixupWith(tt.acls, nil, tt.p)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v", tt.name, err)
		}
	}
}
