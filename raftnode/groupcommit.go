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
// Save with entries), capped by Config.CommitDelay: waiting longer than an
// fsync never pays, since the second would have waited at most that long
// behind the first.
type groupCommit struct {
	// Written under rnMu by the goroutines that step proposals into
	// raft; read by the run goroutine (atomically while it holds).
	props      atomic.Int64 // entries proposed here, or forwarded here while leading
	firstAfter atomic.Int64 // monotonic ns of the first proposal after the last Ready was taken (0: none yet)

	// Counters for Status (run goroutine writes).
	holds  atomic.Uint64 // lone entries held
	joined atomic.Uint64 // of which a second proposal joined before the window ended

	// Run goroutine only.
	max      time.Duration // Config.CommitDelay (<0: group commit off)
	timer    *time.Timer
	taken    int64         // props when the last Ready was taken
	takenAt  int64         // monotonic ns of that
	observe  bool          // the last Ready took one proposal, not held: score it at the next take
	window   time.Duration // the window when that Ready was taken
	score    float64       // moving average of "a second proposal came within the window"
	syncMean time.Duration // moving average of Save with entries
	syncEnd  int64         // monotonic ns when the last Save with entries ended
}

// holdScore is the score above which lone entries are held.
const holdScore = 0.5

// scoreWeight is the weight of one observation in the moving averages.
const scoreWeight = 1.0 / 8

// monoStart anchors monotonic timestamps (time.Since is monotonic).
var monoStart = time.Now()

func monoNow() int64 { return int64(time.Since(monoStart)) }

// proposed counts k entries that entered raft under rnMu.
func (g *groupCommit) proposed(k int) {
	g.props.Add(int64(k))
	if g.firstAfter.Load() == 0 {
		g.firstAfter.Store(monoNow())
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
	if g.score < holdScore || !g.loneIdle() || Role(n.role.Load()) != RoleLeader {
		return false
	}
	w := g.windowNow()
	if w <= 0 || n.applyPending() {
		return false
	}
	if g.timer == nil {
		g.timer = time.NewTimer(w)
	} else {
		g.timer.Reset(w)
	}
	defer g.timer.Stop()
	g.holds.Add(1)
	g.observe = false
	for g.props.Load()-g.taken < 2 {
		select {
		case <-n.wake:
			// Something else reached raft: a commit to apply ends the hold.
			if n.applyPending() {
				g.learn(g.props.Load()-g.taken >= 2)
				return true
			}
		case <-g.timer.C:
			g.learn(false)
			return true
		case <-n.stopc:
			return true
		case <-n.failc:
			return true
		}
	}
	g.joined.Add(1)
	g.learn(true)
	return true
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
	p := g.props.Load()
	g.observe = !held && g.max >= 0 && g.loneIdle()
	g.window = g.windowNow()
	g.taken, g.takenAt = p, now
	g.firstAfter.Store(0)
}
