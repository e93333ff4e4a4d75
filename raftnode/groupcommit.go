package raftnode

import (
	"sync/atomic"
	"time"
)

// Group commit on the leader: a lone new entry may wait a little for a
// second one, so that the two share one fsync.
//
// Why: writes that come in pairs — a lock's releaser creates its next node
// about when the next holder deletes the node it held — otherwise pay two
// fsyncs in series: the first starts its fsync at once, the second arrives
// during it, waits for it to end, then starts its own. Holding the first
// until the second arrives (or until a short window ends) costs the first
// at most the window and saves the second the rest of the first's fsync.
//
// When: the run goroutine decides before it takes a Ready. It holds only
// if this member leads, exactly one proposal entered raft since the last
// Ready and it entered after the last fsync ended (one that arrived
// during an fsync has waited already), nothing committed waits to be
// applied (a hold never delays an answer that is ready), and the recent
// past says a second proposal follows such a lone one within the window:
// score, a moving average over lone proposals that came after the last
// fsync of "another proposal entered within the window" —
// observed both on those that were held (did the second come before the
// window ended) and on those that were not (did one enter within the
// window after the Ready was taken). A lone sequential writer never sees
// another proposal within the window (its next write waits for the
// answer, which waits for the fsync, and the window is at most the fsync
// time), so its score stays 0 and it is never held. PostgreSQL's
// commit_delay/commit_siblings is the same idea with a fixed rule in
// place of the learned one.
//
// The window is the mean fsync time of the WAL (a moving average of
// Save with entries), capped by Config.CommitDelay: for the second entry's
// latency, waiting longer than an fsync never pays, since it would have
// waited at most that long behind the first.
//
// Late partners. A slower client (Curator's lock, in a JVM) sends its
// second entry later than an fsync after the first: the releaser's create
// is then fsynced alone, and the next holder's delete a moment later, two
// fsyncs per handoff where one would do (CPU the clients need on a small
// machine). So a lone entry is also held for up to lateFactor mean fsyncs
// (capped by Config.CommitDelay) when all of these hold: the short window's
// score does not hold it; its source (Config.ProposalSource: the client
// session) is known; another client was told of a change within that long
// window and has not written since, while this entry's own client was not
// (Config.Notifications: a client just told of a change is the one about
// to write, as a lock's next holder is; the entry of a client that was
// told, such as that holder's delete, is what others wait for, and is
// never held long); and lateScore, learned like score but only on such
// lone entries, says that an entry from another source usually follows
// within the window. Only another source counts: one client's own next
// write waits for the reply to this one, so a lone writer's entries are
// never held however its writes are spaced. Open-loop writes from many
// clients without notifications are held as before, never longer than an
// fsync.
type groupCommit struct {
	// Written under rnMu by the goroutines that step proposals into
	// raft; read by the run goroutine (atomically while it holds).
	props      atomic.Int64 // entries proposed here, or forwarded here while leading
	firstAfter atomic.Int64 // monotonic ns of the first proposal after the last Ready was taken (0: none yet)
	// otherAfter: a proposal from a source other than the first's came
	// after the last Ready was taken (read by maybeHold).
	otherAfter atomic.Bool
	firstSrc   atomic.Uint64 // source of the first proposal after the last Ready
	firstKnown atomic.Bool   // firstSrc is known
	// firstNotified: firstSrc's client had been told of a change (within
	// Config.CommitDelay) and had not written since when it proposed.
	firstNotified atomic.Bool

	// Under rnMu (proposing goroutines and tookReady).
	loneSrc   uint64 // source of the lone entry an open late observation scores
	loneKnown bool   // a late observation is open (lateObserve)
	partnerAt int64  // monotonic ns of the first proposal since it opened from another source than loneSrc (0: none)

	// Counters for Status (run goroutine writes).
	holds     atomic.Uint64 // lone entries held
	joined    atomic.Uint64 // of which a second proposal joined before the window ended
	lateHolds atomic.Uint64 // of the holds, those for a late partner
	// of the holds, those ended by the precise clock (holdclock.go)
	preciseHolds atomic.Uint64

	// Run goroutine only.
	max      time.Duration // Config.CommitDelay (<0: group commit off)
	timer    *time.Timer   // ends holds while they are joined
	clock    *holdClock    // ends holds on time once they often run out (started then; stopped when run ends)
	gen      uint64        // of the current (or last) hold
	unjoined float64       // moving average of "a hold ran out unjoined"
	taken    int64         // props when the last Ready was taken
	takenAt  int64         // monotonic ns of that
	observe  bool          // the last Ready took one proposal, not held: score it at the next take
	window   time.Duration // the window when that Ready was taken
	score    float64       // moving average of "a second proposal came within the window"
	syncMean time.Duration // moving average of Save with entries
	syncEnd  int64         // monotonic ns when the last Save with entries ended
	// Late partners (see groupCommit): notes is Config.Notifications,
	// source Config.ProposalSource (set before the node runs).
	notes       Notifications
	source      func([]byte) (uint64, bool)
	lateScore   float64 // moving average of "another source's proposal came within the late window"
	lateObserve bool    // a notified lone proposal, not held, is being scored (loneSrc, lateTakenAt, lateWindow)
	lateWindow  time.Duration
	lateTakenAt int64 // monotonic ns when the Ready took it
}

// lateFactor: the late window is this many mean fsyncs.
const lateFactor = 3

// holdScore is the score above which lone entries are held.
const holdScore = 0.5

// scoreWeight is the weight of one observation in the moving averages.
const scoreWeight = 1.0 / 8

// monoStart anchors monotonic timestamps (time.Since is monotonic).
var monoStart = time.Now()

func monoNow() int64 { return int64(time.Since(monoStart)) }

// proposed counts k entries that entered raft under rnMu; data(i) is the
// i-th one's data.
func (g *groupCommit) proposed(k int, data func(i int) []byte) {
	g.props.Add(int64(k))
	now := int64(0)
	for i := 0; i < k; i++ {
		var s uint64
		known := false
		if g.source != nil {
			s, known = g.source(data(i))
		}
		first := g.firstAfter.Load() == 0
		if first {
			now = monoNow()
			g.firstAfter.Store(now)
			g.firstSrc.Store(s)
			g.firstKnown.Store(known)
			g.firstNotified.Store(false)
		} else if known && g.firstKnown.Load() && s != g.firstSrc.Load() {
			g.otherAfter.Store(true)
		}
		if known && g.notes != nil {
			if first && g.max > 0 {
				_, self := g.notes.Pending(s, g.max)
				g.firstNotified.Store(self)
			}
			g.notes.Proposed(s)
		}
		if known && g.loneKnown && s != g.loneSrc && g.partnerAt == 0 {
			if now == 0 {
				now = monoNow()
			}
			g.partnerAt = now
		}
	}
}

// lateWindowNow is how long a lone entry may be held for a late partner
// (0: not at all).
func (g *groupCommit) lateWindowNow() time.Duration {
	if g.max < 0 || g.notes == nil || g.source == nil {
		return 0
	}
	return min(g.max, lateFactor*g.syncMean)
}

// awaited reports whether a client other than the first proposal's
// (src) was told of a change within w and has not written since, while
// src's client had not been (or had written since) when it proposed.
func (g *groupCommit) awaited(src uint64, w time.Duration) bool {
	if g.notes == nil || w <= 0 || g.firstNotified.Load() {
		return false
	}
	other, _ := g.notes.Pending(src, w)
	return other
}

func (g *groupCommit) learnLate(ok bool) {
	if ok {
		g.lateScore += (1 - g.lateScore) * scoreWeight
	} else {
		g.lateScore -= g.lateScore * scoreWeight
	}
}

// windowNow is how long a lone entry may be held now (0: not at all).
func (g *groupCommit) windowNow() time.Duration {
	if g.max < 0 {
		return 0
	}
	return min(g.max, g.syncMean)
}

// synced feeds the duration of a Save that wrote entries, which has just
// ended.
func (g *groupCommit) synced(d time.Duration) {
	g.syncEnd = monoNow()
	if g.syncMean == 0 {
		g.syncMean = d
		return
	}
	g.syncMean += time.Duration(float64(d-g.syncMean) * scoreWeight)
}

func (g *groupCommit) learn(ok bool) {
	if ok {
		g.score += (1 - g.score) * scoreWeight
	} else {
		g.score -= g.score * scoreWeight
	}
}

// loneIdle reports whether exactly one proposal entered raft since the
// last Ready was taken, and it did so after the last fsync ended.
func (g *groupCommit) loneIdle() bool {
	return g.props.Load()-g.taken == 1 && g.firstAfter.Load() >= g.syncEnd
}

// maybeHold is called by the run goroutine before it takes a Ready: it
// holds a lone proposal back while that pays (see groupCommit), and
// reports whether it did. Stop and a failure end a hold; the run loop
// then sees them.
func (n *Node) maybeHold() bool {
	g := &n.gc
	if !g.loneIdle() || Role(n.role.Load()) != RoleLeader {
		return false
	}
	w, late := g.windowNow(), false
	if g.score < holdScore {
		// Not for a partner within an fsync: perhaps for a late one.
		w, late = g.lateWindowNow(), true
		if g.lateScore < holdScore || !g.firstKnown.Load() || !g.awaited(g.firstSrc.Load(), w) {
			return false
		}
	}
	if w <= 0 || n.applyPending() {
		return false
	}
	// The hold's end: a Go timer while holds are joined (it is cheap,
	// and a busy process fires it on time); the precise clock once
	// holds often run out, which is when the process is idle enough for
	// a Go timer to fire up to ~1 ms late (holdclock.go).
	var timerC <-chan time.Time
	var firedC <-chan uint64
	g.gen++
	if g.unjoined >= preciseAbove {
		if g.clock == nil {
			g.clock = newHoldClock()
		}
		g.clock.arm(time.Now().Add(w), g.gen)
		firedC = g.clock.fired
		g.preciseHolds.Add(1)
	} else {
		if g.timer == nil {
			g.timer = time.NewTimer(w)
		} else {
			g.timer.Reset(w)
		}
		defer g.timer.Stop()
		timerC = g.timer.C
	}
	g.holds.Add(1)
	g.observe = false
	if late {
		g.lateHolds.Add(1)
	}
	for g.props.Load()-g.taken < 2 {
		select {
		case <-n.wake:
			// Something else reached raft: a commit to apply ends the hold.
			if n.applyPending() {
				g.ended(late, g.props.Load()-g.taken >= 2)
				return true
			}
		case <-timerC:
			g.ended(late, false)
			return true
		case gen := <-firedC:
			if gen != g.gen {
				continue // an earlier hold's deadline
			}
			g.ended(late, false)
			return true
		case <-n.stopc:
			return true
		case <-n.failc:
			return true
		}
	}
	g.joined.Add(1)
	g.ended(late, true)
	return true
}

// preciseAbove: holds end by the precise clock while at least this share
// of recent holds ran out unjoined (g.unjoined).
const preciseAbove = 0.1

// ended scores a hold that ended, joined by a second proposal or not.
func (g *groupCommit) ended(late, joined bool) {
	if joined {
		g.unjoined -= g.unjoined * scoreWeight
	} else {
		g.unjoined += (1 - g.unjoined) * scoreWeight
	}
	g.learnHold(late, joined)
}

// learnHold scores a hold that ended, joined by a second proposal or not:
// a late hold counts only another source's proposal.
func (g *groupCommit) learnHold(late, joined bool) {
	if late {
		g.learnLate(g.otherAfter.Load())
		return
	}
	g.learn(joined)
}

// applyPending reports whether raft has committed entries it has not
// handed out yet.
func (n *Node) applyPending() bool {
	n.rnMu.Lock()
	defer n.rnMu.Unlock()
	if n.rnStopped {
		return true
	}
	st := n.rn.BasicStatus()
	return st.Commit > st.Applied
}

// tookReady records, under rnMu, that the run goroutine took a Ready: it
// scores the previous lone entry that was not held, and starts watching
// this one.
func (g *groupCommit) tookReady(held bool) {
	now := monoNow()
	if g.observe {
		first := g.firstAfter.Load()
		g.learn(first != 0 && time.Duration(first-g.takenAt) <= g.window)
	}
	// A late observation stays open across Readies (the one that commits
	// the lone entry comes an fsync after it, before the late window
	// ends) until another source's proposal came or the window ended.
	if g.lateObserve {
		switch {
		case g.partnerAt != 0:
			g.learnLate(time.Duration(g.partnerAt-g.lateTakenAt) <= g.lateWindow)
			g.lateObserve = false
		case time.Duration(now-g.lateTakenAt) > g.lateWindow:
			g.learnLate(false)
			g.lateObserve = false
		}
	}
	p := g.props.Load()
	lone := g.loneIdle()
	g.observe = !held && g.max >= 0 && lone
	g.window = g.windowNow()
	if !g.lateObserve && !held && lone && g.firstKnown.Load() {
		if w := g.lateWindowNow(); g.awaited(g.firstSrc.Load(), w) {
			g.lateObserve, g.lateWindow, g.lateTakenAt = true, w, now
			g.loneSrc, g.partnerAt = g.firstSrc.Load(), 0
		}
	}
	g.loneKnown = g.lateObserve
	g.taken, g.takenAt = p, now
	g.firstAfter.Store(0)
	g.otherAfter.Store(false)
	g.firstKnown.Store(false)
}
