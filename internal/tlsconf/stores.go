package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// maxStoreBytes bounds a key or trust store file.
const maxStoreBytes = 16 << 20

// The store formats read.
const (
	formatPEM    = "PEM"
	formatPKCS12 = "PKCS12"
	formatJKS    = "JKS"
)

// readFormats ends the message about a file in no format read.
const readFormats = "key and trust stores are read in PEM, PKCS12 and JKS formats"

// errWrongPassword is the cause given when a store's integrity check
// fails: as for Java ("keystore was tampered with, or password was
// incorrect"), a wrong password cannot be told from a damaged file.
var errWrongPassword = errors.New("wrong password or damaged file (the store's integrity check failed)")

// configuredType returns the store's configured type, upper case; empty
// when it is not set.
func configuredType(s Store) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(s.Type))
	switch t {
	case "", formatPEM, formatPKCS12, formatJKS:
		return t, nil
	case "BCFKS":
		return "", errors.New("store type BCFKS is not supported (PEM, PKCS12, JKS)")
	case "JCEKS":
		return "", errors.New("store type JCEKS: JCEKS is not supported, convert the store with keytool -importkeystore -deststoretype pkcs12")
	}
	return "", fmt.Errorf("unknown store type %q (PEM, PKCS12, JKS)", s.Type)
}

// openStore reads the store s (kind is "key store" or "trust store", for
// messages) and returns its content and its format, told from the
// content whatever the file's name, as Java reads stores. A configured
// type must agree with the content, except that JKS and PKCS12 each read
// the other, as the JDK does (keystore.type.compat): keytool writes
// PKCS12 since Java 9, also into a file named server.jks.
func openStore(s Store, kind string) (data []byte, format string, err error) {
	fail := func(err error) ([]byte, string, error) {
		return nil, "", fmt.Errorf("tlsconf: %s %s: %w", kind, s.Location, err)
	}
	typ, err := configuredType(s)
	if err != nil {
		return fail(err)
	}
	data, err = readStore(s)
	if err != nil {
		return nil, "", err
	}
	format, err = sniffStore(data)
	if err != nil {
		return fail(err)
	}
	if format == formatPKCS12 {
		// Bytes after the PFX (a newline added in a copy) are ignored,
		// as Java ignores them; go-pkcs12 would refuse them.
		_, hdr, n, _ := derHeader(data)
		data = data[:hdr+n]
	}
	switch {
	case typ == formatPEM && format != formatPEM:
		return fail(fmt.Errorf("its type is set to PEM but the file holds a %s store; set the type to %s or leave it unset", format, format))
	case typ != "" && typ != formatPEM && format == formatPEM:
		return fail(fmt.Errorf("its type is set to %s but the file is PEM; set the type to PEM or leave it unset", typ))
	}
	return data, format, nil
}

// readStore reads a store file, up to maxStoreBytes.
func readStore(s Store) ([]byte, error) {
	f, err := os.Open(s.Location)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %s: %w", s.Location, err)
	}
	if len(b) > maxStoreBytes {
		return nil, fmt.Errorf("tlsconf: %s: the file has more than %d MiB, more than a key or trust store holds", s.Location, maxStoreBytes>>20)
	}
	return b, nil
}

// sniffStore tells a store's format from its content: JKS by its magic
// number, PKCS12 by the start of its DER structure (a SEQUENCE whose
// first element is the INTEGER version 3), PEM by a "-----BEGIN " line.
func sniffStore(data []byte) (string, error) {
	if len(data) >= 4 {
		switch binary.BigEndian.Uint32(data) {
		case 0xFEEDFEED:
			return formatJKS, nil
		case 0xCECECECE:
			return "", errors.New("the file is a JCEKS store: JCEKS is not supported, convert it with keytool -importkeystore -deststoretype pkcs12")
		}
	}
	if ok, err := looksPKCS12(data); ok {
		return formatPKCS12, err
	}
	if bytes.Contains(data, []byte("-----BEGIN ")) {
		return formatPEM, nil
	}
	return "", fmt.Errorf("%s; %s", describe(data), readFormats)
}

// derHeader parses the identifier and length octets of a BER/DER element
// at the start of b: its tag, the header's size and the content's
// length (at most maxStoreBytes+1), -1 for BER's indefinite length.
func derHeader(b []byte) (tag byte, hdr, n int, ok bool) {
	if len(b) < 2 {
		return 0, 0, 0, false
	}
	tag, l := b[0], b[1]
	switch {
	case l < 0x80:
		return tag, 2, int(l), true
	case l == 0x80:
		return tag, 2, -1, true
	case l > 0x84 || len(b) < 2+int(l&0x7f):
		return 0, 0, 0, false
	}
	k := int(l & 0x7f)
	var v uint64
	for _, c := range b[2 : 2+k] {
		v = v<<8 | uint64(c)
	}
	// No store is longer: a larger length is as good as this one.
	return tag, 2 + k, int(min(v, maxStoreBytes+1)), true
}

// looksPKCS12 reports whether data begins as a PKCS12 PFX does: a
// SEQUENCE whose first element is INTEGER 3 (the version) and second a
// SEQUENCE (the authSafe ContentInfo). err, when ok, says that the file
// is shorter than the SEQUENCE's length, or uses BER's indefinite
// lengths.
func looksPKCS12(data []byte) (ok bool, err error) {
	tag, hdr, n, ok := derHeader(data)
	if !ok || tag != 0x30 || n >= 0 && n < 3 {
		return false, nil
	}
	inner := data[hdr:]
	if len(inner) < 3 || inner[0] != 0x02 || inner[1] != 0x01 || inner[2] != 3 {
		return false, nil
	}
	if len(inner) > 3 && inner[3] != 0x30 {
		return false, nil
	}
	switch {
	case n < 0:
		return true, errors.New("PKCS12 store in BER with indefinite lengths, which is not read; rewrite it with keytool -importkeystore -deststoretype pkcs12")
	case hdr+n > len(data):
		return true, fmt.Errorf("truncated PKCS12 store: the file has %d bytes, fewer than its header announces", len(data))
	}
	return true, nil
}

// describe says what data looks like, for a file in no format read.
func describe(data []byte) string {
	if len(data) == 0 {
		return "the file is empty"
	}
	if tag, hdr, _, ok := derHeader(data); ok && tag == 0x30 && len(data) > hdr {
		switch inner := data[hdr:]; {
		case inner[0] == 0x30:
			return "the file holds DER data that is not a PKCS12 store (a bare certificate? write it as PEM, or import it with keytool -importcert)"
		case inner[0] == 0x02:
			return "the file holds DER data that is not a PKCS12 store (a bare private key? write it and its certificates as PEM)"
		}
	}
	head := data[:min(len(data), 32)]
	if utf8.Valid(head) && !bytes.ContainsFunc(head, func(r rune) bool { return r < ' ' && r != '\n' && r != '\r' && r != '\t' }) {
		return fmt.Sprintf("the file holds text that is not PEM, beginning %q", head)
	}
	return fmt.Sprintf("the file holds data in no store format read, beginning % x", data[:min(len(data), 8)])
}

// safely runs f, turning a panic of a store decoder into an error.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("damaged file (the decoder failed: %v)", r)
		}
	}()
	return f()
}

// LoadKeyStore reads a certificate chain and its private key. The
// store's format is told from the file's content (see Store).
func LoadKeyStore(s Store) (tls.Certificate, error) {
	data, format, err := openStore(s, "key store")
	if err != nil {
		return tls.Certificate{}, err
	}
	var cert tls.Certificate
	err = safely(func() (err error) {
		switch format {
		case formatPEM:
			cert, err = pemKeyStore(data)
		case formatPKCS12:
			cert, err = pkcs12KeyStore(data, s.Password)
		case formatJKS:
			cert, err = jksKeyStore(data, s.Password)
		}
		if err == nil {
			err = checkKeyPair(cert)
		}
		return err
	})
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconf: key store %s (%s): %w", s.Location, format, err)
	}
	return cert, nil
}

// LoadTrustStore reads the certificates a peer's chain may end in. The
// store's format is told from the file's content (see Store).
func LoadTrustStore(s Store) (*x509.CertPool, error) {
	data, format, err := openStore(s, "trust store")
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	err = safely(func() (err error) {
		switch format {
		case formatPEM:
			certs, err = pemCerts(data)
		case formatPKCS12:
			certs, err = pkcs12Trusted(data, s.Password)
		case formatJKS:
			certs, err = jksTrusted(data, s.Password)
		}
		if err == nil && len(certs) == 0 {
			err = errors.New("no certificates")
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tlsconf: trust store %s (%s): %w", s.Location, format, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pemKeyStore reads a PEM key store: the private key and the certificate
// chain (leaf first) in one file, as ZooKeeper's PEM key stores hold them.
func pemKeyStore(data []byte) (tls.Certificate, error) {
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
		return tls.Certificate{}, errors.New("a PEM key store must hold a private key and its certificate chain")
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

// errNoKey is the cause given for a key store without a private key.
var errNoKey = errors.New("no private key entry (a trust store?)")

// pkcs12Error says why go-pkcs12 could not read a store.
func pkcs12Error(err error) error {
	var ni pkcs12.NotImplementedError
	msg := err.Error()
	switch {
	case errors.Is(err, pkcs12.ErrIncorrectPassword):
		return errWrongPassword
	case errors.Is(err, pkcs12.ErrDecryption):
		return fmt.Errorf("wrong password or damaged file (its contents do not decrypt with the store password: %w)", err)
	case errors.As(err, &ni):
		return fmt.Errorf("PKCS12 store not supported: %w", err)
	case strings.Contains(msg, "private key missing"):
		return errNoKey
	case strings.Contains(msg, "expected exactly one key bag"):
		return errors.New("more than one private key entry; a key store holds one here")
	}
	return fmt.Errorf("damaged PKCS12 store: %w", err)
}

// pkcs12KeyStore reads the private key of a PKCS12 key store and the
// certificate chain of its key.
func pkcs12KeyStore(data []byte, password string) (tls.Certificate, error) {
	key, leaf, chain, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		return tls.Certificate{}, pkcs12Error(err)
	}
	return keyAndChain(key, append([]*x509.Certificate{leaf}, chain...))
}

// keyAndChain returns key with the certificates of a PKCS12 store: the
// one whose public key is key's first (the store need not list it
// first), then the others in their order, each once.
func keyAndChain(key any, certs []*x509.Certificate) (tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, errors.New("the private key cannot sign")
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	pub, ok := signer.Public().(equaler)
	if !ok {
		return tls.Certificate{}, errors.New("unsupported private key type")
	}
	leaf := -1
	for i, c := range certs {
		if pub.Equal(c.PublicKey) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return tls.Certificate{}, errors.New("no certificate in the store is the private key's")
	}
	out := tls.Certificate{PrivateKey: key, Leaf: certs[leaf], Certificate: [][]byte{certs[leaf].Raw}}
	seen := map[string]bool{string(certs[leaf].Raw): true}
	for _, c := range certs {
		if !seen[string(c.Raw)] {
			seen[string(c.Raw)] = true
			out.Certificate = append(out.Certificate, c.Raw)
		}
	}
	return out, nil
}

// pkcs12Trusted reads the certificates a PKCS12 trust store trusts: its
// trusted certificate entries or, if it is a key store (one key entry),
// as Java trusts a key entry, the key's own certificate.
func pkcs12Trusted(data []byte, password string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err == nil {
		return certs, nil
	}
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return nil, errWrongPassword
	}
	if key, leaf, chain, kerr := pkcs12.DecodeChain(data, password); kerr == nil {
		cert, kerr := keyAndChain(key, append([]*x509.Certificate{leaf}, chain...))
		if kerr != nil {
			return nil, kerr
		}
		return []*x509.Certificate{cert.Leaf}, nil
	}
	if strings.Contains(err.Error(), "not marked as trusted") {
		return nil, fmt.Errorf("%w (Java does not trust such certificates either; openssl pkcs12 -export -jdktrust anyExtendedKeyUsage marks them)", err)
	}
	return nil, pkcs12Error(err)
}

// loadJKS checks the structure of a JKS store, then reads it.
func loadJKS(data []byte, password string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithOrderedAliases())
	if err := checkJKS(data); err != nil {
		return ks, err
	}
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		if strings.Contains(err.Error(), "invalid digest") {
			return ks, errWrongPassword
		}
		return ks, fmt.Errorf("damaged JKS store: %w", err)
	}
	return ks, nil
}

// checkJKS walks the entries of a JKS store, checking that each length
// it holds stays within the file, before keystore-go (which allocates
// what a length says) reads it.
func checkJKS(data []byte) error {
	r := data
	truncated := errors.New("truncated JKS store: it ends within its entries")
	u16 := func() (int, bool) {
		if len(r) < 2 {
			return 0, false
		}
		v := binary.BigEndian.Uint16(r)
		r = r[2:]
		return int(v), true
	}
	u32 := func() (uint32, bool) {
		if len(r) < 4 {
			return 0, false
		}
		v := binary.BigEndian.Uint32(r)
		r = r[4:]
		return v, true
	}
	skip := func(n uint64) bool {
		if uint64(len(r)) < n {
			return false
		}
		r = r[n:]
		return true
	}
	if _, ok := u32(); !ok { // magic
		return truncated
	}
	version, ok := u32()
	if !ok {
		return truncated
	}
	if version != 1 && version != 2 {
		return fmt.Errorf("damaged JKS store: version %d (1 and 2 exist)", version)
	}
	cert := func() bool {
		if version == 2 {
			n, ok := u16()
			if !ok || !skip(uint64(n)) {
				return false
			}
		}
		n, ok := u32()
		return ok && skip(uint64(n))
	}
	count, ok := u32()
	if !ok {
		return truncated
	}
	for i := uint32(0); i < count; i++ {
		tag, ok := u32()
		if !ok {
			return truncated
		}
		if n, ok := u16(); !ok || !skip(uint64(n)) || !skip(8) { // alias, date
			return truncated
		}
		switch tag {
		case 1: // private key
			n, ok := u32()
			if !ok || !skip(uint64(n)) {
				return truncated
			}
			chain, ok := u32()
			if !ok {
				return truncated
			}
			for j := uint32(0); j < chain; j++ {
				if !cert() {
					return truncated
				}
			}
		case 2: // trusted certificate
			if !cert() {
				return truncated
			}
		default:
			return fmt.Errorf("damaged JKS store: entry %d has the unknown tag %d", i+1, tag)
		}
	}
	if len(r) < 20 { // the SHA-1 digest
		return truncated
	}
	return nil
}

// jksKeyStore reads the (first, by alias) private key entry of a JKS key
// store; its key password is the store's, as ZooKeeper expects.
func jksKeyStore(data []byte, password string) (tls.Certificate, error) {
	ks, err := loadJKS(data, password)
	if err != nil {
		return tls.Certificate{}, err
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(password))
		if err != nil {
			if strings.Contains(err.Error(), "invalid digest") {
				return tls.Certificate{}, fmt.Errorf("entry %q: its private key does not open with the store password (its key password differs; ZooKeeper uses the store password for the key too)", alias)
			}
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
	return tls.Certificate{}, errNoKey
}

// jksTrusted reads the certificates a JKS trust store trusts: its trusted
// certificate entries and, as Java trusts them, the certificate of each
// key entry.
func jksTrusted(data []byte, password string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(data, password)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var raw []byte
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, err
			}
			raw = e.Certificate.Content
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil && len(chain) > 0 {
			raw = chain[0].Content
		} else {
			continue
		}
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		out = append(out, c)
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
