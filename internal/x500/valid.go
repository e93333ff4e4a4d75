package x500

import (
	"math/big"
	"strings"
)

// Valid reports whether new X500Principal(s) accepts s: X500Name's
// parseDN with the DEFAULT format (RFC 1779, RFC 2253 and RFC 4514
// syntax, every keyword AVAKeyword knows, dotted OIDs with or without
// "OID.").
//
//   - The empty string is a valid (empty) name.
//   - RDNs are separated by ',' or ';' not escaped by a backslash and not
//     inside a quoted part (Java counts the quotes before each separator:
//     exactly one open quote makes it part of the value); attributes of an
//     RDN by '+' likewise. An empty RDN or attribute is invalid.
//   - An attribute is KEYWORD=VALUE. The keyword, trimmed and upper-cased,
//     must be one of CN C L S ST O OU T IP STREET DC DNQUALIFIER DNQ SURNAME
//     GIVENNAME INITIALS GENERATION EMAIL EMAILADDRESS UID SERIALNUMBER, or
//     an OID (first arc 0-2, second below 40 under 0 and 1, at least two
//     arcs), optionally after "OID.".
//   - The value, after leading blanks and newlines, is empty; or '#' and an
//     even, non-zero number of hex digits encoding exactly one DER value;
//     or a quoted string (backslash escapes: a special character or two hex
//     digits), followed by blanks only; or a string where , + < > ; " must
//     be escaped and a backslash must escape one of , = newline + < > # ;
//     \ " space, or start two hex digits.
func Valid(s string) bool {
	if s == "" {
		return true
	}
	offset, search := 0, 0
	quotes := 0
	for {
		end := nextSep(s, search, ",;")
		if end < 0 {
			break
		}
		quotes += countQuotes(s, search, end)
		if quotes != 1 && !escaped(s, end, search) {
			if !validRDN(s[offset:end]) {
				return false
			}
			offset = end + 1
			quotes = 0
		}
		search = end + 1
	}
	return validRDN(s[offset:])
}

// nextSep is the index of the first byte of s at or after from that is in
// seps, or -1.
func nextSep(s string, from int, seps string) int {
	if from > len(s) {
		return -1
	}
	i := strings.IndexAny(s[from:], seps)
	if i < 0 {
		return -1
	}
	return from + i
}

// countQuotes is X500Name.countQuotes: the quotes in s[from:to] not
// preceded by a backslash (the first one counts whatever precedes it).
func countQuotes(s string, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if s[i] == '"' && (i == from || s[i-1] != '\\') {
			n++
		}
	}
	return n
}

// escaped is X500Name.escaped: whether the separator at end is escaped.
// For a separator after two or more backslashes Java counts every
// backslash back to search, consecutive or not.
func escaped(s string, end, search int) bool {
	switch {
	case end == 1 && s[0] == '\\':
		return true
	case end > 1 && s[end-1] == '\\' && s[end-2] != '\\':
		return true
	case end > 1 && s[end-1] == '\\' && s[end-2] == '\\':
		n := 0
		for i := end - 1; i >= search; i-- {
			if s[i] == '\\' {
				n++
			}
		}
		return n%2 != 0
	}
	return false
}

// validRDN is RDN(String, Map): attributes separated by '+'.
func validRDN(s string) bool {
	offset, search := 0, 0
	quotes := 0
	for {
		plus := nextSep(s, search, "+")
		if plus < 0 {
			break
		}
		quotes += countQuotes(s, search, plus)
		if plus > 0 && s[plus-1] != '\\' && quotes != 1 {
			if plus == offset || !validAVA(s[offset:plus]) {
				return false
			}
			offset = plus + 1
			quotes = 0
		}
		search = plus + 1
	}
	return offset < len(s) && validAVA(s[offset:])
}

// reader reads an attribute's text byte by byte (the characters that
// matter are ASCII, and UTF-8 never has ASCII bytes inside a sequence).
type reader struct {
	s string
	i int
}

const eof = -1

func (r *reader) read() int {
	if r.i >= len(r.s) {
		return eof
	}
	c := r.s[r.i]
	r.i++
	return int(c)
}

func isHex(c int) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c int) byte {
	switch {
	case c >= 'a':
		return byte(c - 'a' + 10)
	case c >= 'A':
		return byte(c - 'A' + 10)
	}
	return byte(c - '0')
}

// terminates is AVA.isTerminator for the DEFAULT format.
func terminates(c int) bool { return c == eof || c == '+' || c == ',' || c == ';' }

// validAVA is AVA(Reader, DEFAULT, Map).
func validAVA(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq < 0 || !validKeyword(s[:eq]) {
		return false
	}
	r := &reader{s: s, i: eq + 1}
	c := r.read()
	for c == ' ' || c == '\n' {
		c = r.read()
	}
	switch c {
	case eof:
		return true // an empty value
	case '#':
		return validHexValue(r)
	case '"':
		return validQuoted(r)
	}
	return validString(r, c)
}

// keywords are the keywords AVAKeyword accepts in the DEFAULT format.
var keywords = map[string]bool{
	"CN": true, "C": true, "L": true, "S": true, "ST": true, "O": true, "OU": true,
	"T": true, "IP": true, "STREET": true, "DC": true, "DNQUALIFIER": true, "DNQ": true,
	"SURNAME": true, "GIVENNAME": true, "INITIALS": true, "GENERATION": true,
	"EMAIL": true, "EMAILADDRESS": true, "UID": true, "SERIALNUMBER": true,
}

// validKeyword is AVAKeyword.getOID for the DEFAULT format.
func validKeyword(k string) bool {
	k = javaTrim(strings.ToUpper(k))
	if keywords[k] {
		return true
	}
	k = strings.TrimPrefix(k, "OID.")
	if k == "" || k[0] < '0' || k[0] > '9' {
		return false
	}
	return validOID(k)
}

// javaTrim is String.trim: it removes the characters up to U+0020 at both
// ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// validOID is ObjectIdentifier.of(String): arcs parsed as Java integers
// (a sign is allowed), none negative, the first 0-2, the second at most 39
// under 0 and 1, at least two.
func validOID(s string) bool {
	arcs := strings.Split(s, ".")
	if len(arcs) < 2 {
		return false
	}
	var first int64
	for i, a := range arcs {
		digits := a
		if a != "" && (a[0] == '+' || a[0] == '-') {
			digits = a[1:]
		}
		if digits == "" || strings.Trim(digits, "0123456789") != "" {
			return false
		}
		n, ok := new(big.Int).SetString(a, 10)
		if !ok || n.Sign() < 0 {
			return false
		}
		switch i {
		case 0:
			if n.Cmp(big.NewInt(2)) > 0 {
				return false
			}
			first = n.Int64()
		case 1:
			if first < 2 && n.Cmp(big.NewInt(39)) > 0 {
				return false
			}
		}
	}
	return true
}

// validHexValue is AVA.parseHexString followed by new DerValue(bytes).
func validHexValue(r *reader) bool {
	var der []byte
	digits := 0
	var b byte
	for {
		c := r.read()
		if terminates(c) {
			break
		}
		if !isHex(c) {
			return false
		}
		if digits%2 == 1 {
			der = append(der, b<<4|hexVal(c))
		} else {
			b = hexVal(c)
		}
		digits++
	}
	return digits > 0 && digits%2 == 0 && validDER(der)
}

// validDER is DerValue(byte[]): exactly one value, tag numbers up to 30,
// a definite length (non-minimal forms allowed) of at most four bytes.
// Java also takes an indefinite length on a constructed value; this does
// not.
func validDER(b []byte) bool {
	if len(b) < 2 || b[0]&0x1f == 0x1f {
		return false
	}
	pos := 2
	length := int64(b[1])
	if b[1]&0x80 != 0 {
		n := int(b[1] & 0x7f)
		if n == 0 || n > 4 || len(b) < 2+n {
			return false
		}
		length = 0
		for _, x := range b[2 : 2+n] {
			length = length<<8 | int64(x)
		}
		if length > 1<<31-1 {
			return false
		}
		pos += n
	}
	return int64(len(b)-pos) == length
}

// quotedEscapes are the characters a backslash may escape in a quoted
// value (AVA.specialChars1779).
const quotedEscapes = ",=\n+<>#;\\\""

// validQuoted is AVA.parseQuotedString: up to the closing quote, then
// blanks and newlines only.
func validQuoted(r *reader) bool {
	c := r.read()
	for c != '"' {
		if c == eof {
			return false
		}
		if c == '\\' {
			c = r.read()
			if c == eof {
				return false
			}
			if isHex(c) {
				if !isHex(r.read()) {
					return false
				}
				c = r.read()
				continue
			}
			if !strings.ContainsRune(quotedEscapes, rune(c)) {
				return false
			}
		}
		c = r.read()
	}
	for {
		c = r.read()
		if c != ' ' && c != '\n' {
			return c == eof
		}
	}
}

// The characters a backslash may escape in an unquoted value
// (AVA.specialCharsDefault), and those that must be escaped there
// (AVA.escapedDefault).
const (
	stringEscapes = ",=\n+<>#;\\\" "
	mustBeEscaped = ",+<>;\""
)

// validString is AVA.parseString for the DEFAULT format, from its first
// character c.
func validString(r *reader, c int) bool {
	for {
		if c == '\\' {
			c = r.read()
			if c == eof {
				return false
			}
			if isHex(c) {
				if !isHex(r.read()) {
					return false
				}
				c = r.read()
				if terminates(c) {
					return true
				}
				continue
			}
			if !strings.ContainsRune(stringEscapes, rune(c)) {
				return false
			}
		} else if strings.ContainsRune(mustBeEscaped, rune(c)) {
			return false
		}
		c = r.read()
		if terminates(c) {
			return true
		}
	}
}
