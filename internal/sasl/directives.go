package sasl

import (
	"fmt"
	"strings"
)

// directive is one name=value pair of a challenge or response. name is
// lower-cased; value is unquoted.
type directive struct {
	name, value string
	quoted      bool
}

// parseDirectives parses a digest-challenge or digest-response (RFC 2831
// section 7.1): a comma-separated list, where empty elements and linear
// white space around elements are allowed, of token "=" ( token |
// quoted-string ). Directive names are case-insensitive.
func parseDirectives(tok []byte) ([]directive, error) {
	s := string(tok)
	var out []directive
	i := 0
	for {
		i = skipLWS(s, i)
		if i == len(s) {
			break
		}
		if s[i] == ',' {
			i++
			continue
		}
		if len(out) == maxDirectives {
			return nil, fmt.Errorf("%w: more than %d directives", ErrMalformed, maxDirectives)
		}
		start := i
		for i < len(s) && isTokenChar(s[i]) {
			i++
		}
		if i == start {
			return nil, fmt.Errorf("%w: expected a directive name at byte %d", ErrMalformed, i)
		}
		name := strings.ToLower(s[start:i])
		i = skipLWS(s, i)
		if i == len(s) || s[i] != '=' {
			return nil, fmt.Errorf("%w: directive %q has no value", ErrMalformed, name)
		}
		i = skipLWS(s, i+1)
		d := directive{name: name}
		if i < len(s) && s[i] == '"' {
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '"' {
					closed = true
					i++
					break
				}
				if c == '\\' {
					if i+1 == len(s) {
						break
					}
					i++
					c = s[i]
				}
				b.WriteByte(c)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("%w: unterminated quoted value of %q", ErrMalformed, name)
			}
			d.value, d.quoted = b.String(), true
		} else {
			start = i
			for i < len(s) && isTokenChar(s[i]) {
				i++
			}
			if i == start {
				return nil, fmt.Errorf("%w: directive %q has an empty value", ErrMalformed, name)
			}
			d.value = s[start:i]
		}
		out = append(out, d)
		i = skipLWS(s, i)
		if i < len(s) && s[i] != ',' {
			return nil, fmt.Errorf("%w: expected ',' after directive %q", ErrMalformed, name)
		}
	}
	return out, nil
}

func skipLWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// isTokenChar reports whether c may appear in an RFC 2616 token: a CHAR
// that is neither a control nor a separator.
func isTokenChar(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return false
	}
	return !strings.ContainsRune("()<>@,;:\\\"/[]?={}", rune(c))
}

// directiveSet is a parsed token with helpers that enforce "at most once".
type directiveSet []directive

// one returns the value of name, whether it is present, and an error if it
// appears more than once.
func (ds directiveSet) one(name string) (string, bool, error) {
	val, found := "", false
	for _, d := range ds {
		if d.name != name {
			continue
		}
		if found {
			return "", false, fmt.Errorf("%w: directive %q appears more than once", ErrMalformed, name)
		}
		val, found = d.value, true
	}
	return val, found, nil
}

// all returns every value of name, in order.
func (ds directiveSet) all(name string) []string {
	var out []string
	for _, d := range ds {
		if d.name == name {
			out = append(out, d.value)
		}
	}
	return out
}

// writeQuoted appends name="value" with '"' and '\' escaped.
func writeQuoted(b *strings.Builder, name, value string) {
	if b.Len() > 0 {
		b.WriteByte(',')
	}
	b.WriteString(name)
	b.WriteString(`="`)
	for i := 0; i < len(value); i++ {
		if c := value[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(value[i])
	}
	b.WriteByte('"')
}

// writeToken appends name=value unquoted.
func writeToken(b *strings.Builder, name, value string) {
	if b.Len() > 0 {
		b.WriteByte(',')
	}
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(value)
}

// splitList splits a quoted list value such as qop="auth,auth-int".
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
