// Package x500 is Java's X500Principal as ZooKeeper's x509 authentication
// uses it: Name formats a certificate's subject as X500Principal.getName()
// does (the x509 identity, X509AuthenticationProvider.getClientId), and
// Valid reports whether new X500Principal(s) accepts a string (what makes
// an "x509" ACL id valid, X509AuthenticationProvider.isValid).
//
// Both follow OpenJDK 17's sun.security.x509 (X500Name, RDN, AVA) rule by
// rule, quirks included, because ZooKeeper compares identities with ACL
// ids as plain strings: a subject formatted any other way (Go's
// pkix.Name.String(), for one) would not match the ACLs Java clients and
// servers write.
package x500

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
)

// attribute is one AttributeTypeAndValue, its value kept as encoded.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is a RelativeDistinguishedName (encoding/asn1 reads a slice type
// whose name ends in SET as a SET OF).
type rdnSET []attribute

// keywords2253 are the attribute types AVAKeyword names in RFC 2253
// output; every other type is written as its dotted OID.
var keywords2253 = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// ErrName is returned by Name for a subject that is not a DER
// RDNSequence.
var ErrName = errors.New("x500: malformed distinguished name")

// Name returns X500Principal.getName() (RFC 2253 format) of the DER
// distinguished name der (an x509.Certificate's RawSubject):
//
//   - the RDNs from the last encoded to the first (most specific first),
//     separated by ','; the attributes of a multi-valued RDN in encoded
//     order, separated by '+';
//   - the type as CN, C, L, ST, O, OU, STREET, DC or UID, any other as its
//     dotted OID;
//   - a value with a dotted OID type, or not of a string type
//     (PrintableString, T61String, IA5String, GeneralString, BMPString,
//     UTF8String), as '#' and the hex of its whole encoding;
//   - any other value as its bytes read as UTF-8 (whatever the string
//     type: Java does so), with a backslash before each of
//     , = + < > # ; " \ and before every leading and trailing space and
//     carriage return, and NUL as \00.
//
// Malformed UTF-8 becomes U+FFFD per byte (Java may use one U+FFFD for a
// truncated sequence).
func Name(der []byte) (string, error) {
	var rdns []rdnSET
	rest, err := asn1.Unmarshal(der, &rdns)
	if err != nil || len(rest) != 0 {
		return "", ErrName
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i != len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, a := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, a)
		}
	}
	return b.String(), nil
}

// String types whose values Java writes as text (AVA.isDerString, not
// canonical).
var textTags = map[int]bool{
	asn1.TagPrintableString: true,
	asn1.TagT61String:       true,
	asn1.TagIA5String:       true,
	asn1.TagGeneralString:   true,
	asn1.TagBMPString:       true,
	asn1.TagUTF8String:      true,
}

// writeAttribute is AVA.toRFC2253String.
func writeAttribute(b *strings.Builder, a attribute) {
	oid := a.Type.String()
	kw, ok := keywords2253[oid]
	if !ok {
		kw = oid
	}
	b.WriteString(kw)
	b.WriteByte('=')
	v := a.Value
	if !ok || v.Class != asn1.ClassUniversal || v.IsCompound || !textTags[v.Tag] {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(v.FullBytes))
		return
	}
	// Escape, then escape the leading and trailing blanks of the result.
	var esc []rune
	for _, r := range string(v.Bytes) { // invalid bytes: U+FFFD each
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r):
			esc = append(esc, '\\', r)
		case r == 0:
			esc = append(esc, '\\', '0', '0')
		default:
			esc = append(esc, r)
		}
	}
	blank := func(r rune) bool { return r == ' ' || r == '\r' }
	lead := 0
	for lead < len(esc) && blank(esc[lead]) {
		lead++
	}
	trail := len(esc) - 1
	for trail >= 0 && blank(esc[trail]) {
		trail--
	}
	for i, r := range esc {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}
