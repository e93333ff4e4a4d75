package tlsconf_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/zkgo/zkgo/internal/tlsconf"
	"software.sslmate.com/src/go-pkcs12"
)

// Stores made by the JDK's keytool, as operators make them: the inputs
// are foreign, and their file names say nothing reliable about their
// format (keytool writes PKCS12 since Java 9, also into server.jks).
// Made once per test binary; TestMain removes them.
var java struct {
	once sync.Once
	dir  string
	err  error
}

const (
	serverPass = "server-secret"
	clientPass = "client-secret"
	trustPass  = "trust-secret"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if java.dir != "" {
		os.RemoveAll(java.dir)
	}
	os.Exit(code)
}

// javaStores returns the directory of the keytool-made stores, skipping
// the test if there is no keytool.
func javaStores(t *testing.T) string {
	t.Helper()
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (a JDK) is not on PATH: the tests of stores made by keytool are skipped")
	}
	java.once.Do(func() { java.dir, java.err = makeJavaStores(keytool) })
	if java.err != nil {
		t.Fatal(java.err)
	}
	return java.dir
}

// makeJavaStores runs keytool (independent chains of calls at once) to
// write, in a new directory:
//
//	server.jks          PKCS12 (keytool's default) despite its name: RSA key, CN=localhost
//	server.crt          its certificate, PEM (-exportcert -rfc)
//	trust.jks           PKCS12 trust store of server.crt (-importcert)
//	client.p12          a real JKS (-storetype JKS) despite its name: EC key, CN=client
//	client.crt          its certificate, DER (-exportcert)
//	clients.truststore  JKS trust store of client.crt
//	legacy.jceks        a JCEKS key store
//	keypass.jks         a JKS key store whose key password is not the store's
//
// and, from them, server-pem.jks (server.jks's key and certificate as
// PEM) and server-cert.jks (a copy of server.crt).
func makeJavaStores(keytool string) (string, error) {
	dir, err := os.MkdirTemp("", "tlsconf-keytool-")
	if err != nil {
		return "", err
	}
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The JVM starts in half the CPU time without its optimizing
		// compiler; keytool's work is short.
		cmd := exec.CommandContext(ctx, keytool, append([]string{"-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("keytool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	chains := [][][]string{
		{
			{"-genkeypair", "-keystore", "server.jks", "-storepass", serverPass, "-alias", "server", "-keyalg", "RSA", "-keysize", "2048",
				"-dname", "CN=localhost", "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2"},
			{"-exportcert", "-rfc", "-keystore", "server.jks", "-storepass", serverPass, "-alias", "server", "-file", "server.crt"},
			{"-importcert", "-noprompt", "-keystore", "trust.jks", "-storepass", trustPass, "-alias", "server", "-file", "server.crt"},
		},
		{
			{"-genkeypair", "-storetype", "JKS", "-keystore", "client.p12", "-storepass", clientPass, "-alias", "client", "-keyalg", "EC",
				"-dname", "CN=client", "-validity", "2"},
			{"-exportcert", "-keystore", "client.p12", "-storepass", clientPass, "-alias", "client", "-file", "client.crt"},
			{"-importcert", "-noprompt", "-storetype", "JKS", "-keystore", "clients.truststore", "-storepass", trustPass, "-alias", "client", "-file", "client.crt"},
		},
		{
			{"-genkeypair", "-storetype", "JCEKS", "-keystore", "legacy.jceks", "-storepass", serverPass, "-alias", "legacy", "-keyalg", "EC", "-dname", "CN=legacy"},
		},
		{
			{"-genkeypair", "-storetype", "JKS", "-keystore", "keypass.jks", "-storepass", serverPass, "-keypass", "another-secret",
				"-alias", "keypass", "-keyalg", "EC", "-dname", "CN=keypass"},
		},
	}
	errs := make([]error, len(chains))
	var wg sync.WaitGroup
	for i, chain := range chains {
		wg.Go(func() {
			for _, args := range chain {
				if errs[i] = run(args...); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return dir, err
	}
	// The key keytool made, as a PEM key store named .jks; its
	// certificate (PEM), as a trust store named .jks.
	p12, err := os.ReadFile(filepath.Join(dir, "server.jks"))
	if err != nil {
		return dir, err
	}
	key, leaf, _, err := pkcs12.DecodeChain(p12, serverPass)
	if err != nil {
		return dir, fmt.Errorf("server.jks: %v", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return dir, err
	}
	pemStore := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})...)
	if err := os.WriteFile(filepath.Join(dir, "server-pem.jks"), pemStore, 0o600); err != nil {
		return dir, err
	}
	crt, err := os.ReadFile(filepath.Join(dir, "server.crt"))
	if err != nil {
		return dir, err
	}
	return dir, os.WriteFile(filepath.Join(dir, "server-cert.jks"), crt, 0o600)
}

// Mutual TLS between a server and a client configured with keytool's
// stores, whatever their names say, with their type unset (told from
// their content), set to the other of JKS and PKCS12 (read anyway, as the
// JDK reads them), or PEM in files named .jks.
func TestKeytoolStoresHandshake(t *testing.T) {
	dir := javaStores(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	for _, c := range []struct {
		name                   string
		serverKey, serverTrust tlsconf.Store
		clientKey, clientTrust tlsconf.Store
		clientAuth             string
	}{{
		name:        "types unset",
		serverKey:   tlsconf.Store{Location: f("server.jks"), Password: serverPass},
		serverTrust: tlsconf.Store{Location: f("clients.truststore"), Password: trustPass},
		clientKey:   tlsconf.Store{Location: f("client.p12"), Password: clientPass},
		clientTrust: tlsconf.Store{Location: f("trust.jks"), Password: trustPass},
	}, {
		name:        "JKS and PKCS12 types read either",
		serverKey:   tlsconf.Store{Location: f("server.jks"), Password: serverPass, Type: "JKS"},
		serverTrust: tlsconf.Store{Location: f("clients.truststore"), Password: trustPass, Type: "pkcs12"},
		clientKey:   tlsconf.Store{Location: f("client.p12"), Password: clientPass, Type: "PKCS12"},
		clientTrust: tlsconf.Store{Location: f("trust.jks"), Password: trustPass, Type: "JKS"},
	}, {
		name:        "key stores as trust stores",
		serverKey:   tlsconf.Store{Location: f("server.jks"), Password: serverPass},
		serverTrust: tlsconf.Store{Location: f("client.p12"), Password: clientPass},
		clientKey:   tlsconf.Store{Location: f("client.p12"), Password: clientPass},
		clientTrust: tlsconf.Store{Location: f("server.jks"), Password: serverPass},
	}, {
		name:        "PEM named .jks",
		serverKey:   tlsconf.Store{Location: f("server-pem.jks")},
		clientTrust: tlsconf.Store{Location: f("server-cert.jks"), Type: "PEM"},
		clientAuth:  "none",
	}} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: c.serverKey, TrustStore: c.serverTrust, ClientAuth: c.clientAuth})
			if err != nil {
				t.Fatal(err)
			}
			cli, err := tlsconf.ClientConfig(tlsconf.Options{KeyStore: c.clientKey, TrustStore: c.clientTrust, HostnameVerification: true}, "localhost")
			if err != nil {
				t.Fatal(err)
			}
			seenByClient, seenByServer, err := handshake(t, srv, cli)
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if seenByClient.Subject.CommonName != "localhost" {
				t.Errorf("the client saw %v", seenByClient.Subject)
			}
			if c.clientKey.Location != "" && (seenByServer == nil || seenByServer.Subject.CommonName != "client") {
				t.Errorf("the server saw %v", seenByServer)
			}
		})
	}
	// Bytes after a PKCS12 store are ignored, as Java ignores them.
	p12, err := os.ReadFile(f("server.jks"))
	if err != nil {
		t.Fatal(err)
	}
	padded := filepath.Join(t.TempDir(), "server.jks")
	if err := os.WriteFile(padded, append(p12, "\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: padded, Password: serverPass}); err != nil {
		t.Errorf("a PKCS12 store followed by a newline: %v", err)
	}
	// A server that trusts another certificate refuses the client.
	srv, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: f("server.jks"), Password: serverPass},
		TrustStore: tlsconf.Store{Location: f("server-cert.jks")}})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := tlsconf.ClientConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: f("client.p12"), Password: clientPass},
		TrustStore: tlsconf.Store{Location: f("trust.jks"), Password: trustPass}, HostnameVerification: true}, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := handshake(t, srv, cli); err == nil {
		t.Error("a server accepted a client certificate its trust store does not hold")
	}
}

// Stores that cannot be read give an error that names the file and says
// why.
func TestKeytoolStoreErrors(t *testing.T) {
	dir := javaStores(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	tmp := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(f(name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	p12, jks := read("server.jks"), read("client.p12")
	big := filepath.Join(tmp, "huge.jks")
	if err := os.WriteFile(big, p12, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, tlsconf.MaxStoreBytes+1); err != nil {
		t.Fatal(err)
	}
	key := func(s tlsconf.Store) error { _, err := tlsconf.LoadKeyStore(s); return err }
	trust := func(s tlsconf.Store) error { _, err := tlsconf.LoadTrustStore(s); return err }
	for _, c := range []struct {
		name string
		load func(tlsconf.Store) error
		s    tlsconf.Store
		want []string
	}{
		{"PKCS12 wrong password", key, tlsconf.Store{Location: f("server.jks"), Password: "wrong"}, []string{"wrong password or damaged file"}},
		{"JKS wrong password", key, tlsconf.Store{Location: f("client.p12"), Password: "wrong"}, []string{"wrong password or damaged file"}},
		{"PKCS12 trust store wrong password", trust, tlsconf.Store{Location: f("trust.jks"), Password: "wrong"}, []string{"wrong password or damaged file"}},
		{"JKS trust store wrong password", trust, tlsconf.Store{Location: f("clients.truststore"), Password: "wrong"}, []string{"wrong password or damaged file"}},
		{"key password not the store's", key, tlsconf.Store{Location: f("keypass.jks"), Password: serverPass}, []string{"does not open with the store password"}},
		{"JCEKS", key, tlsconf.Store{Location: f("legacy.jceks"), Password: serverPass}, []string{"JCEKS is not supported", "keytool -importkeystore -deststoretype pkcs12"}},
		{"JCEKS typed JKS", trust, tlsconf.Store{Location: f("legacy.jceks"), Password: serverPass, Type: "JKS"}, []string{"JCEKS"}},
		{"truncated PKCS12", key, tlsconf.Store{Location: write("short.jks", p12[:len(p12)/2]), Password: serverPass}, []string{"truncated"}},
		{"truncated JKS", key, tlsconf.Store{Location: write("short.p12", jks[:len(jks)/2]), Password: clientPass}, []string{"truncated"}},
		{"trust store as key store", key, tlsconf.Store{Location: f("trust.jks"), Password: trustPass}, []string{"key store", "no private key"}},
		{"PKCS12 typed PEM", key, tlsconf.Store{Location: f("server.jks"), Password: serverPass, Type: "PEM"}, []string{"PEM", "PKCS12"}},
		{"PEM typed JKS", key, tlsconf.Store{Location: f("server-pem.jks"), Type: "JKS"}, []string{"set the type to PEM"}},
		{"DER certificate", trust, tlsconf.Store{Location: f("client.crt")}, []string{"not a PKCS12 store", "PEM, PKCS12 and JKS"}},
		{"text", key, tlsconf.Store{Location: write("notes.jks", []byte("keystore goes here\n"))}, []string{"keystore goes here", "PEM, PKCS12 and JKS"}},
		{"empty", trust, tlsconf.Store{Location: write("empty.p12", nil)}, []string{"empty", "PEM, PKCS12 and JKS"}},
		{"too big", key, tlsconf.Store{Location: big, Password: serverPass}, []string{"more than 16 MiB"}},
		{"unknown type", key, tlsconf.Store{Location: f("server.jks"), Password: serverPass, Type: "PKCS11"}, []string{"unknown store type"}},
	} {
		err := c.load(c.s)
		if err == nil {
			t.Errorf("%s: %s loaded", c.name, c.s.Location)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		for _, w := range append(c.want, c.s.Location) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
	// A server does not start on a store it cannot read.
	if _, err := tlsconf.ServerConfig(tlsconf.Options{KeyStore: tlsconf.Store{Location: f("server.jks"), Password: "wrong"}}); err == nil || !strings.Contains(err.Error(), "wrong password") {
		t.Errorf("ServerConfig with a wrong password: %v", err)
	}
}

// Damaged stores (cut short anywhere, a byte changed) give errors, never
// a panic nor an allocation of what a damaged length says.
func TestDamagedKeytoolStores(t *testing.T) {
	dir := javaStores(t)
	tmp := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		file, password string
		load           func(tlsconf.Store) error
		flips          int // bytes changed, one at a time; -1 every one
	}{
		{"client.p12", clientPass, func(s tlsconf.Store) error { _, err := tlsconf.LoadKeyStore(s); return err }, -1},
		{"clients.truststore", trustPass, func(s tlsconf.Store) error { _, err := tlsconf.LoadTrustStore(s); return err }, -1},
		{"server.jks", serverPass, func(s tlsconf.Store) error { _, err := tlsconf.LoadKeyStore(s); return err }, 24},
		{"trust.jks", trustPass, func(s tlsconf.Store) error { _, err := tlsconf.LoadTrustStore(s); return err }, 24},
	} {
		orig, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(tmp, c.file)
		try := func(data []byte, what string, mustFail bool) {
			t.Helper()
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			err := c.load(tlsconf.Store{Location: path, Password: c.password})
			switch {
			case err == nil && mustFail:
				t.Errorf("%s %s: loaded", c.file, what)
			case err != nil && !strings.Contains(err.Error(), path):
				t.Errorf("%s %s: the error does not name the file: %v", c.file, what, err)
			}
		}
		for n := range len(orig) {
			try(orig[:n], fmt.Sprintf("cut to %d bytes", n), true)
		}
		positions := r.Perm(len(orig))
		if c.flips >= 0 {
			positions = positions[:c.flips]
		}
		for _, i := range positions {
			data := append([]byte(nil), orig...)
			data[i] ^= 0xff
			// A JKS store's digest covers all of it: any change fails.
			try(data, fmt.Sprintf("byte %d changed", i), c.flips < 0)
		}
	}
}

// A JKS store whose lengths say more than the file holds is refused
// before keystore-go, which allocates what they say, reads it.
func TestJKSLengthsChecked(t *testing.T) {
	p := newPKI(t)
	cert, key := p.issue(t, "server")
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry("server", keystore.PrivateKeyEntry{
		CreationTime: time.Now(), PrivateKey: pkcs8,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: cert.Raw}, {Type: "X509", Content: p.Cert.Raw}},
	}, []byte("secret")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte("secret")); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	dir := t.TempDir()
	load := func(data []byte) error {
		path := filepath.Join(dir, "server.jks")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := tlsconf.LoadKeyStore(tlsconf.Store{Location: path, Password: "secret"})
		return err
	}
	if err := load(good); err != nil {
		t.Fatal(err)
	}
	// magic, version, count; tag, alias, date; key length, key; chain
	// length; its first certificate's type and length.
	keyLen := 12 + 4 + 2 + len("server") + 8
	chainLen := keyLen + 4 + int(binary.BigEndian.Uint32(good[keyLen:]))
	certLen := chainLen + 4 + 2 + len("X509")
	for _, off := range []int{8, keyLen, chainLen, certLen} {
		bad := append([]byte(nil), good...)
		binary.BigEndian.PutUint32(bad[off:], 0xffffffff)
		if err := load(bad); err == nil || !strings.Contains(err.Error(), "JKS store: ") {
			t.Errorf("a length of 2³²-1 at offset %d: %v", off, err)
		}
	}
	bad := append([]byte(nil), good...)
	binary.BigEndian.PutUint32(bad[4:], 7)
	if err := load(bad); err == nil || !strings.Contains(err.Error(), "version 7") {
		t.Errorf("JKS version 7: %v", err)
	}
}
