package check

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// LeaderTerm is an interval in which a participant believed it led.
type LeaderTerm struct {
	Participant string
	// Start is when the participant learned it leads (a LatchEvent with
	// Leader true received, or Await returned).
	Start int64
	// End is when it stopped believing it: a LatchEvent with Leader false
	// received, the grant's Done closed, the suspension of its connection
	// noticed (StateSuspended received, under the Strict policy), or Close
	// called — whichever came first; 0 when it still led at the end of
	// the run.
	End   int64
	Token int64 // the leadership grant's token, if known
}

// String formats t on one line.
func (t LeaderTerm) String() string {
	end := "end"
	if t.End != 0 {
		end = ts(t.End)
	}
	s := fmt.Sprintf("%s leads [%s, %s]", t.Participant, ts(t.Start), end)
	if t.Token != 0 {
		s += " with token " + hex(t.Token)
	}
	return s
}

// LeaderHistory is the leader workload's history.
type LeaderHistory struct {
	Terms []LeaderTerm
}

// LeaderOptions configure Leaders.
type LeaderOptions struct {
	// Slop is how long two terms may overlap: the time a leadership change
	// takes to reach the participants (a notification, a state change, a
	// goroutine's wake-up). All times are on one process's clock, so it
	// can be small, but not zero.
	Slop time.Duration
	// End is the end of the run, where terms still open end; 0: the latest
	// time in the terms.
	End int64
}

// Leaders checks that no two participants believed they led at once: two
// terms of different participants that overlap by more than o.Slop are a
// violation.
//
// It assumes a participant notices the loss of its connection before its
// session can expire (the session timeout is longer than the time a member
// cut off from the quorum takes to drop its clients); otherwise a
// participant connected to such a member believes it leads while the
// others elect a successor, which ZooKeeper allows.
func Leaders(h LeaderHistory, o LeaderOptions) Result {
	res := Result{Name: "leaders", OK: true, Checked: len(h.Terms)}
	end := o.End
	if end == 0 {
		for _, t := range h.Terms {
			end = max(end, t.Start, t.End)
		}
	}
	terms := slices.Clone(h.Terms)
	open := 0
	for i := range terms {
		if terms[i].End == 0 {
			terms[i].End = end
			open++
		}
	}
	slices.SortStableFunc(terms, func(a, b LeaderTerm) int { return cmp.Compare(a.Start, b.Start) })
	slop := int64(o.Slop)
	var wa, wb LeaderTerm // the overlapping pair that starts earliest
	found := false
	for i, a := range terms {
		for _, b := range terms[i+1:] {
			if b.Start >= a.End {
				break // sorted by start: no later term overlaps a
			}
			if a.Participant == b.Participant || min(a.End, b.End)-b.Start <= slop {
				continue
			}
			if !found || b.Start < wb.Start {
				wa, wb, found = a, b, true
			}
		}
	}
	if found {
		over := time.Duration(min(wa.End, wb.End) - wb.Start)
		res.fail(fmt.Sprintf("%s and %s both led for %v from %s (more than the slop of %v)", wa.Participant, wb.Participant, over, ts(wb.Start), o.Slop),
			original(h.Terms, wa).String(), original(h.Terms, wb).String())
		return res
	}
	res.note("%d terms (%d still open at the end, %s)", len(h.Terms), open, ts(end))
	return res
}

// original returns the recorded term that t was copied from (with its End
// still 0 if it was open).
func original(terms []LeaderTerm, t LeaderTerm) LeaderTerm {
	for _, o := range terms {
		if o.Participant == t.Participant && o.Start == t.Start && o.Token == t.Token {
			return o
		}
	}
	return t
}
