package check

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The tests here generate histories of a correct ensemble — with
// concurrent requests, unknown outcomes that did and did not take effect,
// and reconnections — and require the checkers to pass them all: a
// checker that reports a violation on one of them is unsound.

// TestWatchesSimulated: a writer changes a few paths in and out of the
// watched subtree; the watcher's connection drops and comes back, losing
// the events committed while it is down; outcomes are sometimes unknown.
func TestWatchesSimulated(t *testing.T) {
	paths := []string{"/w", "/w/a", "/w/b", "/w/a/c", "/x"}
	for seed := range 300 {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		var h WatchHistory
		h.Watches = []Watch{{ID: "w1", Client: "c9", Path: "/w", Recursive: rng.IntN(2) == 0}}
		if !h.Watches[0].Recursive {
			paths[3] = "/w/c"
		} else {
			paths[3] = "/w/a/c"
		}
		exists := make(map[string]bool)
		connected, zxid := true, int64(100)
		// Each step: the write is called at t0, commits at t0+3ms and is
		// reported at most 2ms later (the slop); the connection may then
		// change at t0+4ms, which the workload sees at most 2ms later; the
		// write returns at t0+5ms.
		lag := func() int64 { return rng.Int64N(int64(2*time.Millisecond) + 1) }
		for step := range int64(80) {
			t0 := ms(step * 10)
			p := paths[rng.IntN(len(paths))]
			var change Change
			switch {
			case !exists[p]:
				change = Created
			case rng.IntN(3) == 0:
				change = Deleted
			default:
				change = DataChanged
			}
			w := Write{Client: "writer", Path: p, Change: change, Call: t0, Return: t0 + ms(5)}
			happened := true
			switch r := rng.IntN(100); {
			case r < 75:
				w.Outcome = OK
			case r < 85:
				w.Outcome = Unknown
			case r < 92:
				w.Outcome, happened = Unknown, false
			default:
				w.Outcome = OK
			}
			if happened {
				zxid++
				exists[p] = change != Deleted
				if w.Outcome == OK && rng.IntN(100) < 90 {
					w.Zxid = zxid
				}
				if connected {
					h.Events = append(h.Events, expectedEvents(h.Watches[0], p, change, t0+ms(3)+lag())...)
				}
			}
			h.Writes = append(h.Writes, w)
			if rng.IntN(8) == 0 {
				connected = !connected
				h.Conns = append(h.Conns, ConnChange{Client: "c9", At: t0 + ms(4) + lag(), Connected: connected})
			}
		}
		res := Watches(h, WatchOptions{Slop: 2 * time.Millisecond})
		if !res.OK {
			t.Fatalf("seed %d: %s\n%s", seed, res.Problem, fmt.Sprint(res.Evidence))
		}
	}
}

// expectedEvents returns the event a correct server sends watch w for a
// change of p.
func expectedEvents(w Watch, p string, c Change, at int64) []WatchEvent {
	switch {
	case w.Recursive && under(w.Path, p), !w.Recursive && p == w.Path:
		return []WatchEvent{{Watch: w.ID, At: at, Change: c, Path: p}}
	case !w.Recursive && p != "/" && parentPath(p) == w.Path && c != DataChanged:
		return []WatchEvent{{Watch: w.ID, At: at, Change: ChildrenChanged, Path: w.Path}}
	}
	return nil
}

// TestSequentialSimulated: clients create concurrently, a sequence number
// is given at each create's commit, some outcomes are unknown (and some of
// those did take effect), listings show what was committed.
func TestSequentialSimulated(t *testing.T) {
	for seed := range 300 {
		rng := rand.New(rand.NewPCG(uint64(seed), 2))
		type op struct {
			c        SeqCreate
			commit   int64
			happened bool
		}
		var ops []op
		for i := range 40 {
			call := int64(rng.IntN(1000))
			commit := call + 1 + int64(rng.IntN(30))
			c := seqC(fmt.Sprintf("c%d", i%5), fmt.Sprintf("c%d-%d-", i%5, i), call, commit+1+int64(rng.IntN(5)), OK, "")
			happened := true
			switch r := rng.IntN(100); {
			case r < 80:
			case r < 90:
				c.Outcome = Unknown
			case r < 95:
				c.Outcome, happened = Unknown, false
			default:
				c.Outcome, happened = Failed, false
			}
			ops = append(ops, op{c, commit, happened})
		}
		slices.SortStableFunc(ops, func(a, b op) int { return int(a.commit - b.commit) })
		seq := int64(rng.IntN(5))
		var h SequentialHistory
		var names []string // committed so far, in commit order
		var commits []int64
		for i := range ops {
			if !ops[i].happened {
				continue
			}
			name := fmt.Sprintf("%s%010d", ops[i].c.Prefix, seq)
			seq++
			if ops[i].c.Outcome == OK {
				ops[i].c.Name = "/q/" + name
			}
			names = append(names, name)
			commits = append(commits, ms(ops[i].commit))
		}
		for _, o := range ops {
			h.Creates = append(h.Creates, o.c)
		}
		for range 10 {
			call := int64(rng.IntN(1100))
			at := ms(call + 1)
			var listed []string
			for i, n := range names {
				if commits[i] <= at {
					listed = append(listed, n)
				}
			}
			rng.Shuffle(len(listed), func(i, j int) { listed[i], listed[j] = listed[j], listed[i] })
			h.Listings = append(h.Listings, seqL(call, call+2, listed...))
		}
		res := Sequential(h, SequentialOptions{Durable: true})
		if !res.OK {
			t.Fatalf("seed %d: %s\n%s", seed, res.Problem, fmt.Sprint(res.Evidence))
		}
	}
}
