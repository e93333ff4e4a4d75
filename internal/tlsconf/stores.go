package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// maxStoreBytes bounds a key or trust store file.
const maxStoreBytes = 16 << 20

// storeType returns the store's type, from Type or the file name.
func storeType(s Store) (string, error) {
	if t := strings.ToUpper(strings.TrimSpace(s.Type)); t != "" {
		switch t {
		case "PEM", "PKCS12", "JKS":
			return t, nil
		case "BCFKS":
			return "", fmt.Errorf("tlsconf: %s: store type BCFKS is not supported (PEM, PKCS12, JKS)", s.Location)
		}
		return "", fmt.Errorf("tlsconf: %s: unknown store type %q (PEM, PKCS12, JKS)", s.Location, s.Type)
	}
	switch strings.ToLower(filepath.Ext(s.Location)) {
	case ".pem", ".crt", ".cer", ".key":
		return "PEM", nil
	case ".p12", ".pfx":
		return "PKCS12", nil
	case ".jks":
		return "JKS", nil
	}
	return "", fmt.Errorf("tlsconf: %s: cannot tell the store type from the file name; set its type (PEM, PKCS12, JKS)", s.Location)
}

func readStore(s Store) ([]byte, error) {
	f, err := os.Open(s.Location)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	if fi.Size() > maxStoreBytes {
		return nil, fmt.Errorf("tlsconf: %s: %d bytes, more than a store may hold (%d)", s.Location, fi.Size(), maxStoreBytes)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("tlsconf: %s: %w", s.Location, err)
	}
	return b, nil
}

// LoadKeyStore reads a certificate chain and its private key.
func LoadKeyStore(s Store) (tls.Certificate, error) {
	typ, err := storeType(s)
	if err != nil {
		return tls.Certificate{}, err
	}
	data, err := readStore(s)
	if err != nil {
		return tls.Certificate{}, err
	}
	var cert tls.Certificate
	switch typ {
	case "PEM":
		cert, err = pemKeyStore(data, s.Location)
	case "PKCS12":
		var key any
		var leaf *x509.Certificate
		var chain []*x509.Certificate
		key, leaf, chain, err = pkcs12.DecodeChain(data, s.Password)
		if err == nil {
			cert = tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
			for _, c := range chain {
				cert.Certificate = append(cert.Certificate, c.Raw)
			}
		}
	case "JKS":
		cert, err = jksKeyStore(data, s.Password)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconf: key store %s (%s): %w", s.Location, typ, err)
	}
	if err := checkKeyPair(cert); err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconf: key store %s: %w", s.Location, err)
	}
	return cert, nil
}

// LoadTrustStore reads the certificates a peer's chain may end in.
func LoadTrustStore(s Store) (*x509.CertPool, error) {
	typ, err := storeType(s)
	if err != nil {
		return nil, err
	}
	data, err := readStore(s)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch typ {
	case "PEM":
		certs, err = pemCerts(data)
	case "PKCS12":
		certs, err = pkcs12.DecodeTrustStore(data, s.Password)
	case "JKS":
		certs, err = jksTrusted(data, s.Password)
	}
	if err == nil && len(certs) == 0 {
		err = errors.New("no certificates")
	}
	if err != nil {
		return nil, fmt.Errorf("tlsconf: trust store %s (%s): %w", s.Location, typ, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pemKeyStore reads a PEM key store: the private key and the certificate
// chain (leaf first) in one file, as ZooKeeper's PEM key stores hold them.
func pemKeyStore(data []byte, name string) (tls.Certificate, error) {
	var certPEM, keyPEM bytes.Buffer
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE":
			pem.Encode(&certPEM, b)
		case b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "":
			return tls.Certificate{}, errors.New("the private key is encrypted; zkgo reads unencrypted PEM keys (or use PKCS12 or JKS, whose password it uses)")
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			if keyPEM.Len() > 0 {
				return tls.Certificate{}, errors.New("more than one private key")
			}
			pem.Encode(&keyPEM, b)
		}
	}
	if certPEM.Len() == 0 || keyPEM.Len() == 0 {
		return tls.Certificate{}, fmt.Errorf("%s must hold a private key and its certificate chain", name)
	}
	return tls.X509KeyPair(certPEM.Bytes(), keyPEM.Bytes())
}

func pemCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

// jksKeyStore reads the (first) private key entry of a JKS key store; its
// key password is the store's, as ZooKeeper expects.
func jksKeyStore(data []byte, password string) (tls.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return tls.Certificate{}, err
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(password))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("entry %q: %w", alias, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("entry %q: %w", alias, err)
		}
		cert := tls.Certificate{PrivateKey: key}
		for _, c := range e.CertificateChain {
			cert.Certificate = append(cert.Certificate, c.Content)
		}
		if len(cert.Certificate) == 0 {
			return tls.Certificate{}, fmt.Errorf("entry %q has no certificate", alias)
		}
		return cert, nil
	}
	return tls.Certificate{}, errors.New("no private key entry")
}

func jksTrusted(data []byte, password string) ([]*x509.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var raw [][]byte
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, err
			}
			raw = append(raw, e.Certificate.Content)
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil && len(chain) > 0 {
			// Java trusts the chain of a key entry's certificate too.
			raw = append(raw, chain[len(chain)-1].Content)
		}
		for _, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", alias, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// checkKeyPair checks that the private key belongs to the leaf.
func checkKeyPair(cert tls.Certificate) error {
	if len(cert.Certificate) == 0 {
		return errors.New("no certificate")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return err
	}
	pub, ok := cert.PrivateKey.(crypto.Signer)
	if !ok {
		return errors.New("the private key cannot sign")
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if e, ok := pub.Public().(equaler); !ok || !e.Equal(leaf.PublicKey) {
		return errors.New("the private key does not match the certificate")
	}
	return nil
}
