package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/console"
	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/internal/x500"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/tlstest"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// adminTLSKit is what an HTTPS admin port test needs: the server's stores
// (the ssl.quorum.* ones in zoo.cfg), the pool that trusts the server's
// certificate, and the CA that signs the clients' certificates (which the
// trust store holds).
type adminTLSKit struct {
	key, trust tlsconf.Store
	roots      *x509.CertPool
	clients    *tlstest.CA
	keytool    bool // the stores were made by keytool
}

// newAdminTLSKit makes the stores with keytool, as Java users make them
// (a PKCS12 key store with a self-signed key pair, a PKCS12 trust store
// holding the clients' CA), or, without Java, as PEM files.
func newAdminTLSKit(t *testing.T) *adminTLSKit {
	t.Helper()
	dir := t.TempDir()
	k := &adminTLSKit{clients: tlstest.NewCA(t, "zkgo admin clients CA")}
	tlstest.WritePEM(t, filepath.Join(dir, "clients-ca.pem"), k.clients.Cert, nil)
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Log("keytool not installed (Java): using Go-made PEM stores instead of keytool-made PKCS12 ones")
		srv := tlstest.NewCA(t, "zkgo admin server CA")
		c, key := srv.Issue(t, "localhost")
		tlstest.WritePEM(t, filepath.Join(dir, "server.pem"), c, key)
		k.key = tlsconf.Store{Location: filepath.Join(dir, "server.pem")}
		k.trust = tlsconf.Store{Location: filepath.Join(dir, "clients-ca.pem")}
		k.roots = x509.NewCertPool()
		k.roots.AddCert(srv.Cert)
		return k
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	// Named .jks as ZooKeeper's guide names them: keytool writes PKCS12
	// whatever the name, and the content decides.
	ks, ts := filepath.Join(dir, "admin.keystore.jks"), filepath.Join(dir, "admin.truststore.p12")
	run("-genkeypair", "-alias", "admin", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=localhost, O=zkgo",
		"-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2", "-storetype", "PKCS12", "-keystore", ks, "-storepass", "secret123")
	run("-importcert", "-noprompt", "-alias", "clients", "-file", filepath.Join(dir, "clients-ca.pem"),
		"-storetype", "PKCS12", "-keystore", ts, "-storepass", "secret123")
	k.key = tlsconf.Store{Location: ks, Password: "secret123"}
	k.trust = tlsconf.Store{Location: ts, Password: "secret123", Type: "PKCS12"}
	cert, err := tlsconf.LoadKeyStore(k.key)
	if err != nil {
		t.Fatalf("keytool's key store: %v", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	k.roots = x509.NewCertPool()
	k.roots.AddCert(leaf)
	k.keytool = true
	return k
}

// serverTLS is the admin port's configuration, as cmd/zkgo builds it.
func (k *adminTLSKit) serverTLS(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: k.key, TrustStore: k.trust, ClientAuth: "want"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// client returns an HTTPS client that trusts the server, presenting a
// certificate of cn from the clients' CA ("" for none).
func (k *adminTLSKit) client(t *testing.T, cn string) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: k.roots, ServerName: "localhost"}
	if cn != "" {
		c, key := k.clients.Issue(t, cn)
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{c.Raw}, PrivateKey: key, Leaf: c}}
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func httpsGet(t *testing.T, hc *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// plainGet sends a plain HTTP request by hand and returns the status line
// ("" if the connection closed without one) and the rest.
func plainGet(t *testing.T, addr, path string) (status, rest string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(c)
	status, _ = br.ReadString('\n')
	b, _ := io.ReadAll(br)
	return strings.TrimSpace(status), string(b)
}

// admin.forceHttps with keytool-made PKCS12 stores: the commands are
// served over HTTPS (with ZooKeeper's Strict-Transport-Security), and
// plain HTTP gets no command.
func TestAdminHTTPSForced(t *testing.T) {
	k := newAdminTLSKit(t)
	zs := zktest.Start(t, withAdmin(func(o *server.Options) { o.AdminTLS = k.serverTLS(t) }))
	addr := zs.Server.AdminAddr().String()
	resp, body := httpsGet(t, k.client(t, ""), "https://"+addr+"/commands/ruok")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"command": "ruok"`) || resp.TLS == nil {
		t.Fatalf("https ruok: %s %q", resp.Status, body)
	}
	if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=86400; includeSubDomains" {
		t.Errorf("Strict-Transport-Security %q", got)
	}
	status, rest := plainGet(t, addr, "/commands/ruok")
	if strings.Contains(status, "200") || strings.Contains(rest, "ruok") {
		t.Fatalf("plain HTTP on a forceHttps port: %q %q", status, rest)
	}
	t.Logf("keytool stores: %v; plain HTTP answered %q", k.keytool, status)
}

// admin.portUnification: HTTPS and plain HTTP on one port; a silent
// client holds up neither.
func TestAdminPortUnification(t *testing.T) {
	k := newAdminTLSKit(t)
	zs := zktest.Start(t, withAdmin(func(o *server.Options) { o.AdminTLS, o.AdminPortUnification = k.serverTLS(t), true }))
	addr := zs.Server.AdminAddr().String()
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for range 2 {
		resp, body := httpsGet(t, k.client(t, ""), "https://"+addr+"/commands/ruok")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"command": "ruok"`) || resp.TLS == nil {
			t.Fatalf("https ruok: %s %q", resp.Status, body)
		}
		if resp.Header.Get("Strict-Transport-Security") == "" {
			t.Error("no Strict-Transport-Security over TLS")
		}
		status, rest := plainGet(t, addr, "/commands/ruok")
		if !strings.Contains(status, "200") || !strings.Contains(rest, `"command": "ruok"`) || strings.Contains(rest, "Strict-Transport-Security") {
			t.Fatalf("plain ruok on the unified port: %q %q", status, rest)
		}
	}
}

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// A client certificate's x509 identity, over HTTPS, reads and writes
// through the console what ACLs naming it allow, and takes snapshots when
// / grants it everything; other certificates, none, and plain HTTP on the
// unified port get none of it.
func TestConsoleX509Identity(t *testing.T) {
	k := newAdminTLSKit(t)
	zs := zktest.Start(t, withAdmin(func(o *server.Options) {
		o.AdminTLS, o.AdminPortUnification = k.serverTLS(t), true
		o.AdminConsole = console.ForServer(console.Config{})
		o.AdminSnapshot, o.AdminRateLimit = true, time.Nanosecond
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zk.Connect(ctx, zs.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	aliceCert, _ := k.clients.Issue(t, "alice")
	alice, err := x500.Name(aliceCert.RawSubject)
	if err != nil || alice != "CN=alice,O=zkgo" {
		t.Fatalf("alice's subject %q %v", alice, err)
	}
	only := []zk.ACL{{Perms: zk.PermAll, ID: zk.Id{Scheme: "x509", ID: alice}}}
	if _, err := c.Create(ctx, "/x", []byte("alice-secret"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/x/kid-of-alice", nil, only, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetACL(ctx, "/x", only, -1); err != nil {
		t.Fatal(err)
	}
	addr := zs.Server.AdminAddr().String()
	base := "https://" + addr

	ac := k.client(t, "alice")
	resp, body := httpsGet(t, ac, base+"/tree?path=/x")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "alice-secret") || !strings.Contains(body, "kid-of-alice") {
		t.Fatalf("alice's certificate: %s\n%.3000s", resp.Status, body)
	}
	if !strings.Contains(html.UnescapeString(body), "x509:"+alice) {
		t.Errorf("the page does not say it acts as x509:%s:\n%.2000s", alice, body)
	}
	for name, hc := range map[string]*http.Client{"bob's certificate": k.client(t, "bob"), "no certificate": k.client(t, "")} {
		resp, body := httpsGet(t, hc, base+"/tree?path=/x")
		if strings.Contains(body, "alice-secret") || strings.Contains(body, "kid-of-alice") {
			t.Fatalf("%s read alice's node: %s\n%.3000s", name, resp.Status, body)
		}
	}
	if status, rest := plainGet(t, addr, "/tree?path=/x"); strings.Contains(rest, "alice-secret") || strings.Contains(rest, "kid-of-alice") {
		t.Fatalf("plain HTTP read alice's node: %s", status)
	}
	// A certificate from another CA is not verified: no identity.
	other := tlstest.NewCA(t, "not the trust store's CA")
	oc, okey := other.Issue(t, "alice")
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: k.roots, ServerName: "localhost",
		Certificates: []tls.Certificate{{Certificate: [][]byte{oc.Raw}, PrivateKey: okey}}}}}
	if resp, err := hc.Get(base + "/tree?path=/x"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "alice-secret") {
			t.Fatal("an unverified certificate read alice's node")
		}
	}

	// alice writes through the console with her session.
	m := consoleCSRF.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no write form for alice:\n%.3000s", body)
	}
	form := url.Values{"csrf": {html.UnescapeString(m[1])}, "action": {"set"}, "path": {"/x"}, "data": {"set-by-alice"}, "version": {"-1"}}
	req, _ := http.NewRequest(http.MethodPost, base+"/write", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	wresp, err := ac.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wresp.Body.Close()
	if resp, body := httpsGet(t, ac, base+"/tree?path=/x"); !strings.Contains(body, "set-by-alice") {
		t.Fatalf("alice's write through the console (%s): %s\n%.2000s", wresp.Status, resp.Status, body)
	}

	// The snapshot command: alice's certificate once / grants her all.
	snap := func(hc *http.Client) int {
		resp, _ := httpsGet(t, hc, base+"/commands/snapshot?streaming=false")
		return resp.StatusCode
	}
	if code := snap(ac); code != http.StatusForbidden {
		t.Fatalf("snapshot by alice with world:anyone on /: %d", code)
	}
	if _, err := c.SetACL(ctx, "/", append(only, zk.ACL{Perms: zk.PermRead, ID: zk.Id{Scheme: "world", ID: "anyone"}}), -1); err != nil {
		t.Fatal(err)
	}
	if code := snap(ac); code != http.StatusOK {
		t.Fatalf("snapshot by alice with x509:%s on /: %d", alice, code)
	}
	if code := snap(k.client(t, "bob")); code != http.StatusForbidden {
		t.Fatalf("snapshot by bob: %d", code)
	}
	if code := snap(k.client(t, "")); code != http.StatusUnauthorized {
		t.Fatalf("snapshot without a certificate: %d", code)
	}
	// ZooKeeper 3.9's header for the certificate's identity.
	snapX509 := func(hc *http.Client) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/commands/snapshot?streaming=false", nil)
		req.Header.Set("Authorization", "x509")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := snapX509(ac); code != http.StatusOK {
		t.Fatalf("snapshot by alice with Authorization: x509: %d", code)
	}
	if code := snapX509(k.client(t, "")); code != http.StatusUnauthorized {
		t.Fatalf("Authorization: x509 without a certificate: %d", code)
	}
}

// admin.needClientAuth: a client without a certificate the trust store
// verifies gets no answer.
func TestAdminHTTPSNeedClientAuth(t *testing.T) {
	k := newAdminTLSKit(t)
	cfg, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: k.key, TrustStore: k.trust, ClientAuth: "need"})
	if err != nil {
		t.Fatal(err)
	}
	zs := zktest.Start(t, withAdmin(func(o *server.Options) { o.AdminTLS = cfg }))
	u := "https://" + zs.Server.AdminAddr().String() + "/commands/ruok"
	if resp, body := httpsGet(t, k.client(t, "carol"), u); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"ruok"`) {
		t.Fatalf("with a certificate: %s %q", resp.Status, body)
	}
	if resp, err := k.client(t, "").Get(u); err == nil {
		resp.Body.Close()
		t.Fatalf("without a certificate: %s", resp.Status)
	}
}
