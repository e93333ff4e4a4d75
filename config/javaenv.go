package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// java.env and zookeeper-env.sh: the shell files zkEnv.sh sources from the
// configuration directory (ZOOCFGDIR) before starting java, usually to set
// SERVER_JVMFLAGS. zkgo does not run a shell: it reads the simple forms
//
//	NAME=value
//	export NAME=value [NAME2=value2 ...]
//	export NAME
//
// with values quoted as in a shell ('...', "...", backslashes) and $NAME,
// ${NAME}, ${NAME:-default} and ${NAME-default} expanded (from earlier
// assignments, then the environment), several assignments per line or
// separated by ';', comments and continuation lines. Every other line
// (commands, if/fi, $(...), `...`) gets one warning and is skipped.

// MaxJavaEnvSize bounds java.env and zookeeper-env.sh.
const MaxJavaEnvSize = 1 << 20

// ReadJVM gathers the JVM flags zkServer.sh would give java for the
// configuration file cfgPath: the shell files zookeeper-env.sh and
// java.env (javaEnv "": in $ZOOCFGDIR, or without it in cfgPath's
// directory, those that exist; "off": none; otherwise that one file),
// read on top of the environment getenv, then SERVER_JVMFLAGS and
// JVMFLAGS as they are at the end.
func ReadJVM(cfgPath, javaEnv string, getenv func(string) string) (*JVM, error) {
	sh := &shellVars{vars: map[string]string{}, setAt: map[string]string{}, getenv: getenv}
	j := &JVM{}
	var files []string
	switch javaEnv {
	case "off":
	case "":
		dir := getenv("ZOOCFGDIR")
		if dir == "" {
			dir = filepath.Dir(cfgPath)
		}
		for _, f := range []string{"zookeeper-env.sh", "java.env"} {
			if fi, err := os.Stat(filepath.Join(dir, f)); err == nil && fi.Mode().IsRegular() {
				files = append(files, filepath.Join(dir, f))
			}
		}
	default:
		files = []string{javaEnv}
	}
	for _, f := range files {
		text, err := readBounded(f, MaxJavaEnvSize)
		if err != nil {
			return nil, err
		}
		j.Warnings = append(j.Warnings, sh.source(text, f)...)
	}
	for _, name := range []string{"SERVER_JVMFLAGS", "JVMFLAGS"} {
		source := name
		if at := sh.setAt[name]; at != "" {
			source += " (set in " + at + ")"
		}
		if err := j.AddFlags(sh.get(name), source); err != nil {
			return nil, err
		}
	}
	return j, nil
}

func readBounded(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(data)) > limit {
		return "", fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return string(data), nil
}

// shellVars are the variables of the shell files read so far.
type shellVars struct {
	vars   map[string]string // assigned in the files
	setAt  map[string]string // "file:line" of each variable's last assignment
	getenv func(string) string
}

func (sh *shellVars) get(name string) string {
	if v, ok := sh.vars[name]; ok {
		return v
	}
	return sh.getenv(name)
}

// errNotSimple marks a statement that is not a simple assignment.
var errNotSimple = errors.New("not a simple assignment")

// shWord is one word of a statement, expanded.
type shWord struct {
	text   string
	assign string // NAME when the word is NAME=value; text is the value
}

// source reads text as the shell's "." would for the forms zkgo knows and
// returns one warning per statement it skipped.
func (sh *shellVars) source(text, name string) (warnings []string) {
	lx := &shLexer{s: text, line: 1, sh: sh}
	for {
		lx.skipBlanks()
		if lx.i >= len(lx.s) {
			return warnings
		}
		switch c := lx.s[lx.i]; c {
		case '\n', ';':
			lx.advance()
			continue
		case '#':
			lx.skipLine()
			continue
		}
		start := lx.line
		words, err := lx.statement()
		if err == nil {
			err = sh.apply(words, fmt.Sprintf("%s:%d", name, start))
		}
		if err != nil {
			line := strings.TrimSpace(lineAt(text, start))
			if len(line) > 60 {
				line = line[:57] + "..."
			}
			warnings = append(warnings, fmt.Sprintf("%s:%d: %v; zkgo reads only NAME=value and export lines of this file, without running a shell; ignored: %s", name, start, err, line))
			lx.skipLine()
		}
	}
}

// apply carries out a statement of words.
func (sh *shellVars) apply(words []shWord, at string) error {
	if len(words) == 0 {
		return nil
	}
	rest := words
	if words[0].assign == "" {
		if words[0].text != "export" {
			return errNotSimple
		}
		rest = words[1:]
		for _, w := range rest {
			if w.assign == "" && !isShellName(w.text) {
				return errNotSimple
			}
		}
	}
	for _, w := range rest {
		if w.assign == "" {
			if words[0].assign != "" {
				return errNotSimple // NAME=value command: a command with an environment
			}
			continue // export NAME
		}
		sh.vars[w.assign] = w.text
		sh.setAt[w.assign] = at
	}
	return nil
}

func lineAt(text string, n int) string {
	for ; n > 1; n-- {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			return ""
		}
		text = text[i+1:]
	}
	l, _, _ := strings.Cut(text, "\n")
	return l
}

func isShellName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// shLexer reads the statements of a shell file.
type shLexer struct {
	s    string
	i    int
	line int
	sh   *shellVars
}

func (lx *shLexer) advance() {
	if lx.s[lx.i] == '\n' {
		lx.line++
	}
	lx.i++
}

// skipBlanks skips spaces, tabs and backslash-newline continuations.
func (lx *shLexer) skipBlanks() {
	for lx.i < len(lx.s) {
		switch {
		case lx.s[lx.i] == ' ' || lx.s[lx.i] == '\t' || lx.s[lx.i] == '\r':
			lx.i++
		case strings.HasPrefix(lx.s[lx.i:], "\\\n"):
			lx.i += 2
			lx.line++
		default:
			return
		}
	}
}

func (lx *shLexer) skipLine() {
	for lx.i < len(lx.s) && lx.s[lx.i] != '\n' {
		lx.i++
	}
}

// statement reads the words up to an unquoted newline, ';' or comment.
func (lx *shLexer) statement() ([]shWord, error) {
	var words []shWord
	for {
		lx.skipBlanks()
		if lx.i >= len(lx.s) {
			return words, nil
		}
		switch lx.s[lx.i] {
		case '\n', ';':
			return words, nil
		case '#':
			lx.skipLine()
			return words, nil
		}
		w, err := lx.word()
		if err != nil {
			return nil, err
		}
		words = append(words, w)
	}
}

// word reads one word, expanding quotes and parameters.
func (lx *shLexer) word() (shWord, error) {
	var w shWord
	if n := assignmentName(lx.s[lx.i:]); n != "" {
		w.assign = n
		lx.i += len(n) + 1
	}
	var b strings.Builder
	for lx.i < len(lx.s) {
		c := lx.s[lx.i]
		switch c {
		case ' ', '\t', '\r', '\n', ';':
			w.text = b.String()
			return w, nil
		case '\'':
			j := strings.IndexByte(lx.s[lx.i+1:], '\'')
			if j < 0 {
				return w, errors.New("unterminated single quote")
			}
			lit := lx.s[lx.i+1 : lx.i+1+j]
			b.WriteString(lit)
			lx.line += strings.Count(lit, "\n")
			lx.i += j + 2
		case '"':
			if err := lx.doubleQuoted(&b); err != nil {
				return w, err
			}
		case '\\':
			lx.i++
			if lx.i < len(lx.s) {
				if lx.s[lx.i] != '\n' {
					b.WriteByte(lx.s[lx.i])
				}
				lx.advance()
			}
		case '$':
			if err := lx.expand(&b); err != nil {
				return w, err
			}
		case '`', '|', '&', '<', '>', '(', ')':
			return w, errNotSimple
		default:
			b.WriteByte(c)
			lx.i++
		}
	}
	w.text = b.String()
	return w, nil
}

// assignmentName returns NAME when s starts with "NAME=".
func assignmentName(s string) string {
	i := strings.IndexByte(s, '=')
	if i <= 0 || !isShellName(s[:i]) {
		return ""
	}
	return s[:i]
}

// doubleQuoted reads "..." at lx.i.
func (lx *shLexer) doubleQuoted(b *strings.Builder) error {
	lx.i++
	for lx.i < len(lx.s) {
		switch c := lx.s[lx.i]; c {
		case '"':
			lx.i++
			return nil
		case '\\':
			if lx.i+1 < len(lx.s) && strings.IndexByte("$`\"\\\n", lx.s[lx.i+1]) >= 0 {
				lx.i++
				if lx.s[lx.i] != '\n' {
					b.WriteByte(lx.s[lx.i])
				}
				lx.advance()
				continue
			}
			b.WriteByte(c)
			lx.i++
		case '$':
			if err := lx.expand(b); err != nil {
				return err
			}
		case '`':
			return errors.New("command substitution is not supported")
		default:
			b.WriteByte(c)
			lx.advance()
		}
	}
	return errors.New("unterminated double quote")
}

// expand expands the parameter at lx.i ('$').
func (lx *shLexer) expand(b *strings.Builder) error {
	rest := lx.s[lx.i+1:]
	switch {
	case rest == "" || !(rest[0] == '{' || rest[0] == '_' || isLetter(rest[0])):
		if rest != "" && (rest[0] == '(' || rest[0] == '@' || rest[0] == '*' || rest[0] == '#' || rest[0] == '?' || rest[0] == '$' || rest[0] == '!' || rest[0] == '-' || rest[0] >= '0' && rest[0] <= '9') {
			return errors.New("only $NAME and ${NAME} expansions are supported")
		}
		b.WriteByte('$') // a lone $ is itself
		lx.i++
		return nil
	case rest[0] == '{':
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return errors.New("unterminated ${")
		}
		inner := rest[1:end]
		name, def, op := inner, "", ""
		if i := strings.IndexAny(inner, ":-=+?#%/"); i >= 0 {
			name = inner[:i]
			switch {
			case strings.HasPrefix(inner[i:], ":-"):
				op, def = ":-", inner[i+2:]
			case inner[i] == '-':
				op, def = "-", inner[i+1:]
			default:
				return fmt.Errorf("${%s} is not supported (only ${NAME}, ${NAME:-word}, ${NAME-word})", inner)
			}
			if strings.ContainsAny(def, "$`\"'\\") {
				return fmt.Errorf("${%s}: only a literal default is supported", inner)
			}
		}
		if !isShellName(name) {
			return fmt.Errorf("${%s} is not supported", inner)
		}
		v, set := lx.lookup(name)
		if op == ":-" && v == "" || op == "-" && !set {
			v = def
		}
		b.WriteString(v)
		lx.i += end + 2
	default:
		n := 0
		for n < len(rest) && (rest[n] == '_' || isLetter(rest[n]) || rest[n] >= '0' && rest[n] <= '9') {
			n++
		}
		v, _ := lx.lookup(rest[:n])
		b.WriteString(v)
		lx.i += 1 + n
	}
	return nil
}

func (lx *shLexer) lookup(name string) (string, bool) {
	if v, ok := lx.sh.vars[name]; ok {
		return v, true
	}
	v := lx.sh.getenv(name)
	return v, v != ""
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
