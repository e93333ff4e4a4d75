package tlsconf_test

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"software.sslmate.com/src/go-pkcs12"
)

// The format is told from the bytes: JKS and JCEKS by their magic,
// PKCS12 by its DER structure (not its first byte alone), PEM by its
// BEGIN line.
func TestSniffStore(t *testing.T) {
	p := newPKI(t)
	cert, key := p.issue(t, "server")
	p12, err := pkcs12.Modern.Encode(key, cert, []*x509.Certificate{p.Cert}, "secret")
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	for _, c := range []struct {
		name    string
		data    []byte
		format  string // "": an error
		wantErr string
	}{
		{"JKS", []byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2}, tlsconf.FormatJKS, ""},
		{"JCEKS", []byte{0xce, 0xce, 0xce, 0xce, 0, 0, 0, 2}, "", "JCEKS is not supported"},
		{"PKCS12", p12, tlsconf.FormatPKCS12, ""},
		{"PKCS12 cut short", p12[:100], tlsconf.FormatPKCS12, "truncated PKCS12 store"},
		{"PKCS12 and more", append(append([]byte(nil), p12...), '\n'), tlsconf.FormatPKCS12, ""},
		{"PKCS12 in BER", append([]byte{0x30, 0x80}, p12[4:]...), tlsconf.FormatPKCS12, "BER"},
		{"SEQUENCE, version 2", []byte{0x30, 0x06, 0x02, 0x01, 0x02, 0x30, 0x01, 0x00}, "", "not a PKCS12 store"},
		{"SEQUENCE, no INTEGER", []byte{0x30, 0x05, 0x04, 0x03, 0x02, 0x01, 0x03}, "", "PEM, PKCS12 and JKS"},
		{"0x30 alone", []byte("0 and then text"), "", "PEM, PKCS12 and JKS"},
		{"DER certificate", cert.Raw, "", "a bare certificate?"},
		{"DER private key", pkcs8, "", "a bare private key?"},
		{"PEM", certPEM, tlsconf.FormatPEM, ""},
		{"PEM after text", append([]byte("Bag Attributes\n    friendlyName: server\n"), certPEM...), tlsconf.FormatPEM, ""},
		{"text", []byte("hello"), "", `beginning "hello"`},
		{"binary", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "", "beginning 00 01 02 03 04 05 06 07"},
		{"empty", nil, "", "the file is empty"},
	} {
		format, err := tlsconf.SniffStore(c.data)
		if format != c.format || (err == nil) != (c.wantErr == "") || err != nil && !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: %q, %v; want %q, %q", c.name, format, err, c.format, c.wantErr)
		}
	}
}

// A PKCS12 store need not list its key's certificate first: it is found
// by its public key, and each certificate is sent once.
func TestKeyAndChainOrder(t *testing.T) {
	p := newPKI(t)
	leaf, key := p.issue(t, "server")
	other, _ := p.issue(t, "other")
	cert, err := tlsconf.KeyAndChain(key, []*x509.Certificate{p.Cert, leaf, p.Cert})
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.Certificate) != 2 || !bytes.Equal(cert.Certificate[0], leaf.Raw) || !bytes.Equal(cert.Certificate[1], p.Cert.Raw) || cert.Leaf != leaf {
		t.Errorf("chain of %d certificates, leaf %v", len(cert.Certificate), cert.Leaf.Subject)
	}
	if _, err := tlsconf.KeyAndChain(key, []*x509.Certificate{p.Cert, other}); err == nil {
		t.Error("a key without its certificate was accepted")
	}
}
