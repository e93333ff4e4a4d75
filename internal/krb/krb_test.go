package krb_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/krb"
	"github.com/zkgo/zkgo/tests/framework/testkdc"
)

var kdc = testkdc.Shared()

func TestMain(m *testing.M) {
	code := m.Run()
	kdc.Stop()
	os.Exit(code)
}

// setup returns the KDC's krb5.conf and a JAAS file with a client
// section (keytab of "client") and a server section (keytab of
// zookeeper/localhost, isInitiator=false).
func setup(t *testing.T) (*testkdc.KDC, *krb.Krb5Conf, string) {
	t.Helper()
	k := kdc.Get(t)
	conf, err := krb.LoadKrb5Conf(k.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	ckt := k.Keytab(t, "client")
	skt := k.Keytab(t, "zookeeper/localhost")
	jaas := filepath.Join(t.TempDir(), "jaas.conf")
	text := `Client {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="` + ckt + `" principal="client@` + testkdc.Realm + `"
  storeKey=true useTicketCache=false doNotPrompt=true;
};
Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="` + skt + `" principal="zookeeper/localhost"
  storeKey=true isInitiator=false debug=true;
};
`
	if err := os.WriteFile(jaas, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return k, conf, jaas
}

// loadJAAS returns the credentials of section's Krb5LoginModule entry in
// the JAAS file at path, as the zk client loads its JAAS file.
func loadJAAS(path, section string, conf *krb.Krb5Conf) (*krb.Credentials, []string, error) {
	options, err := config.LoadKrb5Options(path, section)
	if err != nil {
		return nil, nil, err
	}
	c, w, err := krb.FromOptions(options, conf, "")
	if err != nil {
		return nil, w, fmt.Errorf("%s: section %s: %w", path, section, err)
	}
	return c, w, nil
}

// run drives an initiator/acceptor pair in memory and returns the number
// of tokens the initiator sent.
func run(t *testing.T, ini *krb.Initiator, acc *krb.Acceptor) (int, error) {
	t.Helper()
	tok, err := ini.Start()
	if err != nil {
		return 0, err
	}
	sent := 0
	for !ini.Done() {
		sent++
		if sent > 6 {
			t.Fatal("exchange does not end")
		}
		reply, err := acc.Next(tok)
		if err != nil {
			return sent, err
		}
		tok, err = ini.Next(reply)
		if err != nil {
			return sent, err
		}
		if ini.Done() != acc.Done() {
			t.Fatalf("initiator done %v, acceptor done %v", ini.Done(), acc.Done())
		}
	}
	return sent, nil
}

// An initiator and an acceptor with credentials from JAAS sections
// authenticate over an in-memory exchange of three round trips, as
// ZooKeeper's Java client and server do.
func TestExchange(t *testing.T) {
	_, conf, jaas := setup(t)
	cc, _, err := loadJAAS(jaas, "Client", conf)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc, w, err := loadJAAS(jaas, "Server", conf)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	if sc.Principal != "zookeeper/localhost@"+testkdc.Realm || sc.Initiator {
		t.Errorf("server credentials: %q initiator=%v", sc.Principal, sc.Initiator)
	}
	for i := range 2 { // the second one reuses the login and the ticket
		ini, err := krb.NewInitiator(cc, "zookeeper", "localhost")
		if err != nil {
			t.Fatal(err)
		}
		acc, err := krb.NewAcceptor(sc)
		if err != nil {
			t.Fatal(err)
		}
		n, err := run(t, ini, acc)
		if err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		if n != 3 {
			t.Errorf("initiator sent %d tokens, want 3", n)
		}
		if got := acc.Principal(); got != "client@"+testkdc.Realm {
			t.Errorf("Principal = %q", got)
		}
		if got := acc.AuthzID(); got != "client@"+testkdc.Realm {
			t.Errorf("AuthzID = %q", got)
		}
		if _, err := acc.Next(nil); err != krb.ErrFinished {
			t.Errorf("Next after the end: %v", err)
		}
	}
}

// The quorum use: two members' principals zkquorum/<host>, each both
// initiator and acceptor, _HOST expanded.
func TestQuorumPrincipals(t *testing.T) {
	k, conf, _ := setup(t)
	kt := k.Keytab(t, "zkquorum/localhost")
	learner, err := krb.NewKeytabCredentials("zkquorum/localhost", kt, conf)
	if err != nil {
		t.Fatal(err)
	}
	defer learner.Close()
	srv, err := krb.NewKeytabCredentials("zkquorum/localhost@"+testkdc.Realm, kt, conf)
	if err != nil {
		t.Fatal(err)
	}
	service, host, err := krb.SplitServicePrincipal(krb.ExpandHost("zkquorum/_HOST@"+testkdc.Realm, "LocalHost"))
	if err != nil || service != "zkquorum" || host != "localhost" {
		t.Fatalf("SplitServicePrincipal: %q %q %v", service, host, err)
	}
	ini, _ := krb.NewInitiator(learner, service, host)
	acc, _ := krb.NewAcceptor(srv)
	if _, err := run(t, ini, acc); err != nil {
		t.Fatal(err)
	}
	if acc.Principal() != "zkquorum/localhost@"+testkdc.Realm {
		t.Errorf("Principal = %q", acc.Principal())
	}
}

// Failures: a ticket for another service, a stale keytab on either side,
// a tampered token, an unknown service principal.
func TestRefusals(t *testing.T) {
	k, conf, jaas := setup(t)
	cc, _, err := loadJAAS(jaas, "Client", conf)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc, _, err := loadJAAS(jaas, "Server", conf)
	if err != nil {
		t.Fatal(err)
	}
	otherKT := k.Keytab(t, "other/localhost")
	other, err := krb.NewKeytabCredentials("other/localhost", otherKT, conf)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ticket for another service", func(t *testing.T) {
		ini, _ := krb.NewInitiator(cc, "zookeeper", "localhost")
		acc, _ := krb.NewAcceptor(other)
		_, err := run(t, ini, acc)
		if err == nil || !strings.Contains(err.Error(), "not other/localhost") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("acceptor any principal", func(t *testing.T) {
		anyKT := k.Keytab(t, "other/localhost", "zookeeper/localhost")
		anyCreds, err := krb.NewKeytabCredentials("*", anyKT, conf)
		if err != nil {
			t.Fatal(err)
		}
		ini, _ := krb.NewInitiator(cc, "zookeeper", "localhost")
		acc, _ := krb.NewAcceptor(anyCreds)
		if _, err := run(t, ini, acc); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no such service", func(t *testing.T) {
		ini, _ := krb.NewInitiator(cc, "zookeeper", "nosuchhost")
		if _, err := ini.Start(); err == nil {
			t.Fatal("Start succeeded")
		}
	})
	t.Run("tampered choice", func(t *testing.T) {
		ini, _ := krb.NewInitiator(cc, "zookeeper", "localhost")
		acc, _ := krb.NewAcceptor(sc)
		tok, err := ini.Start()
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; ; step++ {
			if step == 2 {
				tok = bytes.Clone(tok)
				tok[len(tok)-1] ^= 1
			}
			reply, err := acc.Next(tok)
			if err != nil {
				if step != 2 || acc.Done() {
					t.Fatalf("step %d: %v", step, err)
				}
				break
			}
			if tok, err = ini.Next(reply); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("stale acceptor keytab", func(t *testing.T) {
		if err := k.RandKey("stale/localhost"); err != nil {
			t.Fatal(err)
		}
		old := k.Keytab(t, "stale/localhost")
		if err := k.RandKey("stale/localhost"); err != nil {
			t.Fatal(err)
		}
		staleCreds, err := krb.NewKeytabCredentials("stale/localhost", old, conf)
		if err != nil {
			t.Fatal(err)
		}
		ini, _ := krb.NewInitiator(cc, "stale", "localhost")
		acc, _ := krb.NewAcceptor(staleCreds)
		if _, err := run(t, ini, acc); err == nil {
			t.Fatal("accepted with a stale keytab")
		}
	})
	t.Run("stale initiator keytab", func(t *testing.T) {
		old := k.Keytab(t, "client2")
		if err := k.RandKey("client2"); err != nil {
			t.Fatal(err)
		}
		c, err := krb.NewKeytabCredentials("client2", old, conf)
		if err != nil {
			t.Fatal(err)
		}
		ini, _ := krb.NewInitiator(c, "zookeeper", "localhost")
		if _, err := ini.Start(); err == nil {
			t.Fatal("login with a stale keytab succeeded")
		}
	})
}

func TestNameRules(t *testing.T) {
	for _, c := range []struct {
		p                   string
		removeHost, removeR bool
		want                string
	}{
		{"client@R", false, false, "client@R"},
		{"client@R", false, true, "client"},
		{"zk/h1@R", false, false, "zk/h1@R"},
		{"zk/h1@R", true, false, "zk@R"},
		{"zk/h1@R", false, true, "zk/h1"},
		{"zk/h1@R", true, true, "zk"},
		{"zk/h1@OTHER", true, true, "zk/h1@OTHER"},
		{"a/b/c@R", true, true, "a/b/c@R"},
	} {
		got := krb.NameRules{DefaultRealm: "R", RemoveHost: c.removeHost, RemoveRealm: c.removeR}.ID(c.p)
		if got != c.want {
			t.Errorf("ID(%q, host %v, realm %v) = %q, want %q", c.p, c.removeHost, c.removeR, got, c.want)
		}
	}
}

func TestFromJAASErrors(t *testing.T) {
	_, conf, _ := setup(t)
	for _, text := range []string{
		`S { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b"; };`,
		`S { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true principal="x"; };`,
		`S { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/nonexistent" principal="x"; };`,
		`S { com.sun.security.auth.module.Krb5LoginModule required doNotPrompt=true; };`,
		`S { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/nonexistent" principal="x" isInitiator=false; };`,
	} {
		p := filepath.Join(t.TempDir(), "jaas")
		os.WriteFile(p, []byte(text), 0o600)
		if _, _, err := loadJAAS(p, "S", conf); err == nil {
			t.Errorf("%s: no error", text)
		} else {
			t.Log(err)
		}
	}
}

func TestKrb5ConfPath(t *testing.T) {
	t.Setenv("KRB5_CONFIG", "/a/krb5.conf:/b")
	if got := krb.Krb5ConfPath("/j"); got != "/j" {
		t.Errorf("with the property: %q", got)
	}
	if got := krb.Krb5ConfPath(""); got != "/a/krb5.conf" {
		t.Errorf("KRB5_CONFIG: %q", got)
	}
	t.Setenv("KRB5_CONFIG", "")
	if got := krb.Krb5ConfPath(""); got != "/etc/krb5.conf" {
		t.Errorf("default: %q", got)
	}
	c, err := krb.Krb5ConfFor("EX.COM", "kdc1:88 kdc2")
	if err != nil || c.DefaultRealm() != "EX.COM" {
		t.Errorf("Krb5ConfFor: %v %v", c, err)
	}
}
