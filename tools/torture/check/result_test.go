package check

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkgo/zkgo/zk"
)

func TestSummary(t *testing.T) {
	results := []Result{
		{Name: "registers", OK: true, Checked: 1200, Notes: []string{"1200 operations, 3 writes of unknown outcome"}},
		{Name: "sequential", OK: true, Checked: 7},
		{Name: "watches", Checked: 42, Problem: "watch w1 got a forged event", Evidence: []string{"e1", "e2"}, Notes: []string{"n"}},
	}
	want := "registers  ok      1200 checked  1200 operations, 3 writes of unknown outcome\n" +
		"sequential ok         7 checked\n" +
		"watches    FAIL      42 checked  watch w1 got a forged event\n"
	if got := Summary(results); got != want {
		t.Errorf("Summary:\n%s\nwant:\n%s", got, want)
	}
	if Summary(nil) != "" {
		t.Error("Summary of nothing is not empty")
	}
}

// TestResultJSON: Results round-trip through JSON with lower-case keys,
// empty fields left out.
func TestResultJSON(t *testing.T) {
	r := Result{Name: "locks", Checked: 3, Problem: "p", Evidence: []string{"a -> b"}, Notes: []string{"n"}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	b, _ = json.Marshal(Result{Name: "leaders", OK: true, Checked: 1})
	if got := string(b); got != `{"name":"leaders","ok":true,"checked":1}` {
		t.Errorf("OK result: %s", got)
	}
}

// TestAll: All runs the checkers that have records, in order, and their
// verdicts are theirs.
func TestAll(t *testing.T) {
	h := History{
		Sequential: SequentialHistory{Creates: []SeqCreate{
			seqC("c1", "a-", 0, 10, OK, "/q/a-0000000001"),
			seqC("c2", "b-", 20, 30, OK, "/q/b-0000000001"),
		}},
		Leaders: LeaderHistory{Terms: []LeaderTerm{term("p1", 0, 100)}},
	}
	res := All(h, Options{Leaders: LeaderOptions{Slop: time.Millisecond}})
	var names []string
	for _, r := range res {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "sequential,leaders" {
		t.Fatalf("All ran %s", got)
	}
	if res[0].OK || !res[1].OK {
		t.Errorf("verdicts: %+v", res)
	}
	if len(All(History{}, Options{})) != 0 {
		t.Error("All ran checkers on an empty history")
	}
}

func TestOutcomeOf(t *testing.T) {
	tests := []struct {
		err  error
		want Outcome
	}{
		{nil, OK},
		{errString("zk: node does not exist"), Unknown}, // not the sentinel: unknown
		{fmt.Errorf("set: %w", zk.ErrConnectionLoss), Unknown},
		{zk.ErrSessionExpired, Unknown},
		{context.DeadlineExceeded, Unknown},
		{gozk.ErrNoServer, Unknown},
		{fmt.Errorf("create: %w", gozk.ErrNodeExists), Failed},
	}
	for _, sentinel := range definite {
		tests = append(tests, struct {
			err  error
			want Outcome
		}{wrapErr{sentinel}, Failed})
	}
	for _, tt := range tests {
		if got := OutcomeOf(tt.err); got != tt.want {
			t.Errorf("OutcomeOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

type wrapErr struct{ err error }

func (e wrapErr) Error() string { return "wrapped: " + e.err.Error() }
func (e wrapErr) Unwrap() error { return e.err }
