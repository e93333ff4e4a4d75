package config

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Java properties syntax.

// property is one key=value pair of a Java properties file.
type property struct {
	key, value string
	line       int // line on which the logical line starts
	// origin names a property that did not come from the file, for
	// messages: "SERVER_JVMFLAGS: -Dzookeeper.snapCount" (sysprops.go).
	origin string
}

// readProperties parses Java properties text (java.util.Properties.load):
// '#' and '!' comment lines, blank lines, a key ending at the first
// unescaped '=', ':' or whitespace, an optional separator surrounded by
// whitespace, backslash escapes (\t \n \r \f \uXXXX, and \x for any other x)
// and lines continued by an odd number of trailing backslashes.
//
// The text is taken as UTF-8 (Java reads an InputStream as ISO-8859-1, which
// only differs for non-ASCII bytes). Pairs are returned in file order,
// including repeated keys.
func readProperties(text, name string) ([]property, error) {
	var props []property
	lines := splitLines(text)
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := trimLeftWS(lines[i])
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue // comments are never continued
		}
		var logical strings.Builder
		for {
			if n := trailingBackslashes(l); n%2 == 1 && i+1 < len(lines) {
				logical.WriteString(l[:len(l)-1])
				i++
				l = trimLeftWS(lines[i])
				continue
			} else if n%2 == 1 {
				l = l[:len(l)-1] // a continuation at end of input is dropped
			}
			logical.WriteString(l)
			break
		}
		key, value, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, start, err)
		}
		props = append(props, property{key: key, value: value, line: start})
	}
	return props, nil
}

// splitLines splits at "\n", "\r" and "\r\n".
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return out
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftWS(s string) string {
	for s != "" && isWS(s[0]) {
		s = s[1:]
	}
	return s
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits a logical line into its unescaped key and value.
func splitProperty(l string) (key, value string, err error) {
	keyLen, valueStart := 0, len(l)
	hasSep, escaped := false, false
	for keyLen < len(l) {
		c := l[keyLen]
		if !escaped && (c == '=' || c == ':') {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if !escaped && isWS(c) {
			valueStart = keyLen + 1
			break
		}
		escaped = c == '\\' && !escaped
		keyLen++
	}
	for valueStart < len(l) {
		c := l[valueStart]
		if !isWS(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	if key, err = unescape(l[:keyLen]); err != nil {
		return "", "", err
	}
	if value, err = unescape(l[valueStart:]); err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescape resolves properties escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, ok := hex4(s[i+1:])
			if !ok {
				return "", fmt.Errorf(`malformed \uxxxx escape`)
			}
			i += 4
			// A UTF-16 surrogate pair written as two escapes is one
			// character.
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+1:], `\u`) {
				if r2, ok := hex4(s[i+3:]); ok {
					if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
						r = c
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// hex4 decodes the four hex digits that start s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		d := hexVal(s[i])
		if d < 0 {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
