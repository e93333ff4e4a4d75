// Package tlstest makes certificates for tests: a CA, and certificates it
// signs for servers and clients, written as PEM files.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// CA is a test certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey

	mu     sync.Mutex // guards serial
	serial int64
}

// NewCA makes a CA valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: c, Key: key, serial: 1}
}

// Issue signs a certificate with subject CN=cn,O=zkgo, valid for server
// and client authentication, naming cn, localhost and 127.0.0.1.
func (ca *CA) Issue(t testing.TB, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	return ca.IssueFor(t, cn, []string{cn, "localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
}

// IssueFor is Issue for a certificate valid for the given names and
// addresses only.
func (ca *CA) IssueFor(t testing.TB, cn string, dnsNames []string, ips []net.IP) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	ca.mu.Lock()
	ca.serial++
	serial := ca.serial
	ca.mu.Unlock()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"zkgo"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: dnsNames, IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// WritePEM writes key (if not nil) and cert to path, as a ZooKeeper PEM
// key store holds them.
func WritePEM(t testing.TB, path string, cert *x509.Certificate, key *ecdsa.PrivateKey) {
	t.Helper()
	var out []byte
	if key != nil {
		kb, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		out = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})
	}
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Files are PEM files in one directory: ca.pem (the CA's certificate),
// and NAME.pem (key and certificate) for each name given to WriteFiles.
type Files struct {
	Dir string
	CA  *CA
}

// WriteFiles makes a CA and a key store for each name in dir.
func WriteFiles(t testing.TB, dir string, names ...string) *Files {
	t.Helper()
	ca := NewCA(t, "zkgo test CA")
	WritePEM(t, filepath.Join(dir, "ca.pem"), ca.Cert, nil)
	f := &Files{Dir: dir, CA: ca}
	for _, n := range names {
		f.Add(t, n)
	}
	return f
}

// Add writes NAME.pem, signed by the CA.
func (f *Files) Add(t testing.TB, name string) {
	t.Helper()
	c, k := f.CA.Issue(t, name)
	WritePEM(t, f.Path(name), c, k)
}

// Path returns the path of NAME.pem ("ca" for the CA's certificate).
func (f *Files) Path(name string) string { return filepath.Join(f.Dir, name+".pem") }
