package difftest

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// A Target is one server a script runs against.
type Target struct {
	// Name names the server in messages ("apache", "zkgo").
	Name string
	// Addr is its client address, "host:port".
	Addr string
	// Vars are the server's own values of the script's variables:
	// $NAME in a step's words is replaced by the value (before $R), and
	// in results the value, where it stands as a word of its own, by
	// $NAME. For what differs between the servers by construction, such
	// as their ports.
	Vars map[string]string
}

// A Mask hides a zkgo bug that shows in many results (every Stat of a
// certain kind): where two results differ only in what the masks hide,
// the difference is logged as known instead of failing the test. Delete a
// mask once its bug is fixed.
type Mask struct {
	Name string
	RE   *regexp.Regexp
	Repl string
}

// Options adjust Compare.
type Options struct {
	// Masks are applied, in order, to results that differ.
	Masks []Mask
	// Normalize, if set, rewrites one server's results of a run (one per
	// step, then the leftover events) after the root path and the
	// variables are replaced and before zxids are ranked: for values
	// that differ between the servers by nature. steps are the steps'
	// lines as written ("" for the leftover events).
	Normalize func(steps, results []string)
	// DataLimit is the longest data shown as text in results; longer
	// data shows as its length and SHA-1. Default 100 bytes.
	DataLimit int
}

// rootSeq makes every script run's root path unique, also across -count.
var rootSeq atomic.Int64

// Compare runs s against ref (Apache ZooKeeper, the reference) and sut
// (zkgo) at the same time, each under a fresh root path (/diff-<name>-<n>,
// $R in the script), and compares the normalised results step by step: a
// difference fails t unless a marker in the script or a mask says it is
// known or deliberate (logged instead). A step whose "=> WORD" does not
// match ref's result fails t as a mistake in the script. With -v the
// transcript is logged.
func Compare(t *testing.T, s *Script, ref, sut Target, o Options) {
	t.Helper()
	root := fmt.Sprintf("/diff-%s-%d", s.Name, rootSeq.Add(1))
	var (
		wg         sync.WaitGroup
		aRes, zRes []string
		aErr, zErr error
		refR, sutR = newRun(ref, root, o), newRun(sut, root, o)
	)
	wg.Add(2)
	go func() { defer wg.Done(); aRes, aErr = refR.execute(s) }()
	go func() { defer wg.Done(); zRes, zErr = sutR.execute(s) }()
	wg.Wait()
	var se *errScript
	if errors.As(aErr, &se) || errors.As(zErr, &se) {
		t.Fatalf("script error: %v", firstErr(aErr, zErr))
	}
	if aErr != nil || zErr != nil {
		t.Fatalf("run failed: %s: %v; %s: %v", ref.Name, aErr, sut.Name, zErr)
	}
	w := max(len(ref.Name), len(sut.Name)) + 1
	diverged := false
	for i := range aRes {
		var st *step
		where := "end of script"
		if i < len(s.steps) {
			st = s.steps[i]
			where = fmt.Sprintf("%s:%d: %s", s.File, st.line, st.text)
		}
		a, z := aRes[i], zRes[i]
		if st != nil && st.expect != "" && firstWord(a) != st.expect {
			t.Errorf("%s\n\tscript expects %s but %s gave: %s", where, st.expect, ref.Name, a)
		}
		if a == z {
			if st != nil && (st.knownDiff != "" || st.deliberate != "") {
				t.Logf("marker no longer needed (both agree): %s\n\tboth: %s", where, a)
			}
			continue
		}
		msg := fmt.Sprintf("%s\n\t%-*s %s\n\t%-*s %s", where, w, ref.Name+":", a, w, sut.Name+":", z)
		switch {
		case st != nil && st.deliberate != "":
			t.Logf("DELIBERATE DIFF (%s): %s", st.deliberate, msg)
			continue
		case st != nil && st.knownDiff != "":
			t.Logf("KNOWN DIFF (%s): %s", st.knownDiff, msg)
			continue
		case s.knownDiff != "":
			t.Logf("KNOWN DIFF (%s): %s", s.knownDiff, msg)
			continue
		}
		if names := maskedEqual(o.Masks, a, z); names != nil {
			t.Logf("KNOWN DIFF (%s): %s", strings.Join(names, ", "), msg)
			continue
		}
		if diverged {
			t.Errorf("(after an earlier difference) %s", msg)
		} else {
			t.Errorf("%s", msg)
		}
		diverged = true
	}
	if testing.Verbose() {
		var b strings.Builder
		for i, st := range s.steps {
			text, _, _ := strings.Cut(st.text, " =>")
			fmt.Fprintf(&b, "\n%4d %-60s %s", st.line, strings.TrimSpace(text), aRes[i])
			if zRes[i] != aRes[i] {
				fmt.Fprintf(&b, "\n     %-60s %s", "  ("+sut.Name+")", zRes[i])
			}
		}
		t.Logf("transcript (%s, and %s where different):%s", ref.Name, sut.Name, b.String())
	}
}

// maskedEqual returns the names of the masks that make a and z equal, or
// nil if they still differ with all masks applied.
func maskedEqual(masks []Mask, a, z string) []string {
	var names []string
	for _, m := range masks {
		if !slices.Equal(m.RE.FindAllString(a, -1), m.RE.FindAllString(z, -1)) {
			names = append(names, m.Name)
		}
		a, z = m.RE.ReplaceAllString(a, m.Repl), m.RE.ReplaceAllString(z, m.Repl)
	}
	if a != z {
		return nil
	}
	return names
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}
