package check

import (
	"cmp"
	"fmt"
	"slices"
)

// LockHold is one holding of the lock: from the acquire's return to the
// moment the holder stopped believing it held it.
type LockHold struct {
	Client string
	// Token is the holding's fencing token: recipe.Grant.Token, the lock
	// node's czxid, larger for every later holding.
	Token    int64
	Acquired int64 // when the acquire returned
	// Released is when the holder stopped: it called release, or it
	// noticed the grant was lost (Grant.Done closed), whichever came
	// first; 0 when it still held the lock at the end of the run.
	Released int64
}

// String formats h on one line.
func (h LockHold) String() string {
	end := "end"
	if h.Released != 0 {
		end = ts(h.Released)
	}
	return fmt.Sprintf("%s holds the lock with token %s [%s, %s]", h.Client, hex(h.Token), ts(h.Acquired), end)
}

// FencedWrite is a holder's write to the fence znode: it read the fence
// (the stored token and the data version), and, its token being larger,
// called setData with its token, conditional on that version. Record
// every setData on the fence.
type FencedWrite struct {
	Client       string
	Token        int64 // the writer's token, the data written
	Version      int32 // the data version the setData was conditional on
	Call, Return int64 // of the setData
	Outcome      Outcome
}

// String formats w on one line.
func (w FencedWrite) String() string {
	return fmt.Sprintf("%s fenced write of token %s if version %d %s -> %v", w.Client, hex(w.Token), w.Version, span(w.Call, w.Return), w.Outcome)
}

// LockHistory is the lock workload's history.
type LockHistory struct {
	Holds  []LockHold
	Writes []FencedWrite
	// End is when the clients stopped trying to take the lock, and
	// MaxGap the longest time the lock may go without a holder while
	// they try (liveness); MaxGap 0 checks no liveness.
	End, MaxGap int64
}

// Locks checks that the lock never had two holders whose fenced writes
// both succeeded:
//
//   - Exclusion: a successful write of a holding, called after a holding
//     with a larger token (a later lock node) had been acquired — when the
//     later holder also wrote successfully. The later holding began only
//     once the earlier lock node was gone, so the earlier holder's session
//     was over and its write could not succeed.
//   - Token order: a successful write whose token is lower than that of a
//     successful write that returned before it was called.
//   - Fence versions: two successful writes conditional on one version, a
//     successful write whose token is smaller than that of the successful
//     write at a lower version, or a version between two
//     successful writes that no write of unknown outcome could have made
//     (the chain of versions has a hole only an unrecorded write explains).
//
// Writes of unknown outcome never count as successful; they fill holes in
// the chain of versions.
//
// With MaxGap set, it also checks liveness: clients that keep trying get
// the lock — no stretch longer than MaxGap, from the first holding to End,
// in which nobody held it. (A lock node that no client knows about, left
// by a session that lives on, stops every handoff behind it.)
//
// It assumes lock nodes are deleted only by their holder's release or
// session end, and the fence is written only by recorded fenced writes.
func Locks(h LockHistory) Result {
	res := Result{Name: "locks", OK: true, Checked: len(h.Holds) + len(h.Writes)}
	holds := make(map[int64]LockHold)
	for _, hd := range h.Holds {
		holds[hd.Token] = hd
	}
	var ok []FencedWrite
	unknown, orphans := 0, 0
	for _, w := range h.Writes {
		switch w.Outcome {
		case OK:
			ok = append(ok, w)
		case Unknown:
			unknown++
		}
		hd, found := holds[w.Token]
		if !found || w.Call < hd.Acquired || (hd.Released != 0 && w.Call > hd.Released) {
			orphans++
		}
	}
	slices.SortStableFunc(ok, func(a, b FencedWrite) int { return cmp.Compare(a.Call, b.Call) })
	if !exclusion(&res, h.Holds, ok, holds) || !tokenOrder(&res, ok) || !fenceVersions(&res, ok, h.Writes) ||
		!liveness(&res, h) {
		return res
	}
	res.note("%d holdings, %d fenced writes (%d succeeded, %d of unknown outcome)", len(h.Holds), len(h.Writes), len(ok), unknown)
	if orphans > 0 {
		res.note("%d writes were not made during a recorded holding of their token", orphans)
	}
	return res
}

// liveness looks for the longest stretch without a holder, between the
// first holding and h.End, and fails if it is longer than h.MaxGap.
func liveness(res *Result, h LockHistory) bool {
	if h.MaxGap <= 0 {
		return true
	}
	if len(h.Holds) == 0 {
		if h.End > h.MaxGap {
			res.fail(fmt.Sprintf("lock liveness: nobody held the lock in %s of trying", ts(h.End)))
			return false
		}
		return true
	}
	byStart := slices.Clone(h.Holds)
	slices.SortFunc(byStart, func(a, b LockHold) int { return cmp.Compare(a.Acquired, b.Acquired) })
	var gapFrom, gapTo int64
	var before *LockHold // the holding that ended the longest gap
	covered, last := byStart[0].Acquired, byStart[0]
	for i, hd := range byStart {
		if i > 0 && hd.Acquired-covered > gapTo-gapFrom {
			gapFrom, gapTo, before = covered, hd.Acquired, &byStart[i]
		}
		end := hd.Released
		if end == 0 {
			end = max(h.End, hd.Acquired)
		}
		if end > covered {
			covered, last = end, hd
		}
	}
	tail := h.End > covered && h.End-covered > gapTo-gapFrom
	if tail {
		gapFrom, gapTo, before = covered, h.End, nil
	}
	if gapTo-gapFrom <= h.MaxGap {
		res.note("longest time without a holder %s", ts(gapTo-gapFrom))
		return true
	}
	if tail {
		res.fail(fmt.Sprintf("lock liveness: nobody held the lock from %s to the end of the run at %s (%s), while clients kept trying",
			ts(gapFrom), ts(gapTo), ts(gapTo-gapFrom)), "the last holding: "+last.String())
	} else {
		res.fail(fmt.Sprintf("lock liveness: nobody held the lock from %s to %s (%s), while clients kept trying",
			ts(gapFrom), ts(gapTo), ts(gapTo-gapFrom)), "the holding after the gap: "+before.String())
	}
	return false
}

// exclusion looks for a successful write of a holding made after a later
// holding (larger token) was acquired, the later holder having written
// successfully too.
func exclusion(res *Result, all []LockHold, ok []FencedWrite, holds map[int64]LockHold) bool {
	wrote := make(map[int64]FencedWrite) // token -> its first successful write
	for _, w := range ok {
		if _, ok := wrote[w.Token]; !ok {
			wrote[w.Token] = w
		}
	}
	for _, w := range ok {
		mine, found := holds[w.Token]
		if !found || w.Call < mine.Acquired || (mine.Released != 0 && w.Call > mine.Released) {
			continue // not made while holding: the workload's doing
		}
		for _, later := range all {
			lw, wroteToo := wrote[later.Token]
			if later.Token <= w.Token || later.Acquired >= w.Call || !wroteToo {
				continue
			}
			res.fail(fmt.Sprintf("%s's write with token %s succeeded after %s had acquired the lock with token %s, and both holders' writes succeeded",
				w.Client, hex(w.Token), later.Client, hex(later.Token)), mine.String(), later.String(), w.String(), lw.String())
			return false
		}
	}
	return true
}

// tokenOrder checks that no successful write has a lower token than a
// successful write that returned before it was called (ok is in call
// order).
func tokenOrder(res *Result, ok []FencedWrite) bool {
	byReturn := slices.Clone(ok)
	slices.SortStableFunc(byReturn, func(a, b FencedWrite) int { return cmp.Compare(a.Return, b.Return) })
	var top *FencedWrite
	j := 0
	for _, w := range ok {
		for ; j < len(byReturn) && byReturn[j].Return < w.Call; j++ {
			if top == nil || byReturn[j].Token > top.Token {
				top = &byReturn[j]
			}
		}
		if top != nil && w.Token < top.Token {
			res.fail(fmt.Sprintf("the fence accepted token %s from %s after it had accepted the larger token %s from %s",
				hex(w.Token), w.Client, hex(top.Token), top.Client), top.String(), w.String())
			return false
		}
	}
	return true
}

// fenceVersions checks the chain of data versions the successful writes
// were conditional on.
func fenceVersions(res *Result, ok []FencedWrite, all []FencedWrite) bool {
	byVersion := slices.Clone(ok)
	slices.SortStableFunc(byVersion, func(a, b FencedWrite) int { return cmp.Compare(a.Version, b.Version) })
	unknownAt := make(map[int32]bool)
	for _, w := range all {
		if w.Outcome == Unknown {
			unknownAt[w.Version] = true
		}
	}
	for i := 1; i < len(byVersion); i++ {
		a, b := byVersion[i-1], byVersion[i]
		if a.Version == b.Version {
			res.fail(fmt.Sprintf("two writes conditional on fence version %d both succeeded", a.Version), a.String(), b.String())
			return false
		}
		if b.Token < a.Token {
			res.fail(fmt.Sprintf("the fence accepted token %s at version %d after token %s at version %d", hex(b.Token), b.Version, hex(a.Token), a.Version),
				a.String(), b.String())
			return false
		}
		for v := a.Version + 1; v < b.Version; v++ {
			if !unknownAt[v] {
				res.fail(fmt.Sprintf("fence version %d, between two successful writes, was made by no recorded write that may have succeeded", v),
					a.String(), b.String())
				return false
			}
		}
	}
	return true
}
