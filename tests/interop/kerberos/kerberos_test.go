package kerberos_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/krb"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/framework/testkdc"
	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// The realm's principals: the server's (the Java client asks for
// zookeeper/<canonical name of 127.0.0.1>, "localhost"), two clients, and
// a client whose keytab is stale (its keys changed after it was written).
const (
	serverPrincipal = "zookeeper/localhost@" + testkdc.Realm
	clientPrincipal = "client@" + testkdc.Realm
	otherPrincipal  = "other@" + testkdc.Realm
	stalePrincipal  = "stale@" + testkdc.Realm
)

var (
	kdc                                  *testkdc.KDC
	kdcErr                               error
	serverKT, clientKT, otherKT, staleKT string
	apache                               *apachezk.Server
	apacheErr                            error
	krb5Flag                             string // -Djava.security.krb5.conf=...
	serverJAASFile                       string
)

func TestMain(m *testing.M) {
	code := run(m)
	os.Exit(code)
}

func run(m *testing.M) int {
	kdc, kdcErr = testkdc.Start()
	if kdcErr != nil {
		fmt.Fprintln(os.Stderr, testkdc.SkipMessage(kdcErr))
		return m.Run()
	}
	defer kdc.Stop()
	defer curator.Cleanup()
	kdcErr = setupRealm()
	if kdcErr != nil {
		fmt.Fprintln(os.Stderr, kdcErr)
		return 1
	}
	krb5Flag = "-Djava.security.krb5.conf=" + kdc.Krb5Conf
	apache, apacheErr = apachezk.Start(apachezk.Options{
		SystemProperties: map[string]string{
			"java.security.auth.login.config": serverJAASFile,
			"java.security.krb5.conf":         kdc.Krb5Conf,
		},
		ExtraConfig: map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
	})
	if apacheErr != nil {
		fmt.Fprintln(os.Stderr, apachezk.SkipMessage(apacheErr))
	} else {
		defer apache.Stop()
	}
	return m.Run()
}

func setupRealm() error {
	var err error
	if serverKT, err = kdc.NewKeytab(serverPrincipal); err != nil {
		return err
	}
	if clientKT, err = kdc.NewKeytab(clientPrincipal); err != nil {
		return err
	}
	if otherKT, err = kdc.NewKeytab(otherPrincipal); err != nil {
		return err
	}
	if staleKT, err = kdc.NewKeytab(stalePrincipal); err != nil {
		return err
	}
	if err = kdc.RandKey(stalePrincipal); err != nil {
		return err
	}
	if err = kdc.AddPrincipal("other/localhost"); err != nil {
		return err
	}
	serverJAASFile = filepath.Join(kdc.Dir, "server-jaas.conf")
	return os.WriteFile(serverJAASFile, []byte(serverJAAS()), 0o600)
}

// serverJAAS is the JAAS file of both servers, as ZooKeeper's
// documentation writes it.
func serverJAAS() string {
	return fmt.Sprintf(`Server {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab="%s"
    storeKey=true
    useTicketCache=false
    isInitiator=false
    principal="%s";
};
`, serverKT, serverPrincipal)
}

// clientJAAS is a client's JAAS "Client" section.
func clientJAAS(keytab, principal string) string {
	return jaasSection("Client", keytab, principal)
}

// jaasSection is a client's JAAS section of that name.
func jaasSection(name, keytab, principal string) string {
	return fmt.Sprintf(`%s {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab="%s"
    storeKey=true
    useTicketCache=false
    doNotPrompt=true
    principal="%s";
};
`, name, keytab, principal)
}

func needKDC(t *testing.T) {
	t.Helper()
	if kdcErr != nil {
		t.Skip(testkdc.SkipMessage(kdcErr))
	}
}

// startZkgo starts an in-process zkgo server with the server JAAS
// section's credentials, as zkgo server builds them from zoo.cfg.
func startZkgo(t *testing.T, rules krb.NameRules, more ...func(*server.Options)) *zktest.Server {
	t.Helper()
	conf, err := krb.LoadKrb5Conf(kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	options, err := config.LoadKrb5Options(serverJAASFile, "Server")
	if err != nil {
		t.Fatal(err)
	}
	creds, _, err := krb.FromOptions(options, conf, "")
	if err != nil {
		t.Fatal(err)
	}
	rules.DefaultRealm = conf.DefaultRealm()
	return zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.SASL.Kerberos = creds
		o.SASL.KerberosNames = rules
		for _, f := range more {
			f(o)
		}
	}))
}

func goClient(keytab, principal string) zk.Option {
	return zk.WithKerberos(zk.Kerberos{Keytab: keytab, Principal: principal, Krb5Conf: kdc.Krb5Conf})
}

// checkGoClient: the Go client authenticates as client, makes a node only
// sasl:<id> may touch, another principal and an anonymous client get
// NoAuth, a stale keytab fails with AuthFailed.
func checkGoClient(t *testing.T, addr, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, addr, goClient(clientKT, clientPrincipal))
	if err != nil {
		t.Fatalf("Connect with Kerberos: %v", err)
	}
	defer c.Close()
	path := fmt.Sprintf("/krb-go-%d", time.Now().UnixNano())
	acl := []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: "sasl", ID: id}}}
	if _, err := c.Create(ctx, path, []byte("krb"), acl, zk.ModePersistent); err != nil {
		t.Fatalf("create %s with sasl:%s: %v", path, id, err)
	}
	if data, _, err := c.Get(ctx, path); err != nil || string(data) != "krb" {
		t.Fatalf("get: %q %v", data, err)
	}
	// A second connection of the same client reuses its ticket.
	c2, err := zk.Connect(ctx, addr, goClient(clientKT, clientPrincipal))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c2.Get(ctx, path); err != nil {
		t.Errorf("second connection: %v", err)
	}
	c2.Close()
	for name, opts := range map[string][]zk.Option{"other principal": {goClient(otherKT, otherPrincipal)}, "anonymous": nil} {
		o, err := zk.Connect(ctx, addr, opts...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, _, err = o.Get(ctx, path)
		o.Close()
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s reads %s: %v, want NoAuth", name, path, err)
		}
	}
	_, err = zk.Connect(ctx, addr, goClient(staleKT, stalePrincipal))
	if !errors.Is(err, zk.ErrAuthFailed) {
		t.Errorf("stale keytab: %v, want AuthFailed", err)
	}
	if err := c.Delete(ctx, path, -1); err != nil {
		t.Error(err)
	}
}

func TestGoClientAgainstZkgo(t *testing.T) {
	needKDC(t)
	t.Run("full principal", func(t *testing.T) {
		srv := startZkgo(t, krb.NameRules{})
		checkGoClient(t, srv.Addr(), clientPrincipal)
	})
	t.Run("removeRealmFromPrincipal", func(t *testing.T) {
		srv := startZkgo(t, krb.NameRules{RemoveRealm: true})
		checkGoClient(t, srv.Addr(), "client")
	})
	t.Run("superUser", func(t *testing.T) {
		srv := startZkgo(t, krb.NameRules{RemoveRealm: true}, func(o *server.Options) { o.SASL.SuperUser = "other" })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := zk.Connect(ctx, srv.Addr(), goClient(clientKT, clientPrincipal))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		acl := []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: "sasl", ID: "client"}}}
		if _, err := c.Create(ctx, "/su", nil, acl, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		su, err := zk.Connect(ctx, srv.Addr(), goClient(otherKT, otherPrincipal))
		if err != nil {
			t.Fatal(err)
		}
		defer su.Close()
		if err := su.Delete(ctx, "/su", -1); err != nil {
			t.Errorf("superUser deletes: %v", err)
		}
	})
	t.Run("enforced", func(t *testing.T) {
		srv := startZkgo(t, krb.NameRules{}, func(o *server.Options) { o.EnforceAuthSchemes = []string{"sasl"} })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := zk.Connect(ctx, srv.Addr(), goClient(clientKT, clientPrincipal))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, _, err := c.Get(ctx, "/"); err != nil {
			t.Errorf("authenticated client under enforcement: %v", err)
		}
	})
	t.Run("DIGEST-MD5 beside GSSAPI", func(t *testing.T) {
		srv := startZkgo(t, krb.NameRules{}, func(o *server.Options) { o.SASL.Users = map[string]string{"bob": "bobsecret"} })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := zk.Connect(ctx, srv.Addr(), zk.WithSASL("bob", "bobsecret"))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		checkGoClient(t, srv.Addr(), clientPrincipal)
	})
}

// The Go client against Apache ZooKeeper: the same results.
func TestGoClientAgainstApacheZooKeeper(t *testing.T) {
	needKDC(t)
	apachezk.SkipIfUnavailable(t, apacheErr)
	checkGoClient(t, apache.Addr(), clientPrincipal)
}

// checkJavaClient runs ZooKeeper's Java client with a Krb5LoginModule
// Client section: it must authenticate as sasl:client@ZKGO.TEST and create
// a node with that ACL; asking for a ticket of a service principal the
// server has no key for, it must end in AUTH_FAILED.
func checkJavaClient(t *testing.T, addr string) string {
	path := fmt.Sprintf("/krb-java-%d", time.Now().UnixNano())
	pass := curator.RunSASLCheckJAAS(t, addr, clientJAAS(clientKT, clientPrincipal), []string{krb5Flag}, clientPrincipal, path, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := zk.Connect(ctx, addr, goClient(otherKT, otherPrincipal))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = o.Get(ctx, path)
	o.Close()
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("another principal reads the Java client's node: %v", err)
	}
	// A ticket for a service the server has no key of (other/localhost
	// instead of zookeeper/localhost): the server refuses, the client
	// ends in AUTH_FAILED. (A stale client keytab fails the Java
	// client's own JAAS login instead, after which ZooKeeper's client
	// goes on unauthenticated, whatever the server.)
	curator.RunSASLCheckJAAS(t, addr, clientJAAS(clientKT, clientPrincipal),
		[]string{krb5Flag, "-Dzookeeper.sasl.client.username=other"}, clientPrincipal, "/unused", false)
	return pass
}

// TestJavaClient: an unchanged ZooKeeper Java client authenticates with
// Kerberos to zkgo and to Apache ZooKeeper, with the same outcome.
func TestJavaClient(t *testing.T) {
	sameOnBoth(t, "Java client", func(t *testing.T, addr string) string {
		return normalizeWhoAmI(checkJavaClient(t, addr))
	})
}

// sameOnBoth runs check against a zkgo server (with the realm's full
// principals as ids) and then, unless it could not start, against Apache
// ZooKeeper: both must give the same result.
func sameOnBoth(t *testing.T, what string, check func(t *testing.T, addr string) string) {
	t.Helper()
	needKDC(t)
	srv := startZkgo(t, krb.NameRules{})
	got := check(t, srv.Addr())
	if apacheErr != nil {
		t.Log(apachezk.SkipMessage(apacheErr))
		return
	}
	if want := check(t, apache.Addr()); got != want {
		t.Errorf("%s: zkgo %q, Apache ZooKeeper %q", what, got, want)
	}
}

// normalizeWhoAmI sorts the ids of SaslCheck's "whoAmI [...]": ZooKeeper
// lists a connection's sasl id before its ip id, zkgo after (with
// DIGEST-MD5 as well).
func normalizeWhoAmI(pass string) string {
	start, end := strings.Index(pass, "["), strings.Index(pass, "]")
	if start < 0 || end < start {
		return pass
	}
	ids := strings.Fields(pass[start+1 : end])
	sort.Strings(ids)
	return pass[:start+1] + strings.Join(ids, " ") + pass[end:]
}
