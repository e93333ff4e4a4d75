package tlsdiff

import (
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
)

const (
	permAll   = proto.PermAll
	permRead  = proto.PermRead
	permAdmin = proto.PermAdmin
)

// cases are the comparisons, each against both servers over TLS.
var cases = []tcase{
	{"identities", func(r *runner) {
		// The x509 identity of each certificate (X500Principal.getName()),
		// the super user's, and none without a certificate or over the
		// plaintext port.
		for _, c := range []string{"alice", "bob", "carol", "zkadmin", "nosubject", "anon"} {
			r.connect(c, c)
			r.whoAmI(c)
		}
		// An empty subject is an identity like any other.
		r.create("alice", "$R", "", open)
		r.create("nosubject", "$R/empty", "e", acl(permAll, "x509", ""))
		r.getData("nosubject", "$R/empty", false)
		r.getData("anon", "$R/empty", false)
		r.create("nosubject", "$R/auth", "", acl(permAll, "auth", ""))
		r.getACL("nosubject", "$R/auth")
		r.connectPlain("plain")
		r.whoAmI("plain")
	}},

	{"x509_acl", func(r *runner) {
		// A node readable and writable by one certificate only, for each
		// certificate: its subject must match the identity exactly.
		for _, c := range []string{"alice", "bob", "carol"} {
			r.connect(c, c)
		}
		r.connect("anon", "anon")
		r.connectPlain("plain")
		r.create("alice", "$R", "", open)
		for _, owner := range []string{"alice", "bob", "carol"} {
			node := "$R/" + owner
			r.create(owner, node, "secret of "+owner, x509ACL(permAll, owner))
			r.getACL(owner, node)
			for _, c := range []string{"alice", "bob", "carol", "anon", "plain"} {
				r.getData(c, node, false)
				r.setData(c, node, "by "+c)
				r.create(c, node+"/by-"+c, "", open)
				r.getACL(c, node)
			}
			r.getData(owner, node, false)
		}
		// Read only for one, everything for the other.
		r.create("alice", "$R/ro", "x", x509ACL(permRead, "bob"), x509ACL(permAll, "alice"))
		r.getData("bob", "$R/ro", false)
		r.setData("bob", "$R/ro", "no")
		r.setACL("bob", "$R/ro", open)
		r.setACL("alice", "$R/ro", x509ACL(permAll, "bob"))
		r.getACL("bob", "$R/ro")
		r.delete("carol", "$R/ro")
		r.delete("bob", "$R/ro")
	}},

	{"x509_acl_ids", func(r *runner) {
		// Which x509 ids an ACL may name: ZooKeeper's
		// X509AuthenticationProvider.isValid is new X500Principal(id).
		r.connect("alice", "alice")
		r.create("alice", "$R", "", open)
		for i, id := range []string{
			"CN=alice,O=zkgo",
			`CN=a\,b,O=zkgo`,
			`CN=a\+b+OU=c,O=zkgo`,
			`CN="quoted, value",O=zkgo`,
			"CN=a;O=b",
			"CN=a, O=b",
			"cn=alice,o=zkgo",
			"2.5.4.3=alice",
			"OID.2.5.4.3=alice",
			"CN=#0c05616c696365",
			"EMAILADDRESS=a@b,SERIALNUMBER=1,DC=org,UID=u,STREET=s,T=t",
			"FOO=bar",
			"not a dn",
			"CN",
			"=alice",
			"CN=",
			"CN=a,,O=b",
			"CN=a,",
			`CN=a\`,
			"CN=#zz",
			"",
			" ",
		} {
			r.create("alice", "$R/"+string(rune('a'+i)), "", acl(permAll, "x509", id))
		}
		// Ids are compared as strings: another spelling of alice's
		// subject does not match her.
		r.create("alice", "$R/spelling", "", acl(permAll, "x509", "CN=alice, O=zkgo"), acl(permAdmin, "world", "anyone"))
		r.getData("alice", "$R/spelling", false)
	}},

	{"auth_scheme", func(r *runner) {
		// The "auth" scheme expands to the connection's authenticated ids:
		// x509 (and digest), never ip or super.
		for _, c := range []string{"alice", "bob", "zkadmin", "anon"} {
			r.connect(c, c)
		}
		r.connectPlain("plain")
		r.create("alice", "$R", "", open)
		r.create("alice", "$R/a", "a", acl(permAll, "auth", ""))
		r.getACL("alice", "$R/a")
		r.getData("bob", "$R/a", false)
		r.addAuth("bob", "digest", "u1:p1")
		r.create("bob", "$R/b", "b", acl(permAll, "auth", ""), acl(permRead, "auth", "ignored"))
		r.getACL("bob", "$R/b")
		r.create("zkadmin", "$R/z", "z", acl(permAll, "auth", ""))
		r.getACL("zkadmin", "$R/z")
		r.create("anon", "$R/anon", "", acl(permAll, "auth", ""))
		r.create("plain", "$R/plain", "", acl(permAll, "auth", ""))
		r.addAuth("anon", "digest", "u2:p2")
		r.create("anon", "$R/anon", "", acl(permAll, "auth", ""))
		r.getACL("anon", "$R/anon")
		r.getData("alice", "$R/anon", false)
	}},

	{"x509_super", func(r *runner) {
		// The x509 super user bypasses every ACL; the digest super user
		// does over TLS too.
		for _, c := range []string{"alice", "zkadmin", "bob", "anon"} {
			r.connect(c, c)
		}
		r.create("alice", "$R", "", open)
		r.create("alice", "$R/private", "p", x509ACL(permAll, "alice"))
		r.create("alice", "$R/none", "n", acl(0, "world", "anyone"))
		r.create("alice", "$R/digest", "d", digestACL(permAll, "u1", "p1"))
		r.whoAmI("zkadmin")
		for _, node := range []string{"$R/private", "$R/none", "$R/digest"} {
			r.getData("zkadmin", node, false)
			r.getACL("zkadmin", node)
			r.setData("zkadmin", node, "by zkadmin")
			r.create("zkadmin", node+"/kid", "", open)
			r.delete("zkadmin", node+"/kid")
		}
		r.setACL("zkadmin", "$R/private", x509ACL(permRead, "bob"))
		r.getData("bob", "$R/private", false)
		// Digest super user, with and without a certificate.
		r.getData("anon", "$R/digest", false)
		r.addAuth("anon", "digest", superUser+":"+superPassword)
		r.whoAmI("anon")
		r.getData("anon", "$R/none", false)
		r.getACL("anon", "$R/digest")
		r.addAuth("bob", "digest", superUser+":"+superPassword)
		r.whoAmI("bob")
		r.setData("bob", "$R/none", "by bob")
		r.delete("zkadmin", "$R/private")
		r.delete("anon", "$R/digest")
	}},

	{"addauth_x509", func(r *runner) {
		// addauth with the x509 scheme: the provider authenticates the
		// connection's certificate, whatever the payload says.
		r.connect("alice", "alice")
		r.addAuth("alice", "x509", "")
		r.whoAmI("alice")
		r.addAuth("alice", "x509", superSubject)
		r.whoAmI("alice")
		r.create("alice", "$R", "", open)
		r.create("alice", "$R/a", "", acl(permAll, "auth", ""))
		r.getACL("alice", "$R/a")
		r.probe("alice")
		// Without a certificate there is nothing to authenticate.
		r.connect("anon", "anon")
		r.addAuth("anon", "x509", "CN=alice,O=zkgo")
		r.probe("anon")
		r.connectPlain("plain")
		r.addAuth("plain", "x509", "CN=alice,O=zkgo")
		r.probe("plain")
		// Schemes without a provider.
		r.connect("bob", "bob")
		r.addAuth("bob", "sasl", "bob")
		r.probe("bob")
		r.connect("carol", "carol")
		r.addAuth("carol", "ip", "10.0.0.1")
		r.whoAmI("carol")
		r.addAuth("carol", "super", "")
		r.probe("carol")
	}},

	{"ip_sasl_acl", func(r *runner) {
		// ip and sasl ACLs over TLS: 3.8 knows IPv4 only, and sasl only
		// with its provider (not configured here).
		r.connect("alice", "alice")
		r.connect("bob", "bob")
		r.create("alice", "$R", "", open)
		r.create("alice", "$R/v6", "", acl(permAll, "ip", "::1/128"))
		r.create("alice", "$R/v6b", "", acl(permAll, "ip", "::1"))
		r.create("alice", "$R/sasl", "", acl(permAll, "sasl", "bob"))
		r.create("alice", "$R/lo", "lo", acl(permRead, "ip", "127.0.0.1"), x509ACL(permAll, "alice"))
		r.create("alice", "$R/net", "net", acl(permRead, "ip", "127.0.0.0/8"))
		r.create("alice", "$R/far", "far", acl(permRead, "ip", "10.0.0.0/8"), x509ACL(permAll, "alice"))
		r.getData("bob", "$R/lo", false)
		r.setData("bob", "$R/lo", "no")
		r.getData("bob", "$R/net", false)
		r.getData("bob", "$R/far", false)
		r.getACL("bob", "$R/lo")
		r.create("alice", "$R/mixed", "", acl(permAll, "ip", "127.0.0.1"), acl(permAll, "sasl", "bob"))
		r.create("alice", "$R/world", "", acl(permAll, "world", "someone"))
		r.create("alice", "$R/digest", "", acl(permAll, "digest", "nohash"))
	}},

	{"getacl_masking", func(r *runner) {
		// CVE-2019-0201: getACL needs READ or ADMIN, and hides digest
		// hashes from callers without ADMIN.
		for _, c := range []string{"alice", "bob", "anon"} {
			r.connect(c, c)
		}
		r.create("alice", "$R", "", open)
		r.create("alice", "$R/d", "", x509ACL(permRead, "alice"), digestACL(permAll, "u1", "p1"))
		r.getACL("alice", "$R/d")
		r.getACL("bob", "$R/d")
		r.getACL("anon", "$R/d")
		r.create("alice", "$R/adm", "", acl(permAdmin, "world", "anyone"), digestACL(permRead, "u1", "p1"))
		r.getACL("bob", "$R/adm")
		r.create("alice", "$R/w", "", acl(proto.PermWrite, "world", "anyone"), digestACL(permAll, "u1", "p1"), x509ACL(permAdmin, "bob"))
		r.getACL("alice", "$R/w")
		r.getACL("bob", "$R/w")
		r.addAuth("anon", "digest", "u1:p1")
		r.getACL("anon", "$R/d")
		r.getACL("anon", "$R/w")
	}},

	{"watch_acl_live", func(r *runner) {
		// CVE-2024-23944: a persistent recursive watch (and one-shot
		// watches) of a client that may not read a node deliver nothing
		// about it.
		r.connect("alice", "alice")
		r.connect("bob", "bob")
		r.create("alice", "$R", "", open)
		r.create("alice", "$R/secret", "s", x509ACL(permAll, "alice"))
		r.create("alice", "$R/open", "o", open)
		r.addWatch("bob", "$R", proto.AddWatchPersistentRecursive)
		r.expectDiff("exists needs READ on an existing node in zkgo (ZooKeeper 3.8.4+), not in 3.8.0")
		r.exists("bob", "$R/secret", true)
		r.getData("bob", "$R/secret", true)
		r.getChildren("bob", "$R/secret", true)
		r.getChildren("bob", "$R", true)
		r.expectDiff("addWatch needs READ on an existing node in zkgo (ZooKeeper 3.8.4+), not in 3.8.0")
		r.addWatch("bob", "$R/secret", proto.AddWatchPersistent)
		r.setData("alice", "$R/secret", "s2")
		r.events("bob")
		r.create("alice", "$R/secret/kid", "k", open)
		r.events("bob")
		r.create("alice", "$R/secret/hidden", "h", x509ACL(permAll, "alice"))
		r.events("bob")
		r.setData("alice", "$R/open", "o2")
		r.events("bob")
		r.create("alice", "$R/open/kid", "", x509ACL(permAll, "alice"))
		r.events("bob")
		r.delete("alice", "$R/secret/kid")
		r.delete("alice", "$R/secret/hidden")
		r.events("bob")
		r.setACL("alice", "$R/secret", x509ACL(permAll, "alice"), x509ACL(permRead, "bob"))
		r.setData("alice", "$R/secret", "s3")
		r.events("bob")
		r.delete("alice", "$R/open/kid")
		r.delete("alice", "$R/open")
		r.events("bob")
	}},

	{"watch_acl_setwatches", func(r *runner) {
		// CVE-2024-23944 through setWatches2: the catch-up notifications
		// for changes made while a client was away, and the re-registered
		// persistent recursive watch, deliver nothing the client may not
		// read.
		r.connect("alice", "alice")
		r.connect("bob", "bob")
		r.create("alice", "$R", "", open)
		r.create("alice", "$R/secret", "s", x509ACL(permAll, "alice"))
		r.create("alice", "$R/open", "o", open)
		r.create("alice", "$R/gone", "g", x509ACL(permAll, "alice"))
		r.create("alice", "$R/opengone", "g", open)
		r.addWatch("bob", "$R", proto.AddWatchPersistentRecursive)
		r.exists("bob", "$R", false)
		mark := r.mark("bob")
		r.setData("alice", "$R/secret", "s2")
		r.setData("alice", "$R/open", "o2")
		r.create("alice", "$R/secret/kid", "", open)
		r.create("alice", "$R/secretnew", "", x509ACL(permAll, "alice"))
		r.create("alice", "$R/opennew", "", open)
		r.delete("alice", "$R/gone")
		r.delete("alice", "$R/opengone")
		r.events("bob") // live: the readable ones only
		r.reconnect("bob", mark, proto.SetWatches2{
			DataWatches:                []string{"$R/secret", "$R/open", "$R/gone", "$R/opengone"},
			ExistWatches:               []string{"$R/secretnew", "$R/opennew"},
			ChildWatches:               []string{"$R/secret", "$R"},
			PersistentRecursiveWatches: []string{"$R"},
		})
		r.expectDiff("setWatches catch-up notifications are checked against READ in zkgo, as in ZooKeeper's current DataTree.setWatches; Debian's patched 3.8.0 still delivers them for nodes the client may not read")
		r.events("bob")
		// The re-registered recursive watch.
		r.setData("alice", "$R/secret", "s3")
		r.setData("alice", "$R/open", "o3")
		r.events("bob")
		// With a plain persistent watch re-registered on an unreadable node.
		r.exists("bob", "$R", false)
		mark = r.mark("bob")
		r.setData("alice", "$R/secret", "s4")
		r.reconnect("bob", mark, proto.SetWatches2{PersistentWatches: []string{"$R/secret"}})
		r.setData("alice", "$R/secret", "s5")
		r.events("bob")
	}},

	{"setwatches_null_lists", func(r *runner) {
		// Null lists in setWatches and setWatches2 (the Java client always
		// sends empty ones).
		r.connect("alice", "alice")
		r.create("alice", "$R", "", open)
		r.create("alice", "$R/a", "", open)
		r.expectDiff("a null list: Apache fails with MarshallingError after handling the lists before it; zkgo takes it as empty")
		r.log("setWatches2 data=[$R] rest null: %s", r.call(r.s("alice"), proto.OpSetWatches2,
			&proto.SetWatches2{RelativeZxid: 1, DataWatches: []string{r.p("$R")}}, nil))
		r.events("alice")
		r.expectDiff("a null list: Apache fails with MarshallingError after handling the lists before it; zkgo takes it as empty")
		r.log("setWatches data=[$R/a] rest null: %s", r.call(r.s("alice"), proto.OpSetWatches,
			&proto.SetWatches{RelativeZxid: 1, DataWatches: []string{r.p("$R/a")}}, nil))
		r.events("alice")
		r.probe("alice")
	}},

	{"transport", func(r *runner) {
		// Clients on the wrong port, and certificates the server does not
		// trust: refused by both; the outcome class is compared, not the
		// error (a TLS alert, a reset, an EOF).
		r.connectAt("plain-to-secure", "", "secure")
		r.connectAt("tls-to-plain", "alice", "plain")
		r.connectAt("anon-to-plain", "anon", "plain")
		for _, c := range []string{"mallory", "expired", "serveronly"} {
			r.connectAt(c, c, "secure")
			r.whoAmI(c)
		}
		r.connectAt("anon", "anon", "secure")
		r.connectAt("alice", "alice", "secure")
		r.whoAmI("alice")
		// The servers still serve.
		r.create("alice", "$R", "", open)
		r.getData("anon", "$R", false)
	}},
}

// TestTLSDiff compares Apache ZooKeeper and zkgo, both with a TLS client
// port (clientAuth=want), the x509 provider, an x509 and a digest super
// user, case by case.
func TestTLSDiff(t *testing.T) {
	requireServers(t)
	t.Logf("Apache ZooKeeper %s: %s, TLS %s (started in %v); zkgo: %s, TLS %s",
		apache.Version(), apache.Addr(), apache.SecureAddr(), apacheStartTime.Round(time.Millisecond), zkgo.Addr(), zkgo.SecureAddr())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache ZooKeeper log:\n%s", apache.LogTail())
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			compare(t, c)
		})
	}
}
