package zkcli

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// argsRE and quotedRE split a shell line as zkCli does
// (ZooKeeperMain.MyCommandOptions.parseCommand): a token is a run of
// non-blank characters not starting with a quote, or a whole "..." or '...'
// string (no escapes). Surrounding quotes are stripped. A lone quote that
// opens no complete string is skipped, as zkCli's regular expression does.
// (Go's \s lacks Java's \x0B; nobody types a vertical tab.)
var argsRE = regexp.MustCompile(`\s*([^"'\s]\S*|"[^"]*"|'[^']*')\s*`)

// splitLine breaks a shell line into words.
func splitLine(line string) []string {
	var out []string
	for _, m := range argsRE.FindAllStringSubmatch(line, -1) {
		v := m[1]
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out = append(out, v)
	}
	return out
}

// optDef describes one option of a command, in the manner of Apache
// commons-cli (which zkCli uses): a name (one letter, or a word such as
// reconfig's "-members"), whether it takes a value, and a description.
type optDef struct {
	name string
	arg  bool
	desc string
}

// cmdLine is a parsed command line: the options seen, their values, and
// the positional arguments (args[0] is the command name, as in zkCli).
type cmdLine struct {
	set  map[string]bool
	vals map[string]string
	args []string
}

func (c *cmdLine) has(name string) bool   { return c.set[name] }
func (c *cmdLine) val(name string) string { return c.vals[name] }
func (c *cmdLine) arg(i int) string       { return c.args[i] }
func (c *cmdLine) nargs() int             { return len(c.args) }
func (c *cmdLine) selected(names ...string) string {
	for _, n := range names {
		if c.set[n] {
			return n
		}
	}
	return ""
}

// parseOpts parses args (args[0] is the command name) the way commons-cli's
// DefaultParser does for zkCli: options may come before, between or after
// the positional arguments; "-sw" is "-s -w"; "-v5" and "-v=5" give -v the
// value 5; "--" ends the options; a negative number is accepted as an
// option's value; any other word starting with "-" that is not an option is
// an error. group, if not empty, lists mutually exclusive options (zkCli's
// OptionGroup for setquota/delquota).
func parseOpts(args []string, defs []optDef, group []string) (*cmdLine, error) {
	c := &cmdLine{set: map[string]bool{}, vals: map[string]string{}}
	lookup := func(name string) *optDef {
		for i := range defs {
			if defs[i].name == name {
				return &defs[i]
			}
		}
		return nil
	}
	inGroup := func(name string) bool {
		for _, g := range group {
			if g == name {
				return true
			}
		}
		return false
	}
	groupSel := ""
	var pending *optDef
	use := func(d *optDef) error {
		if pending != nil {
			return fmt.Errorf("Missing argument for option: %s", pending.name)
		}
		if inGroup(d.name) {
			if groupSel != "" && groupSel != d.name {
				return fmt.Errorf("The option '%s' was specified but an option from this group has already been selected: '%s'", d.name, groupSel)
			}
			groupSel = d.name
		}
		c.set[d.name] = true
		if d.arg {
			pending = d
		}
		return nil
	}
	setVal := func(v string) {
		if _, ok := c.vals[pending.name]; !ok { // the first value counts, as getOptionValue
			c.vals[pending.name] = v
		}
		pending = nil
	}
	// isOption reports whether tok would be read as an option (so it cannot
	// be the value of a pending one), as DefaultParser.isShortOption does.
	isOption := func(tok string) bool {
		if len(tok) < 2 || tok[0] != '-' {
			return false
		}
		if isNumber(tok) {
			return false
		}
		name := tok[1:]
		if i := strings.IndexByte(name, '='); i >= 0 {
			name = name[:i]
		}
		if lookup(name) != nil {
			return true
		}
		return name != "" && lookup(name[:1]) != nil
	}
	skip := false
	if len(args) > 0 {
		c.args = append(c.args, args[0])
		args = args[1:]
	}
	for _, tok := range args {
		if skip {
			c.args = append(c.args, tok)
			continue
		}
		if pending != nil && !isOption(tok) && tok != "--" {
			setVal(tok)
			continue
		}
		switch {
		case tok == "--":
			if pending != nil {
				return nil, fmt.Errorf("Missing argument for option: %s", pending.name)
			}
			skip = true
			continue
		case tok == "-" || !strings.HasPrefix(tok, "-"):
			if pending != nil {
				return nil, fmt.Errorf("Missing argument for option: %s", pending.name)
			}
			c.args = append(c.args, tok)
			continue
		case strings.HasPrefix(tok, "--"):
			return nil, fmt.Errorf("Unrecognized option: %s", tok)
		}
		t := tok[1:]
		if d := lookup(t); d != nil {
			if err := use(d); err != nil {
				return nil, err
			}
			continue
		}
		if i := strings.IndexByte(t, '='); i > 0 {
			if d := lookup(t[:i]); d != nil && d.arg {
				if err := use(d); err != nil {
					return nil, err
				}
				setVal(t[i+1:])
				continue
			}
		}
		// Concatenated short options: "-sw", "-v5", "-sv5".
		for i, r := range t {
			d := lookup(string(r))
			if d == nil {
				return nil, fmt.Errorf("Unrecognized option: %s", tok)
			}
			if err := use(d); err != nil {
				return nil, err
			}
			if d.arg {
				if i+1 < len(t) {
					setVal(t[i+1:])
				}
				break
			}
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("Missing argument for option: %s", pending.name)
	}
	return c, nil
}

// isNumber reports whether s parses as a number (commons-cli lets a
// negative number stand as an option's value).
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// validatePath applies the Java client's PathUtils.validatePath and returns
// its message, so that errors read as zkCli's. Positions count UTF-16 code
// units, and characters outside the BMP are invalid, as in Java (they are
// surrogate pairs there).
func validatePath(p string, sequential bool) error {
	if sequential {
		p += "1"
	}
	if p == "" {
		return fmt.Errorf("Path length must be > 0")
	}
	if p[0] != '/' {
		return fmt.Errorf("Path must start with / character")
	}
	if len(p) == 1 {
		return nil
	}
	if p[len(p)-1] == '/' {
		return fmt.Errorf("Path must not end with / character")
	}
	chars := utf16.Encode([]rune(p))
	reason := ""
	last := uint16('/')
	for i := 1; i < len(chars); i++ {
		c := chars[i]
		switch {
		case c == 0:
			reason = fmt.Sprintf("null character not allowed @%d", i)
		case c == '/' && last == '/':
			reason = fmt.Sprintf("empty node name specified @%d", i)
		case c == '.' && last == '.':
			if chars[i-2] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				reason = fmt.Sprintf("relative paths not allowed @%d", i)
			}
		case c == '.':
			if chars[i-1] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				reason = fmt.Sprintf("relative paths not allowed @%d", i)
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			reason = fmt.Sprintf("invalid character @%d", i)
		}
		if reason != "" {
			return fmt.Errorf("Invalid path string \"%s\" caused by %s", p, reason)
		}
		last = c
	}
	return nil
}

// parseTimeout reads -timeout: an integer number of milliseconds (zkCli's
// form) or a Go duration such as "30s".
func parseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("the timeout must be positive: %q", s)
		}
		if n > int64(24*time.Hour/time.Millisecond) {
			return 0, fmt.Errorf("the timeout is too large: %q", s)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid timeout %q: want milliseconds (30000) or a duration (30s)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("the timeout must be positive: %q", s)
	}
	return d, nil
}

// parseJavaInt parses an int the way Integer.parseInt does (decimal, an
// optional sign, 32 bits).
func parseJavaInt(s string) (int32, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil
}

// parseJavaLong parses a long the way Long.parseLong does.
func parseJavaLong(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
