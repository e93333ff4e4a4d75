package difftest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Script is a list of steps read from a file (testdata/<name>.txt of the
// package that runs it). The format is described in
// tests/difftest/testdata/README.md.
type Script struct {
	// Name is the file's name without ".txt"; File is its path.
	Name  string
	File  string
	steps []*step
	// knownDiff, if set, turns every difference of the script into a log
	// line (a "# known-diff-all: reason" line anywhere in the file).
	knownDiff string
}

// A step is one line of a script.
type step struct {
	line int
	text string // the line as written, for messages
	// sess is the session the request is sent on; empty for the
	// session-management verbs (session, attach, expect-events, ...).
	sess string
	verb string
	args []token
	// subs are the sub-operations of a multi or multiRead step.
	subs []subOp
	// expect is the first word the reference server's result must start
	// with ("=> NoNode" at the end of the line), or "".
	expect string
	// knownDiff, if set, makes a difference on this step a log line
	// instead of a failure (a "# known-diff: reason" line just before it,
	// for a zkgo bug).
	knownDiff string
	// deliberate, likewise, for a deliberate difference documented in
	// docs/COMPATIBILITY.md (a "# deliberate-diff: reason" line).
	deliberate string
}

type subOp struct {
	verb string
	args []token
}

// A token is a word of a step. key is set for "key=value" words; quoted
// reports whether the value was written in double quotes (Go syntax).
type token struct {
	key    string
	val    string
	quoted bool
}

func (t token) String() string {
	v := t.val
	if t.quoted {
		v = strconv.Quote(v)
	}
	if t.key != "" {
		return t.key + "=" + v
	}
	return v
}

// sessionVerbs are the verbs that do not send a request on a session; their
// first argument names a session (or a duration for sleep).
var sessionVerbs = map[string]bool{
	"session":       true,
	"attach":        true,
	"disconnect":    true,
	"expect-events": true,
	"no-events":     true,
	"wait-closed":   true,
	"wait-gone":     true,
	"mark":          true,
	"sleep":         true,
}

// requestVerbs are the verbs sent on a session ("s1 create ...").
var requestVerbs = map[string]bool{
	"create": true, "create2": true, "createContainer": true, "createTTL": true,
	"delete": true, "exists": true, "getData": true, "setData": true,
	"getACL": true, "setACL": true, "getChildren": true, "getChildren2": true,
	"sync": true, "check": true, "multi": true, "multiRead": true,
	"reconfig": true, "checkWatches": true, "removeWatches": true,
	"addauth": true, "setWatches": true, "setWatches2": true, "addWatch": true,
	"getEphemerals": true, "getAllChildrenNumber": true, "whoAmI": true,
	"ping": true, "closeSession": true, "op": true,
}

// multiVerbs may appear inside multi and multiRead.
var multiVerbs = map[string]bool{
	"create": true, "create2": true, "createContainer": true, "createTTL": true,
	"delete": true, "setData": true, "check": true, "getData": true,
	"getChildren": true,
}

// LoadScripts parses every dir/*.txt, in name order. The error names the
// file and line of the first mistake.
func LoadScripts(dir string) ([]*Script, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	var out []*Script
	for _, f := range files {
		s, err := ParseScriptFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseScriptFile parses one script.
func ParseScriptFile(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &Script{Name: strings.TrimSuffix(filepath.Base(path), ".txt"), File: path}
	sc := bufio.NewScanner(f)
	n := 0
	pendingKnown, pendingDeliberate := "", ""
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			c := strings.TrimSpace(strings.TrimPrefix(line, "#"))
			if r, ok := strings.CutPrefix(c, "known-diff-all:"); ok {
				s.knownDiff = strings.TrimSpace(r)
			} else if r, ok := strings.CutPrefix(c, "known-diff:"); ok {
				pendingKnown = strings.TrimSpace(r)
			} else if r, ok := strings.CutPrefix(c, "deliberate-diff:"); ok {
				pendingDeliberate = strings.TrimSpace(r)
			}
			continue
		}
		st, err := parseStep(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		st.line = n
		st.knownDiff, st.deliberate = pendingKnown, pendingDeliberate
		pendingKnown, pendingDeliberate = "", ""
		s.steps = append(s.steps, st)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pendingKnown != "" || pendingDeliberate != "" {
		return nil, fmt.Errorf("%s: known-diff marker after the last step", path)
	}
	if len(s.steps) == 0 {
		return nil, fmt.Errorf("%s: no steps", path)
	}
	return s, nil
}

func parseStep(line string) (*step, error) {
	toks, err := tokenize(line)
	if err != nil {
		return nil, err
	}
	st := &step{text: line}
	// "=> X" at the end.
	for i, t := range toks {
		if t.key == "" && !t.quoted && t.val == "=>" {
			if i != len(toks)-2 {
				return nil, fmt.Errorf("\"=>\" must be followed by exactly one word")
			}
			st.expect = toks[i+1].val
			toks = toks[:i]
			break
		}
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("empty step")
	}
	first := toks[0]
	if first.key != "" || first.quoted {
		return nil, fmt.Errorf("a step starts with a verb or a session name")
	}
	if sessionVerbs[first.val] {
		st.verb = first.val
		st.args = toks[1:]
		if len(st.args) == 0 {
			return nil, fmt.Errorf("%s needs an argument", st.verb)
		}
		return st, nil
	}
	if len(toks) < 2 || toks[1].key != "" || toks[1].quoted || !requestVerbs[toks[1].val] {
		return nil, fmt.Errorf("unknown step %q", line)
	}
	st.sess = first.val
	st.verb = toks[1].val
	st.args = toks[2:]
	if st.verb == "multi" || st.verb == "multiRead" {
		var cur *subOp
		for _, t := range st.args {
			if t.key == "" && !t.quoted && t.val == ";" {
				cur = nil
				continue
			}
			if cur == nil {
				if t.key != "" || t.quoted || !multiVerbs[t.val] {
					return nil, fmt.Errorf("bad multi sub-operation %v", t)
				}
				st.subs = append(st.subs, subOp{verb: t.val})
				cur = &st.subs[len(st.subs)-1]
				continue
			}
			cur.args = append(cur.args, t)
		}
		st.args = nil
	}
	return st, nil
}

// tokenize splits a line into words. Double-quoted parts use Go string
// syntax. A word "key=value" with key made of letters is an option. An
// unquoted word starting with '#' starts a comment.
func tokenize(line string) ([]token, error) {
	var out []token
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return out, nil
		}
		if line[i] == '#' {
			return out, nil
		}
		var t token
		// Option key?
		j := i
		for j < len(line) && (line[j] >= 'a' && line[j] <= 'z' || line[j] >= 'A' && line[j] <= 'Z') {
			j++
		}
		if j > i && j < len(line) && line[j] == '=' && !(j+1 < len(line) && line[j+1] == '>') {
			t.key = line[i:j]
			i = j + 1
		}
		var b strings.Builder
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			if line[i] == '"' {
				k := i + 1
				for k < len(line) && line[k] != '"' {
					if line[k] == '\\' {
						k++
					}
					k++
				}
				if k >= len(line) {
					return nil, fmt.Errorf("unterminated string")
				}
				s, err := strconv.Unquote(line[i : k+1])
				if err != nil {
					return nil, fmt.Errorf("bad string %s: %v", line[i:k+1], err)
				}
				b.WriteString(s)
				t.quoted = true
				i = k + 1
				continue
			}
			b.WriteByte(line[i])
			i++
		}
		t.val = b.String()
		out = append(out, t)
	}
}

// positional returns the positional (non-option) arguments.
func positional(args []token) []token {
	var out []token
	for _, a := range args {
		if a.key == "" {
			out = append(out, a)
		}
	}
	return out
}

// option returns the value of option key.
func option(args []token, key string) (string, bool) {
	for _, a := range args {
		if a.key == key {
			return a.val, true
		}
	}
	return "", false
}

// hasWord reports whether the bare word w is among the arguments.
func hasWord(args []token, w string) bool {
	for _, a := range args {
		if a.key == "" && !a.quoted && a.val == w {
			return true
		}
	}
	return false
}
