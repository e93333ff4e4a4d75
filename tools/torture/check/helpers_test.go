package check

import (
	"strings"
	"testing"
	"time"
)

// ms converts milliseconds to a time of the history.
func ms(n int64) int64 { return n * 1_000_000 }

// verdict is what a table test expects of a Result.
type verdict struct {
	ok       bool
	problem  []string // substrings of Problem
	evidence []string // substrings each found in some Evidence line
}

// expectResult fails t unless got matches want.
func expectResult(t *testing.T, got Result, want verdict) {
	t.Helper()
	if got.OK != want.ok {
		t.Fatalf("OK = %v, want %v; problem: %q\nevidence:\n  %s\nnotes: %q", got.OK, want.ok, got.Problem, strings.Join(got.Evidence, "\n  "), got.Notes)
	}
	if got.OK && (got.Problem != "" || len(got.Evidence) > 0) {
		t.Fatalf("OK result with problem %q, evidence %q", got.Problem, got.Evidence)
	}
	for _, s := range want.problem {
		if !strings.Contains(got.Problem, s) {
			t.Errorf("problem %q does not mention %q", got.Problem, s)
		}
	}
	for _, s := range want.evidence {
		found := false
		for _, line := range got.Evidence {
			if strings.Contains(line, s) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no evidence line mentions %q; evidence:\n  %s", s, strings.Join(got.Evidence, "\n  "))
		}
	}
	for _, line := range got.Evidence {
		if strings.Contains(line, "\n") {
			t.Errorf("evidence line %q spans several lines", line)
		}
	}
	if strings.Contains(got.Problem, "\n") {
		t.Errorf("problem %q spans several lines", got.Problem)
	}
}

// timeNow is time.Now, for tests that need a run's start.
var timeNow = time.Now
