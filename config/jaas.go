package config

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// JAAS login configuration files: the file Java reads from
// -Djava.security.auth.login.config, where ZooKeeper keeps its SASL
// users. zkgo reads it from the file named by that property (sysprops.go)
// or by the zoo.cfg key zkgo.sasl.jaasConfig. A server's users are the options user_NAME="password"
// of the entries of its section ("Server", or sasl.serverconfig), as
// ZooKeeper's SaslServerCallbackHandler collects them:
//
//	Server {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    user_super="adminsecret"
//	    user_bob="bobsecret";
//	};
//
// The syntax is that of the JDK's ConfigFile: sections "Name { entries };",
// each entry "ModuleClass Flag name=value ... ;" with the flag one of
// required, requisite, sufficient or optional, values as words or in double
// or single quotes (with backslash escapes), and // and /* */ comments.
// Unlike the JDK, ${property} references in values are not expanded (a
// warning says so).

// MaxJAASFileSize bounds the JAAS file zkgo reads.
const MaxJAASFileSize = 1 << 20

// DefaultSASLSection is the JAAS section of the server's SASL users
// (ZooKeeper's zookeeper.sasl.serverconfig default).
const DefaultSASLSection = "Server"

// JAASEntry is one login module entry of a JAAS section.
type JAASEntry struct {
	Module  string            // login module class name
	Flag    string            // "required", "requisite", "sufficient" or "optional"
	Options map[string]string // name=value options; a repeated name keeps its last value
}

// ParseJAAS parses the text of a JAAS login configuration file into its
// sections, by name. name is used in messages.
func ParseJAAS(text, name string) (map[string][]JAASEntry, error) {
	if len(text) > MaxJAASFileSize {
		return nil, fmt.Errorf("%s: JAAS file larger than %d bytes", name, MaxJAASFileSize)
	}
	lx := &jaasLexer{s: text, name: name, line: 1}
	out := make(map[string][]JAASEntry)
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		if t.kind == jaasEOF {
			return out, nil
		}
		if t.kind != jaasWord && t.kind != jaasQuoted {
			return nil, lx.errorf(t, "expected a section name, found %s", t)
		}
		section := t.text
		if _, dup := out[section]; dup {
			return nil, lx.errorf(t, "section %q appears more than once", section)
		}
		if err := lx.expect('{'); err != nil {
			return nil, err
		}
		entries := []JAASEntry{}
		for {
			t, err := lx.next()
			if err != nil {
				return nil, err
			}
			if t.kind == '}' {
				break
			}
			e, err := lx.entry(t)
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
		if err := lx.expect(';'); err != nil {
			return nil, err
		}
		out[section] = entries
	}
}

// entry parses "Module flag name=value ... ;" whose first token is t.
func (lx *jaasLexer) entry(t jaasToken) (JAASEntry, error) {
	if t.kind != jaasWord && t.kind != jaasQuoted {
		return JAASEntry{}, lx.errorf(t, "expected a login module class name, found %s", t)
	}
	e := JAASEntry{Module: t.text, Options: make(map[string]string)}
	f, err := lx.next()
	if err != nil {
		return e, err
	}
	switch flag := strings.ToLower(f.text); {
	case f.kind == jaasWord && (flag == "required" || flag == "requisite" || flag == "sufficient" || flag == "optional"):
		e.Flag = flag
	default:
		return e, lx.errorf(f, "invalid control flag %s for %s (required, requisite, sufficient or optional)", f, e.Module)
	}
	for {
		k, err := lx.next()
		if err != nil {
			return e, err
		}
		if k.kind == ';' {
			return e, nil
		}
		if k.kind != jaasWord && k.kind != jaasQuoted {
			return e, lx.errorf(k, "expected an option name or ';', found %s", k)
		}
		if err := lx.expect('='); err != nil {
			return e, err
		}
		v, err := lx.next()
		if err != nil {
			return e, err
		}
		if v.kind != jaasWord && v.kind != jaasQuoted {
			return e, lx.errorf(v, "expected a value for option %s, found %s", k.text, v)
		}
		e.Options[k.text] = v.text
	}
}

// SASLUsers returns the users of section: every option user_NAME=password
// of its entries. Warnings note ${...} references, which are not expanded,
// and, when there are no users, why (saslOff): server SASL is then off.
// A missing section is not an error, as in ZooKeeper (see saslOff).
func SASLUsers(sections map[string][]JAASEntry, section, name string) (map[string]string, []string, error) {
	users, warnings, off := saslUsers(sections, section, name)
	if off != "" {
		warnings = append(warnings, off+": "+saslOffNote)
	}
	return users, warnings, nil
}

// saslOffNote ends the warning that server SASL is off.
const saslOffNote = "server SASL is off (as in ZooKeeper): no client can authenticate with SASL, and a client that tries is refused"

// saslUsers is SASLUsers with the reason there are no users apart: off is
// "" when there are users, otherwise a phrase naming the file (name) and
// what it lacks, for the caller's one warning.
//
// ZooKeeper 3.8 (ServerCnxnFactory.configureSaslLogin) asks the JAAS
// Configuration for the section: when the file has no such section (or
// the section has no entries, or the file is empty) it gets null, logs
// nothing and runs without server SASL; zookeeper.sasl.serverconfig naming
// a missing section changes nothing. It refuses to start only when the
// Configuration itself cannot be loaded (a missing or unparsable file: the
// JDK's ConfigFile reads and parses the whole file as soon as it is first
// asked, at startup, whatever the section), which LoadSASLUsers reports as
// an error too.
func saslUsers(sections map[string][]JAASEntry, section, name string) (users map[string]string, warnings []string, off string) {
	entries := sections[section]
	if len(entries) == 0 {
		names := make([]string, 0, len(sections))
		for s := range sections {
			names = append(names, s)
		}
		sort.Strings(names)
		switch {
		case len(names) == 0:
			return nil, nil, fmt.Sprintf("%s has no JAAS sections, so none named %q", name, section)
		case slices.Contains(names, section):
			return nil, nil, fmt.Sprintf("%s: JAAS section %s has no login module entries", name, section)
		}
		return nil, nil, fmt.Sprintf("%s has no JAAS section named %q (its sections: %s)", name, section, strings.Join(names, ", "))
	}
	users = make(map[string]string)
	var modules []string
	for _, e := range entries {
		if !slices.Contains(modules, e.Module) {
			modules = append(modules, e.Module)
		}
		for k, v := range e.Options {
			user, ok := strings.CutPrefix(k, "user_")
			if !ok {
				continue
			}
			users[user] = v
			if strings.Contains(v, "${") {
				warnings = append(warnings, fmt.Sprintf("%s: section %s: the password of user %q contains ${...}, which zkgo does not expand", name, section, user))
			}
		}
	}
	if len(users) == 0 {
		return nil, warnings, fmt.Sprintf("%s: JAAS section %s has no user_NAME=\"password\" options (login modules: %s; and no Krb5LoginModule entry)", name, section, strings.Join(modules, ", "))
	}
	return users, warnings, ""
}

// LoadSASLUsers reads the JAAS file at path and returns the users of
// section (see SASLUsers). A file that cannot be read or parsed is an
// error: ZooKeeper does not start with it either.
func LoadSASLUsers(path, section string) (map[string]string, []string, error) {
	users, warnings, off, err := loadSASLUsers(path, section)
	if off != "" {
		warnings = append(warnings, off+": "+saslOffNote)
	}
	return users, warnings, err
}

// loadSASLUsers is LoadSASLUsers with the reason there are no users apart
// (saslUsers).
func loadSASLUsers(path, section string) (map[string]string, []string, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxJAASFileSize+1))
	if err != nil {
		return nil, nil, "", err
	}
	sections, err := ParseJAAS(string(data), path)
	if err != nil {
		return nil, nil, "", err
	}
	users, warnings, off := saslUsers(sections, section, path)
	return users, warnings, off, nil
}

// The JAAS lexer: words, quoted strings and the punctuation { } ; =.
const (
	jaasEOF    = -1
	jaasWord   = -2
	jaasQuoted = -3
)

type jaasToken struct {
	kind int // jaasEOF, jaasWord, jaasQuoted or the punctuation byte
	text string
	line int
}

func (t jaasToken) String() string {
	switch t.kind {
	case jaasEOF:
		return "end of file"
	case jaasWord:
		return fmt.Sprintf("%q", t.text)
	case jaasQuoted:
		return "quoted string"
	}
	return fmt.Sprintf("'%c'", rune(t.kind))
}

type jaasLexer struct {
	s    string
	i    int
	name string
	line int
}

func (lx *jaasLexer) errorf(t jaasToken, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", lx.name, t.line, fmt.Sprintf(format, args...))
}

func (lx *jaasLexer) expect(kind byte) error {
	t, err := lx.next()
	if err != nil {
		return err
	}
	if t.kind != int(kind) {
		return lx.errorf(t, "expected '%c', found %s", kind, t)
	}
	return nil
}

// isJAASWordByte: the JDK's StreamTokenizer word characters as ConfigFile
// sets them up (letters, digits, '.', '-', '_', '$', '*'), plus any
// non-ASCII byte.
func isJAASWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '-' || c == '_' || c == '$' || c == '*' || c >= 0x80
}

func (lx *jaasLexer) next() (jaasToken, error) {
	s := lx.s
	for lx.i < len(s) {
		c := s[lx.i]
		switch {
		case c == '\n':
			lx.line++
			lx.i++
		case c <= ' ':
			lx.i++
		case c == '/' && lx.i+1 < len(s) && s[lx.i+1] == '/':
			for lx.i < len(s) && s[lx.i] != '\n' {
				lx.i++
			}
		case c == '/' && lx.i+1 < len(s) && s[lx.i+1] == '*':
			start := lx.line
			end := strings.Index(s[lx.i+2:], "*/")
			if end < 0 {
				return jaasToken{}, fmt.Errorf("%s:%d: unterminated /* comment", lx.name, start)
			}
			lx.line += strings.Count(s[lx.i:lx.i+2+end], "\n")
			lx.i += end + 4
		case c == '{' || c == '}' || c == ';' || c == '=':
			lx.i++
			return jaasToken{kind: int(c), line: lx.line}, nil
		case c == '"' || c == '\'':
			return lx.quoted(c)
		case isJAASWordByte(c):
			start := lx.i
			for lx.i < len(s) && isJAASWordByte(s[lx.i]) {
				lx.i++
			}
			return jaasToken{kind: jaasWord, text: s[start:lx.i], line: lx.line}, nil
		default:
			return jaasToken{}, fmt.Errorf("%s:%d: unexpected character %q", lx.name, lx.line, c)
		}
	}
	return jaasToken{kind: jaasEOF, line: lx.line}, nil
}

// quoted reads a string in quote q with StreamTokenizer's escapes (\n, \t,
// \b, \f, \r, \a, \v, octal \ooo, and \x for any other x).
func (lx *jaasLexer) quoted(q byte) (jaasToken, error) {
	s := lx.s
	line := lx.line
	lx.i++
	var b strings.Builder
	for lx.i < len(s) {
		c := s[lx.i]
		lx.i++
		switch {
		case c == q:
			return jaasToken{kind: jaasQuoted, text: b.String(), line: line}, nil
		case c == '\n':
			return jaasToken{}, fmt.Errorf("%s:%d: quoted string not closed before the end of the line", lx.name, line)
		case c == '\\' && lx.i < len(s):
			e := s[lx.i]
			lx.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'a':
				b.WriteByte(7)
			case 'v':
				b.WriteByte('\v')
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := int(e - '0')
				max := 2
				if e > '3' {
					max = 1
				}
				for k := 0; k < max && lx.i < len(s) && s[lx.i] >= '0' && s[lx.i] <= '7'; k++ {
					v = v*8 + int(s[lx.i]-'0')
					lx.i++
				}
				b.WriteRune(rune(v))
			case '\n':
				return jaasToken{}, fmt.Errorf("%s:%d: quoted string not closed before the end of the line", lx.name, line)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return jaasToken{}, fmt.Errorf("%s:%d: unterminated quoted string", lx.name, line)
}
