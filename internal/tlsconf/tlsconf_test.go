package tlsconf_test

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/tests/framework/tlstest"
	"software.sslmate.com/src/go-pkcs12"
)

type pki struct{ *tlstest.CA }

func newPKI(t *testing.T) *pki { return &pki{tlstest.NewCA(t, "zkgo test CA")} }

func (p *pki) issue(t *testing.T, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	return p.Issue(t, cn)
}

func writePEM(t *testing.T, path string, cert *x509.Certificate, key *ecdsa.PrivateKey) {
	tlstest.WritePEM(t, path, cert, key)
}

// handshake runs a TLS handshake between the configs over loopback and
// returns the certificate each side saw (nil if none) or the error.
func handshake(t *testing.T, server, client *tls.Config) (seenByClient, seenByServer *x509.Certificate, err error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	var peer *x509.Certificate
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer nc.Close()
		sc := tls.Server(nc, server)
		sc.SetDeadline(time.Now().Add(10 * time.Second))
		err = sc.Handshake()
		if err == nil && len(sc.ConnectionState().PeerCertificates) > 0 {
			peer = sc.ConnectionState().PeerCertificates[0]
		}
		if err == nil {
			sc.Write([]byte{1}) // TLS 1.3: the client learns of a refusal on its first read
		}
		srvErr <- err
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cc := tls.Client(nc, client)
	cc.SetDeadline(time.Now().Add(10 * time.Second))
	err = cc.Handshake()
	if err == nil {
		_, err = cc.Read(make([]byte, 1))
	}
	serr := <-srvErr
	if err == nil {
		err = serr
	}
	if err != nil {
		return nil, nil, err
	}
	return cc.ConnectionState().PeerCertificates[0], peer, nil
}

func TestPEMStoresAndClientAuth(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t)
	sc, sk := p.issue(t, "server")
	cc, ck := p.issue(t, "client")
	writePEM(t, filepath.Join(dir, "server.pem"), sc, sk)
	writePEM(t, filepath.Join(dir, "client.pem"), cc, ck)
	writePEM(t, filepath.Join(dir, "ca.pem"), p.Cert, nil)
	trust := tlsconf.Store{Location: filepath.Join(dir, "ca.pem")}
	srv, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: filepath.Join(dir, "server.pem")}, TrustStore: trust})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := tlsconf.ClientConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: filepath.Join(dir, "client.pem")}, TrustStore: trust, HostnameVerification: true}, "server")
	if err != nil {
		t.Fatal(err)
	}
	seenC, seenS, err := handshake(t, srv, cli)
	if err != nil {
		t.Fatal(err)
	}
	if seenC.Subject.CommonName != "server" || seenS == nil || seenS.Subject.CommonName != "client" {
		t.Fatalf("client saw %v, server saw %v", seenC.Subject, seenS)
	}
	// ssl.clientAuth=need (the default): a client without a certificate
	// is refused.
	anon, _ := tlsconf.ClientConfig(tlsconf.Options{TrustStore: trust, HostnameVerification: true}, "server")
	if _, _, err := handshake(t, srv, anon); err == nil {
		t.Fatal("a client without a certificate was accepted with clientAuth=need")
	}
	// want: accepted without one.
	want, _ := tlsconf.ServerConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: filepath.Join(dir, "server.pem")}, TrustStore: trust, ClientAuth: "want"})
	if _, seen, err := handshake(t, want, anon); err != nil || seen != nil {
		t.Fatalf("clientAuth=want without a certificate: %v, %v", seen, err)
	}
	// Hostname verification: the certificate names "server", not "other".
	wrong, _ := tlsconf.ClientConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: filepath.Join(dir, "client.pem")}, TrustStore: trust, HostnameVerification: true}, "other")
	if _, _, err := handshake(t, srv, wrong); err == nil {
		t.Fatal("hostname verification accepted a certificate for another name")
	}
	lax, _ := tlsconf.ClientConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: filepath.Join(dir, "client.pem")}, TrustStore: trust}, "other")
	if _, _, err := handshake(t, srv, lax); err != nil {
		t.Fatalf("without hostname verification: %v", err)
	}
	// A certificate from another CA is refused, also without hostname
	// verification.
	other := newPKI(t)
	oc, ok := other.issue(t, "server")
	writePEM(t, filepath.Join(dir, "other.pem"), oc, ok)
	stranger, _ := tlsconf.ServerConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: filepath.Join(dir, "other.pem")}, ClientAuth: "none"})
	if _, _, err := handshake(t, stranger, lax); err == nil {
		t.Fatal("a server certificate of an unknown CA was accepted")
	}
}

// PKCS12 and JKS stores made by the JDK's keytool, as ZooKeeper users make
// them.
func TestPKCS12AndJKS(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (a JDK) is not installed; skipping the JKS/PKCS12 fixtures")
	}
	dir := t.TempDir()
	p := newPKI(t)
	sc, sk := p.issue(t, "server")
	p12, err := pkcs12.Modern.Encode(sk, sc, []*x509.Certificate{p.Cert}, "secret")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "seed.p12"), p12, 0o600)
	writePEM(t, filepath.Join(dir, "ca.pem"), p.Cert, nil)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	// keytool rewrites the key store in both formats, and makes trust stores.
	run("-importkeystore", "-srckeystore", filepath.Join(dir, "seed.p12"), "-srcstoretype", "PKCS12", "-srcstorepass", "secret",
		"-destkeystore", filepath.Join(dir, "server.jks"), "-deststoretype", "JKS", "-deststorepass", "secret", "-noprompt")
	run("-importkeystore", "-srckeystore", filepath.Join(dir, "server.jks"), "-srcstoretype", "JKS", "-srcstorepass", "secret",
		"-destkeystore", filepath.Join(dir, "server.p12"), "-deststoretype", "PKCS12", "-deststorepass", "secret", "-noprompt")
	for _, typ := range []string{"JKS", "PKCS12"} {
		name := map[string]string{"JKS": "trust.jks", "PKCS12": "trust.p12"}[typ]
		run("-importcert", "-noprompt", "-alias", "ca", "-file", filepath.Join(dir, "ca.pem"),
			"-keystore", filepath.Join(dir, name), "-storetype", typ, "-storepass", "secret")
	}
	for _, ks := range []string{"server.jks", "server.p12"} {
		for _, ts := range []string{"trust.jks", "trust.p12"} {
			srv, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: filepath.Join(dir, ks), Password: "secret"},
				TrustStore: tlsconf.Store{Location: filepath.Join(dir, ts), Password: "secret"}, ClientAuth: "none"})
			if err != nil {
				t.Fatalf("%s: %v", ks, err)
			}
			cli, err := tlsconf.ClientConfig(tlsconf.Options{TrustStore: tlsconf.Store{Location: filepath.Join(dir, ts), Password: "secret"}, HostnameVerification: true}, "server")
			if err != nil {
				t.Fatalf("%s: %v", ts, err)
			}
			if seen, _, err := handshake(t, srv, cli); err != nil || seen.SerialNumber.Cmp(sc.SerialNumber) != 0 {
				t.Fatalf("%s + %s: %v", ks, ts, err)
			}
		}
	}
	if _, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: filepath.Join(dir, "server.jks"), Password: "wrong"}); err == nil {
		t.Fatal("a JKS key store opened with the wrong password")
	}
	if _, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: filepath.Join(dir, "server.p12"), Password: "wrong"}); err == nil {
		t.Fatal("a PKCS12 key store opened with the wrong password")
	}
}

// A server re-reads its key store when the file changes: new handshakes
// get the new certificate.
func TestReloadOnChange(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t)
	c1, k1 := p.issue(t, "server")
	path := filepath.Join(dir, "server.pem")
	writePEM(t, path, c1, k1)
	writePEM(t, filepath.Join(dir, "ca.pem"), p.Cert, nil)
	srv, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: path}, ClientAuth: "none", ReloadInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := tlsconf.ClientConfig(tlsconf.Options{TrustStore: tlsconf.Store{Location: filepath.Join(dir, "ca.pem")}, HostnameVerification: true}, "server")
	seen, _, err := handshake(t, srv, cli)
	if err != nil || seen.SerialNumber.Cmp(c1.SerialNumber) != 0 {
		t.Fatalf("first handshake: %v %v", seen, err)
	}
	c2, k2 := p.issue(t, "server")
	writePEM(t, path+".tmp", c2, k2)
	os.Rename(path+".tmp", path)
	seen, _, err = handshake(t, srv, cli)
	if err != nil || seen.SerialNumber.Cmp(c2.SerialNumber) != 0 {
		t.Fatalf("after the change: serial %v, %v (want %v)", seen.SerialNumber, err, c2.SerialNumber)
	}
	// A broken file keeps the previous certificate.
	os.WriteFile(path, []byte("not a key store"), 0o600)
	if seen, _, err = handshake(t, srv, cli); err != nil || seen.SerialNumber.Cmp(c2.SerialNumber) != 0 {
		t.Fatalf("after a broken change: %v", err)
	}
}

func TestBadSettings(t *testing.T) {
	for _, o := range []tlsconf.Options{
		{Protocol: "TLSv1.1"},
		{Protocol: "SSLv9"},
		{CipherSuites: []string{"TLS_NO_SUCH_SUITE"}},
	} {
		if _, err := tlsconf.ClientConfig(o, ""); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := tlsconf.ServerConfig(tlsconf.Options{}); err != tlsconf.ErrNoKeyStore {
		t.Errorf("no key store: %v", err)
	}
	if _, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: "/no/such/file.bin"}); err == nil {
		t.Error("a store of unknown type loaded")
	}
	cfg, err := tlsconf.ClientConfig(tlsconf.Options{EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}, CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"}}, "")
	if err != nil || cfg.MinVersion != tls.VersionTLS12 || cfg.MaxVersion != tls.VersionTLS13 || len(cfg.CipherSuites) != 2 {
		t.Errorf("protocols and suites: %+v, %v", cfg, err)
	}
}

// A reloading client presents its new certificate once its key store
// file changes.
func TestClientReloadOnChange(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t)
	sc, sk := p.issue(t, "server")
	writePEM(t, filepath.Join(dir, "server.pem"), sc, sk)
	writePEM(t, filepath.Join(dir, "ca.pem"), p.Cert, nil)
	c1, k1 := p.issue(t, "client")
	path := filepath.Join(dir, "client.pem")
	writePEM(t, path, c1, k1)
	srv, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: filepath.Join(dir, "server.pem")}, TrustStore: tlsconf.Store{Location: filepath.Join(dir, "ca.pem")}, ClientAuth: "need"})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := tlsconf.ReloadingClientConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: path}, TrustStore: tlsconf.Store{Location: filepath.Join(dir, "ca.pem")},
		HostnameVerification: true, ReloadInterval: time.Nanosecond}, "server")
	if err != nil {
		t.Fatal(err)
	}
	_, client, err := handshake(t, srv, cli())
	if err != nil || client.SerialNumber.Cmp(c1.SerialNumber) != 0 {
		t.Fatalf("first handshake: %v %v", client, err)
	}
	c2, k2 := p.issue(t, "client")
	writePEM(t, path+".tmp", c2, k2)
	os.Rename(path+".tmp", path)
	_, client, err = handshake(t, srv, cli())
	if err != nil || client.SerialNumber.Cmp(c2.SerialNumber) != 0 {
		t.Fatalf("after the change: %v, %v (want serial %v)", client, err, c2.SerialNumber)
	}
}
