package check

import (
	"testing"
	"time"
)

func term(p string, start, end int64) LeaderTerm {
	return LeaderTerm{Participant: p, Start: ms(start), End: ms(end)}
}

func TestLeaders(t *testing.T) {
	slop := 5 * time.Millisecond
	tests := []struct {
		name  string
		terms []LeaderTerm
		end   int64
		want  verdict
	}{
		{"good", []LeaderTerm{term("p1", 0, 100), term("p2", 101, 200), term("p1", 250, 0)}, 0, verdict{ok: true}},
		{"an overlap within the slop", []LeaderTerm{term("p1", 0, 100), term("p2", 97, 200)}, 0, verdict{ok: true}},
		{"two overlapping leaders", []LeaderTerm{term("p1", 0, 100), term("p2", 50, 200), term("p3", 300, 400)}, 0, verdict{
			problem:  []string{"p1 and p2 both led for 50ms from 0.050000s"},
			evidence: []string{"p1 leads [0.000000s, 0.100000s]", "p2 leads [0.050000s, 0.200000s]"}}},
		{"the earliest overlap is reported", []LeaderTerm{term("p1", 0, 1000), term("p3", 500, 600), term("p2", 100, 200)}, 0, verdict{
			problem: []string{"p1 and p2"}}},
		{"an open term lasts to the end of the run", []LeaderTerm{term("p1", 0, 0), term("p2", 50, 60)}, 0, verdict{
			problem: []string{"p1 and p2 both led for 10ms"}, evidence: []string{"p1 leads [0.000000s, end]"}}},
		{"an open term lasts to the given end", []LeaderTerm{term("p1", 0, 0), term("p2", 50, 60)}, ms(52), verdict{ok: true}},
		{"one participant's terms may touch", []LeaderTerm{term("p1", 0, 100), term("p1", 50, 200)}, 0, verdict{ok: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectResult(t, Leaders(LeaderHistory{Terms: tt.terms}, LeaderOptions{Slop: slop, End: tt.end}), tt.want)
		})
	}
}
