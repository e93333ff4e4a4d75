package check

import (
	"fmt"
	"strings"
)

// Result is a checker's verdict. It is plain data, JSON-serialisable, for
// the harness's report.
type Result struct {
	// Name is the checker: "registers", "sequential", "ephemerals",
	// "watches", "sessions", "locks" or "leaders".
	Name string `json:"name"`
	// OK is true when the history shows no violation. A check that could
	// not finish (the registers search timed out) is not OK either: its
	// Problem says it was inconclusive, not that it found a violation.
	OK bool `json:"ok"`
	// Checked is how many operations or events the checker looked at.
	Checked int `json:"checked"`
	// Problem is the first violation, one sentence; empty when OK.
	Problem string `json:"problem,omitempty"`
	// Evidence is the smallest history that shows the violation: the few
	// records involved, one per line (for registers, also the path of
	// porcupine's visualization when one was written).
	Evidence []string `json:"evidence,omitempty"`
	// Notes say what the verdict rests on: how many outcomes were unknown,
	// what could not be checked.
	Notes []string `json:"notes,omitempty"`
}

// fail sets r's Problem and Evidence and clears OK.
func (r *Result) fail(problem string, evidence ...string) {
	r.OK = false
	r.Problem = problem
	r.Evidence = evidence
}

// note appends a note built with fmt.Sprintf.
func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Summary returns one line per result: the checker's name, ok or FAIL,
// how many records it looked at, and the problem (or the first note).
func Summary(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		verdict, detail := "ok  ", ""
		if !r.OK {
			verdict, detail = "FAIL", r.Problem
		} else if len(r.Notes) > 0 {
			detail = r.Notes[0]
		}
		fmt.Fprintf(&b, "%-10s %s %7d checked", r.Name, verdict, r.Checked)
		if detail != "" {
			b.WriteString("  ")
			b.WriteString(detail)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ts formats a time of the history (nanoseconds since the run's start) in
// seconds.
func ts(ns int64) string { return fmt.Sprintf("%.6fs", float64(ns)/1e9) }

// span formats an operation's call and return times.
func span(call, ret int64) string { return "[" + ts(call) + ", " + ts(ret) + "]" }

// hex formats a zxid or a session id the way ZooKeeper logs them.
func hex(v int64) string { return fmt.Sprintf("0x%x", v) }
