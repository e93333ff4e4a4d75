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
	"time"
)

// rootSeq makes every script run's root path unique, also across -count.
var rootSeq atomic.Int64

// TestScriptsParse checks that every script parses, with or without Apache
// ZooKeeper.
func TestScriptsParse(t *testing.T) {
	scripts, err := loadScripts("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) == 0 {
		t.Fatal("no scripts in testdata")
	}
}

// TestDiff runs every script against Apache ZooKeeper and zkgo and compares
// the normalised results step by step.
func TestDiff(t *testing.T) {
	requireServers(t)
	t.Logf("Apache ZooKeeper %s at %s (started in %v), zkgo at %s", apache.Version(), apache.Addr(), apacheStartTime.Round(time.Millisecond), zkgo.Addr())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache ZooKeeper log:\n%s", apache.LogTail())
		}
	})
	scripts, err := loadScripts("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			runDiff(t, s)
		})
	}
}

func runDiff(t *testing.T, s *script) {
	root := fmt.Sprintf("/diff-%s-%d", s.name, rootSeq.Add(1))
	var (
		wg             sync.WaitGroup
		aRes, zRes     []string
		aErr, zErr     error
		apacheR, zkgoR = newRun("apache", apache.Addr(), root), newRun("zkgo", zkgo.Addr(), root)
	)
	wg.Add(2)
	go func() { defer wg.Done(); aRes, aErr = apacheR.execute(s) }()
	go func() { defer wg.Done(); zRes, zErr = zkgoR.execute(s) }()
	wg.Wait()
	var se *errScript
	if errors.As(aErr, &se) || errors.As(zErr, &se) {
		t.Fatalf("script error: %v", firstErr(aErr, zErr))
	}
	if aErr != nil || zErr != nil {
		t.Fatalf("run failed: apache: %v; zkgo: %v", aErr, zErr)
	}
	if t.Failed() {
		return
	}
	diverged := false
	for i := range aRes {
		var st *step
		where := "end of script"
		if i < len(s.steps) {
			st = s.steps[i]
			where = fmt.Sprintf("%s:%d: %s", s.file, st.line, st.text)
		}
		a, z := aRes[i], zRes[i]
		if st != nil && st.expect != "" && firstWord(a) != st.expect {
			t.Errorf("%s\n\tscript expects %s but Apache ZooKeeper gave: %s", where, st.expect, a)
		}
		if a == z {
			if st != nil && (st.knownDiff != "" || st.deliberate != "") {
				t.Logf("marker no longer needed (both agree): %s\n\tboth: %s", where, a)
			}
			continue
		}
		msg := fmt.Sprintf("%s\n\tapache: %s\n\tzkgo:   %s", where, a, z)
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
		if names := maskedEqual(a, z); names != nil {
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
				fmt.Fprintf(&b, "\n     %-60s %s", "  (zkgo)", zRes[i])
			}
		}
		t.Logf("transcript (apache, and zkgo where different):%s", b.String())
	}
}

// knownMasks hide zkgo bugs that show in many steps (every Stat of a
// certain kind). When two results differ only in what some masks hide, the
// difference is logged as known instead of failing the test. Delete a mask
// once its bug is fixed.
var knownMasks = []struct {
	name string
	re   *regexp.Regexp
	repl string
}{}

// maskedEqual returns the names of the masks that make a and z equal, or
// nil if they still differ with all masks applied.
func maskedEqual(a, z string) []string {
	var names []string
	for _, m := range knownMasks {
		if !slices.Equal(m.re.FindAllString(a, -1), m.re.FindAllString(z, -1)) {
			names = append(names, m.name)
		}
		a, z = m.re.ReplaceAllString(a, m.repl), m.re.ReplaceAllString(z, m.repl)
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
