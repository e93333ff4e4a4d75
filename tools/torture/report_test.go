package torture

import (
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tools/torture/check"
)

// TestReportHTML: the report draws a bar per fault (from its start to its
// removal) and per second of traffic, and shows the checkers' verdicts.
func TestReportHTML(t *testing.T) {
	r := &Report{Seed: 9, Members: 3, Duration: 10 * time.Second,
		Schedule: []string{"partition member 1 at 1s for 2s", "kill the leader at 5s for 2s"},
		Events: []Event{
			{At: time.Second, What: "fault: partition: members [1] cut from the others"},
			{At: 3 * time.Second, What: "healed: partition"},
			{At: 5 * time.Second, What: "fault: kill: member 2 killed (SIGKILL)"},
			{At: 7 * time.Second, What: "healed: kill"},
		},
		Recoveries: []Recovery{{Fault: "partition", During: 10 * time.Millisecond, Took: 5 * time.Millisecond}, {Fault: "kill", During: -1, Took: 20 * time.Millisecond}},
		Seconds:    []Second{{OK: 10}, {OK: 5, Failed: 2}, {OK: 8}},
		Results: []check.Result{{Name: "registers", OK: true, Checked: 23},
			{Name: "locks", OK: false, Checked: 4, Problem: "two holders", Evidence: []string{"c1 <holds>", "c2 holds"}}},
	}
	var b strings.Builder
	if err := r.html(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, `<rect class="fault"`); n != 2 {
		t.Errorf("%d fault bars, want 2", n)
	}
	if n := strings.Count(out, `<rect class="ok"`); n != 3 {
		t.Errorf("%d traffic bars, want 3", n)
	}
	for _, want := range []string{"FAIL", "VIOLATED", "two holders", "c1 &lt;holds&gt;", "not while it lasted", "-seed 9"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if r.Passed() {
		t.Error("a report with a violated checker passed")
	}
}
