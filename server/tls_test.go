package server_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/tlstest"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// tlsServer starts a server with a TLS port and, with unified, TLS on
// the plaintext port too. Files holds server.pem, client.pem,
// other.pem, admin.pem and ca.pem.
func tlsServer(t *testing.T, unified bool, more ...func(*server.Options)) (*zktest.Server, *tlstest.Files) {
	t.Helper()
	files := tlstest.WriteFiles(t, t.TempDir(), "server", "client", "other", "admin")
	cfg, err := tlsconf.ServerConfig(tlsconf.Options{
		KeyStore:   tlsconf.Store{Location: files.Path("server")},
		TrustStore: tlsconf.Store{Location: files.Path("ca")},
		ClientAuth: "want",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.TLS = cfg
		o.SecureAddr = "127.0.0.1:0"
		o.PortUnification = unified
		o.X509SuperUser = "CN=admin,O=zkgo"
		o.HandshakeTimeout = 500 * time.Millisecond
		o.FourLetterWords = []string{"*"}
		for _, f := range more {
			f(o)
		}
	}))
	return srv, files
}

func clientTLS(t *testing.T, files *tlstest.Files, name string) *tls.Config {
	t.Helper()
	o := tlsconf.Options{TrustStore: tlsconf.Store{Location: files.Path("ca")}, HostnameVerification: true}
	if name != "" {
		o.KeyStore = tlsconf.Store{Location: files.Path(name)}
	}
	cfg, err := tlsconf.ClientConfig(o, "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func connectTLS(t *testing.T, addr string, cfg *tls.Config) *zk.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, addr, zk.WithTLS(cfg))
	if err != nil {
		t.Fatalf("connect over TLS to %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A client certificate is an x509 identity: its subject in x509 ACLs, in
// whoAmI, and the super user's subject may do anything.
func TestTLSClientCertificateIsX509Identity(t *testing.T) {
	srv, files := tlsServer(t, false)
	secure := srv.SecureAddr().String()
	ctx := context.Background()

	owner := connectTLS(t, secure, clientTLS(t, files, "client"))
	who, err := owner.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range who {
		found = found || w.AuthScheme == "x509" && w.User == "CN=client,O=zkgo"
	}
	if !found {
		t.Fatalf("whoAmI = %+v, want x509 CN=client,O=zkgo", who)
	}
	acl := []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: zk.SchemeX509, ID: "CN=client,O=zkgo"}}}
	if _, err := owner.Create(ctx, "/x509", []byte("secret"), acl, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	// The creator's "auth" ACL names its certificate too.
	if _, err := owner.Create(ctx, "/mine", nil, zk.CreatorAllACL, zk.ModePersistent); err != nil {
		t.Fatalf("CreatorAllACL with a client certificate: %v", err)
	}
	if got, _, err := owner.GetACL(ctx, "/mine"); err != nil || len(got) != 1 || got[0].ID.Scheme != "x509" || got[0].ID.ID != "CN=client,O=zkgo" {
		t.Fatalf("ACL of /mine: %+v, %v", got, err)
	}
	if b, _, err := owner.Get(ctx, "/x509"); err != nil || string(b) != "secret" {
		t.Fatalf("owner reads: %q, %v", b, err)
	}
	other := connectTLS(t, secure, clientTLS(t, files, "other"))
	if _, _, err := other.Get(ctx, "/x509"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("another certificate reads: %v, want ErrNoAuth", err)
	}
	anon := connectTLS(t, secure, clientTLS(t, files, "")) // clientAuth=want: no certificate is allowed
	if _, _, err := anon.Get(ctx, "/x509"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a client without a certificate reads: %v, want ErrNoAuth", err)
	}
	admin := connectTLS(t, secure, clientTLS(t, files, "admin"))
	if b, _, err := admin.Get(ctx, "/x509"); err != nil || string(b) != "secret" {
		t.Fatalf("the x509 super user reads: %q, %v", b, err)
	}
	// The plaintext port carries no TLS (no unification): a TLS client
	// cannot connect there, nor a plaintext client to the TLS port.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if c, err := zk.Connect(cctx, srv.Addr(), zk.WithTLS(clientTLS(t, files, "client")), zk.WithConnectRetry(zk.UntilElapsed{Max: time.Second, Delay: 100 * time.Millisecond})); err == nil {
		c.Close()
		t.Fatal("a TLS client connected to the plaintext port")
	}
	nc, err := net.Dial("tcp", secure)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte("ruok"))
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, _ := io.ReadAll(nc); len(b) != 0 {
		t.Fatalf("the TLS port answered plaintext with %q", b)
	}
}

// With client.portUnification one port serves TLS and plaintext clients
// at once, and four-letter words in plaintext.
func TestTLSPortUnification(t *testing.T) {
	srv, files := tlsServer(t, true)
	ctx := context.Background()
	tlsConn := connectTLS(t, srv.Addr(), clientTLS(t, files, "client"))
	plainCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	plain, err := zk.Connect(plainCtx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := tlsConn.Create(ctx, "/u", []byte("tls"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if b, _, err := plain.Get(ctx, "/u"); err != nil || string(b) != "tls" {
		t.Fatalf("plaintext client reads %q, %v", b, err)
	}
	if got := fourLetter(t, srv.Addr(), "ruok"); got != "imok" {
		t.Fatalf("ruok on the unified port: %q", got)
	}
	who, err := tlsConn.WhoAmI(ctx)
	if err != nil || len(who) < 2 {
		t.Fatalf("whoAmI over TLS on the unified port: %+v, %v", who, err)
	}
}

// A TLS client whose certificate the trust store does not accept is
// refused; one that never finishes its TLS handshake is closed after the
// handshake timeout.
func TestTLSRefusals(t *testing.T) {
	files := tlstest.WriteFiles(t, t.TempDir(), "server")
	cfg, err := tlsconf.ServerConfig(tlsconf.Options{
		KeyStore: tlsconf.Store{Location: files.Path("server")}, TrustStore: tlsconf.Store{Location: files.Path("ca")},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.TLS, o.Addr, o.SecureAddr = cfg, "", "127.0.0.1:0"
		o.HandshakeTimeout = 300 * time.Millisecond
	}))
	if srv.SecureAddr() == nil || srv.Addr() != srv.SecureAddr().String() {
		t.Fatalf("TLS-only server: Addr %v, SecureAddr %v", srv.Addr(), srv.SecureAddr())
	}
	strangers := tlstest.WriteFiles(t, t.TempDir(), "mallory")
	bad := clientTLS(t, files, "")
	stranger, err := tls.LoadX509KeyPair(strangers.Path("mallory"), strangers.Path("mallory"))
	if err != nil {
		t.Fatal(err)
	}
	bad.Certificates = []tls.Certificate{stranger}
	for name, cfg := range map[string]*tls.Config{"no certificate (clientAuth=need)": clientTLS(t, files, ""), "a certificate of another CA": bad} {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := zk.Connect(cctx, srv.Addr(), zk.WithTLS(cfg), zk.WithConnectRetry(zk.UntilElapsed{Max: time.Second, Delay: 100 * time.Millisecond}))
		cancel()
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", name)
		}
	}
	// Connect over TCP and send nothing: closed at the handshake timeout.
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a silent connection to the TLS port was not closed: %v", err)
	}
}

// The x509 identity is the subject as Java writes it
// (X500Principal.getName()), so that ACLs written by Java clients match;
// addauth x509 re-authenticates the connection's certificate, whatever
// its payload, and fails without one; whoAmI shows the x509 super user's
// super id without a user, as ZooKeeper does.
func TestTLSX509IdentityAndAddAuth(t *testing.T) {
	srv, files := tlsServer(t, false)
	secure := srv.SecureAddr().String()
	ctx := context.Background()
	cert, key := files.CA.IssueFor(t, `a=b #c, "d"`, []string{"localhost"}, nil)
	tlstest.WritePEM(t, files.Path("special"), cert, key)
	const subject = `CN=a\=b \#c\, \"d\",O=zkgo` // Go's pkix.Name.String(): CN=a=b #c\, \"d\",O=zkgo

	has := func(c *zk.Conn, want zk.ClientInfo) bool {
		t.Helper()
		who, err := c.WhoAmI(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range who {
			if w == want {
				return true
			}
		}
		t.Logf("whoAmI: %+v", who)
		return false
	}
	special := connectTLS(t, secure, clientTLS(t, files, "special"))
	if !has(special, zk.ClientInfo{AuthScheme: "x509", User: subject}) {
		t.Fatalf("no x509 identity %q", subject)
	}
	acl := []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: zk.SchemeX509, ID: subject}}}
	if _, err := special.Create(ctx, "/special", []byte("s"), acl, zk.ModePersistent); err != nil {
		t.Fatalf("create with the ACL of its own subject: %v", err)
	}
	if _, _, err := special.Get(ctx, "/special"); err != nil {
		t.Fatalf("the certificate's ACL does not match it: %v", err)
	}
	if err := special.AddAuth(ctx, "x509", []byte("CN=admin,O=zkgo")); err != nil {
		t.Fatalf("addauth x509 with a certificate: %v", err)
	}
	if has(special, zk.ClientInfo{AuthScheme: "super"}) {
		t.Fatal("addauth x509 took the payload for the identity")
	}

	admin := connectTLS(t, secure, clientTLS(t, files, "admin"))
	if !has(admin, zk.ClientInfo{AuthScheme: "super"}) || !has(admin, zk.ClientInfo{AuthScheme: "x509", User: "CN=admin,O=zkgo"}) {
		t.Fatal("the x509 super user's ids")
	}

	anon := connectTLS(t, secure, clientTLS(t, files, ""))
	if err := anon.AddAuth(ctx, "x509", []byte("CN=admin,O=zkgo")); !errors.Is(err, zk.ErrAuthFailed) {
		t.Fatalf("addauth x509 without a certificate: %v, want ErrAuthFailed", err)
	}
}

// The TLS gauges: connections without a verified client certificate
// (plaintext, or TLS without one) by locality, handshakes in progress,
// and failed handshakes (a certificate the trust store refuses).
func TestTLSMetrics(t *testing.T) {
	srv, files := tlsServer(t, true, func(o *server.Options) { o.MetricsAddr = "127.0.0.1:0" })
	connectTLS(t, srv.Addr(), clientTLS(t, files, "client")) // mutual TLS
	connectTLS(t, srv.Addr(), clientTLS(t, files, ""))       // TLS, no certificate
	plainCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	plain, err := zk.Connect(plainCtx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	strangers := tlstest.WriteFiles(t, t.TempDir(), "mallory")
	stranger, err := tls.LoadX509KeyPair(strangers.Path("mallory"), strangers.Path("mallory"))
	if err != nil {
		t.Fatal(err)
	}
	bad := clientTLS(t, files, "")
	bad.Certificates = []tls.Certificate{stranger}
	nc, err := tls.Dial("tcp", srv.Addr(), bad)
	if err == nil {
		// TLS 1.3: the server's verdict on the certificate arrives with
		// the first read.
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = nc.Read(make([]byte, 1))
		nc.Close()
	}
	if err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
	want := map[string]float64{"non_mtls_local_conn_count": 2, "non_mtls_remote_conn_count": 0,
		"auth_failed_count": 1, "outstanding_tls_handshake": 0}
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		fams = scrape(t, srv.Server)
		ok := true
		for name, v := range want {
			if got, _ := value(fams, name); got != v {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			for name, v := range want {
				got, _ := value(fams, name)
				t.Errorf("%s = %v, want %v", name, got, v)
			}
			return
		}
	}
}
