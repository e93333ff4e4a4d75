package tlsdiff

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The test's certificates. TestMain has no testing.TB, so these helpers
// return errors instead of using tests/framework/tlstest (whose subjects are
// always CN=name,O=zkgo).

// A client is one client certificate of the tests: the key store given to
// the TLS client, and the identity ZooKeeper gives it.
type client struct {
	name string
	// rdns is the certificate's subject, most general first as encoded.
	rdns pkix.RDNSequence
	// javaName is X500Principal.getName() of the subject (RFC 2253, most
	// specific first): the x509 identity Apache ZooKeeper gives the
	// certificate, written out by hand from Java's rules (AVA.
	// toRFC2253String) so that both servers are checked against it.
	javaName string
	// untrusted: signed by a CA the servers do not trust; expired: no
	// longer valid; serverOnly: for server authentication only (extended
	// key usage).
	untrusted, expired, serverOnly bool

	cert tls.Certificate // set by writeCerts
}

// Object identifiers of the attributes used in the subjects.
var (
	oidC      = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidO      = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU     = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidCN     = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidSerial = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidDC     = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidUID    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidEmail  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

func atv(oid asn1.ObjectIdentifier, v any) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: oid, Value: v}
}

// utf8 and ia5 force a string type (asn1.Marshal picks PrintableString
// when it can, UTF8String otherwise).
func utf8(s string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: []byte(s)}
}

func ia5(s string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagIA5String, Bytes: []byte(s)}
}

func one(a pkix.AttributeTypeAndValue) pkix.RelativeDistinguishedNameSET {
	return pkix.RelativeDistinguishedNameSET{a}
}

// superSubject is the x509 super user (X509AuthenticationProvider.superUser).
const superSubject = "CN=zkadmin,O=zkgo"

// clients are the certificates the cases connect with; "anon" connects
// without one.
var clients = []*client{
	{
		name:     "alice",
		rdns:     pkix.RDNSequence{one(atv(oidO, "zkgo")), one(atv(oidCN, "alice"))},
		javaName: "CN=alice,O=zkgo",
	},
	{
		// Characters RFC 2253 escapes, and more: Java escapes '=' and
		// '#' anywhere, and every leading and trailing space.
		name: "bob",
		rdns: pkix.RDNSequence{
			one(atv(oidC, "DE")),
			one(atv(oidO, utf8("Acme, Inc."))),
			one(atv(oidOU, utf8("R+D"))),
			one(atv(oidCN, utf8(`  #bob "the builder"; <x>=y\z `))),
		},
		javaName: `CN=\ \ \#bob \"the builder\"\; \<x\>\=y\\z\ ,OU=R\+D,O=Acme\, Inc.,C=DE`,
	},
	{
		// A multi-valued RDN, domain components, repeated types, non-ASCII,
		// and attributes without an RFC 2253 keyword (hex of their DER).
		name: "carol",
		rdns: pkix.RDNSequence{
			one(atv(oidDC, ia5("org"))),
			one(atv(oidDC, ia5("example"))),
			one(atv(oidO, utf8("zkgo"))),
			pkix.RelativeDistinguishedNameSET{atv(oidOU, utf8("ops")), atv(oidUID, utf8("carol"))},
			one(atv(oidOU, utf8("eu"))),
			one(atv(oidCN, utf8("Jürgen Müller"))),
			one(atv(oidEmail, ia5("carol@example.org"))),
			one(atv(oidSerial, "42")),
		},
		javaName: "2.5.4.5=#13023432,1.2.840.113549.1.9.1=#16116361726f6c406578616d706c652e6f7267," +
			"CN=Jürgen Müller,OU=eu,OU=ops+UID=carol,O=zkgo,DC=example,DC=org",
	},
	{
		name:     "zkadmin",
		rdns:     pkix.RDNSequence{one(atv(oidO, "zkgo")), one(atv(oidCN, "zkadmin"))},
		javaName: superSubject,
	},
	{
		// No subject at all (the names are in the alternative names):
		// the identity is the empty string.
		name:     "nosubject",
		rdns:     pkix.RDNSequence{},
		javaName: "",
	},
	{
		name:      "mallory",
		rdns:      pkix.RDNSequence{one(atv(oidO, "zkgo")), one(atv(oidCN, "mallory"))},
		javaName:  "CN=mallory,O=zkgo",
		untrusted: true,
	},
	{
		name:     "expired",
		rdns:     pkix.RDNSequence{one(atv(oidO, "zkgo")), one(atv(oidCN, "expired"))},
		javaName: "CN=expired,O=zkgo",
		expired:  true,
	},
	{
		name:       "serveronly",
		rdns:       pkix.RDNSequence{one(atv(oidO, "zkgo")), one(atv(oidCN, "serveronly"))},
		javaName:   "CN=serveronly,O=zkgo",
		serverOnly: true,
	},
}

func clientByName(name string) *client {
	for _, c := range clients {
		if c.name == name {
			return c
		}
	}
	panic("tlsdiff: no client certificate " + name)
}

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

var serial int64 = 1

func newCA(cn string) (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	return &ca{cert: c, key: key}, err
}

// issue signs a certificate for subject (DER), valid for client and server
// authentication on localhost, unless c says otherwise.
func (a *ca) issue(subject []byte, c *client) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), RawSubject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	}
	if c != nil && c.expired {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	}
	if c != nil && c.serverOnly {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// writePEM writes a PEM key store (key, then certificate) or, with a nil
// key, a trust store.
func writePEM(path string, cert *x509.Certificate, key *ecdsa.PrivateKey) error {
	var out []byte
	if key != nil {
		kb, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		out = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})
	}
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	return os.WriteFile(path, out, 0o600)
}

// pki is what the servers are configured with.
type pki struct {
	dir        string
	keyStore   string // server.pem
	trustStore string // ca.pem
	roots      *x509.CertPool
}

// writeCerts makes the CA, the server's key store and the clients'
// certificates in dir.
func writeCerts(dir string) (*pki, error) {
	trusted, err := newCA("zkgo tlsdiff CA")
	if err != nil {
		return nil, err
	}
	rogue, err := newCA("zkgo tlsdiff rogue CA")
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, keyStore: filepath.Join(dir, "server.pem"), trustStore: filepath.Join(dir, "ca.pem"), roots: x509.NewCertPool()}
	p.roots.AddCert(trusted.cert)
	if err := writePEM(p.trustStore, trusted.cert, nil); err != nil {
		return nil, err
	}
	subj, err := asn1.Marshal(pkix.Name{CommonName: "localhost", Organization: []string{"zkgo"}}.ToRDNSequence())
	if err != nil {
		return nil, err
	}
	srv, err := trusted.issue(subj, nil)
	if err != nil {
		return nil, err
	}
	if err := writePEM(p.keyStore, srv.Leaf, srv.PrivateKey.(*ecdsa.PrivateKey)); err != nil {
		return nil, err
	}
	for _, c := range clients {
		subj, err := asn1.Marshal(c.rdns)
		if err != nil {
			return nil, fmt.Errorf("subject of %s: %w", c.name, err)
		}
		signer := trusted
		if c.untrusted {
			signer = rogue
		}
		if c.cert, err = signer.issue(subj, c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// tlsConfig is the configuration of a TLS client presenting the
// certificate of name ("anon": none).
func (p *pki) tlsConfig(name string) *tls.Config {
	cfg := &tls.Config{RootCAs: p.roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if name != "anon" {
		// Always send it: Go's client would otherwise leave out a
		// certificate whose issuer is not among the CAs the server's
		// certificate request names (an untrusted one), and connect as
		// a client without a certificate.
		cert := clientByName(name).cert
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return cfg
}
