package check

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// EphemeralCreate is the create of an ephemeral node by the session that
// owns it.
type EphemeralCreate struct {
	Client       string
	Session      int64 // the owner's session id
	Path         string
	Call, Return int64
	Outcome      Outcome
}

// String formats c on one line.
func (c EphemeralCreate) String() string {
	return fmt.Sprintf("%s (session %s) create-ephemeral %s %s -> %v", c.Client, hex(c.Session), c.Path, span(c.Call, c.Return), c.Outcome)
}

// EphemeralDelete is an explicit delete of an ephemeral node, by any
// session. Record every one: an observation of the node missing is only
// excused by a delete.
type EphemeralDelete struct {
	Client       string
	Session      int64
	Path         string
	Call, Return int64
	Outcome      Outcome
}

// String formats d on one line.
func (d EphemeralDelete) String() string {
	return fmt.Sprintf("%s (session %s) delete %s %s -> %v", d.Client, hex(d.Session), d.Path, span(d.Call, d.Return), d.Outcome)
}

// EndKind is how a session ended.
type EndKind uint8

const (
	// SessionClosed: the session's close was acknowledged (Close returned
	// after the server answered closeSession).
	SessionClosed EndKind = iota
	// SessionExpired: the session's client saw it expire (StateLost, or a
	// request answered SessionExpired).
	SessionExpired
)

// SessionEnd is the end of a session that owned ephemeral nodes. Record
// one for every such session, at the latest when the run ends (close the
// survivors): its LastOK is what tells how long the session lived.
type SessionEnd struct {
	Client  string
	Session int64
	Kind    EndKind
	At      int64 // when the close returned, or the client saw the expiry
	// LastOK is the call time of the session's last request that got an
	// answer from the ensemble (success or a definite refusal): the
	// session was alive when the server processed it, which was after
	// that call.
	LastOK int64
}

// String formats e on one line.
func (e SessionEnd) String() string {
	return fmt.Sprintf("%s session %s %s at %s (last answered request called at %s)", e.Client, hex(e.Session), e.Kind.verb(), ts(e.At), ts(e.LastOK))
}

// verb says what happened to the session.
func (k EndKind) verb() string {
	if k == SessionExpired {
		return "expired"
	}
	return "was closed"
}

// Observation is whether a node existed, as another session saw it with
// sync then exists (or getChildren of its parent), both answered.
type Observation struct {
	Client       string
	Session      int64 // the observer's session
	Path         string
	Call, Return int64 // Call before the sync, Return after the read answered
	Exists       bool
	// Owner is the node's ephemeral owner (exists' Stat.EphemeralOwner)
	// when Exists and the read returned a Stat; 0 when not known.
	Owner int64
}

// String formats o on one line.
func (o Observation) String() string {
	what := "missing"
	if o.Exists {
		what = "exists"
		if o.Owner != 0 {
			what += ", owner " + hex(o.Owner)
		}
	}
	return fmt.Sprintf("%s (session %s) sync+exists %s %s -> %s", o.Client, hex(o.Session), o.Path, span(o.Call, o.Return), what)
}

// EphemeralHistory is the ephemeral workload's history.
type EphemeralHistory struct {
	Creates      []EphemeralCreate
	Deletes      []EphemeralDelete
	Ends         []SessionEnd
	Observations []Observation
}

// EphemeralOptions configure Ephemerals.
type EphemeralOptions struct {
	// SessionTimeout is the negotiated session timeout. An ephemeral of a
	// session whose expiry its client observed must be gone within
	// SessionTimeout + Bound: the client may notice first (its own timer
	// runs out while disconnected), and a leader change restarts the
	// ensemble's session timers.
	SessionTimeout time.Duration
	// Bound is the slack for the removal to become visible: an ephemeral
	// of a closed session must be gone Bound after the close returned
	// (closeSession deletes them in the same transaction, so Bound can be
	// small).
	Bound time.Duration
}

// Ephemerals checks that an ephemeral node is never gone while its owning
// session lives, and is gone soon after the session died.
//
// Alive: an observation that the node is missing, called after its create
// returned and returned before the owner's last answered request was
// called, is a violation — unless a delete of the path (of any session,
// not a definite failure, called before the observation returned) could
// have removed it.
//
// Gone: an observation that the node exists, called after the owner's
// deadline (close returned + Bound; expiry seen + SessionTimeout + Bound),
// is a violation if the observation names the dead session as the owner,
// or, when it names none, if no other session's create of the path could
// have made the node.
//
// It assumes the checked paths are created only by recorded ephemeral
// creates and removed only by recorded deletes and session ends.
func Ephemerals(h EphemeralHistory, o EphemeralOptions) Result {
	res := Result{Name: "ephemerals", OK: true, Checked: len(h.Creates) + len(h.Deletes) + len(h.Ends) + len(h.Observations)}
	alive := make(map[int64]int64) // session -> the latest time it is known to have been alive
	ends := make(map[int64]SessionEnd)
	for _, e := range h.Ends {
		alive[e.Session] = max(alive[e.Session], e.LastOK)
		if prev, ok := ends[e.Session]; !ok || e.At < prev.At {
			ends[e.Session] = e
		}
	}
	for _, c := range h.Creates {
		if c.Outcome != Unknown {
			alive[c.Session] = max(alive[c.Session], c.Call)
		}
	}
	for _, d := range h.Deletes {
		if d.Outcome != Unknown {
			alive[d.Session] = max(alive[d.Session], d.Call)
		}
	}
	obs := make(map[string][]Observation)
	for _, ob := range h.Observations {
		obs[ob.Path] = append(obs[ob.Path], ob)
	}
	for p := range obs {
		slices.SortStableFunc(obs[p], func(a, b Observation) int { return cmp.Compare(a.Call, b.Call) })
	}
	deletes := make(map[string][]EphemeralDelete)
	for _, d := range h.Deletes {
		deletes[d.Path] = append(deletes[d.Path], d)
	}
	creates := make(map[string][]EphemeralCreate)
	unknown, noEnd := 0, 0
	for _, c := range h.Creates {
		creates[c.Path] = append(creates[c.Path], c)
		if c.Outcome == Unknown {
			unknown++
		}
		if _, ok := ends[c.Session]; !ok {
			noEnd++
		}
	}

	// Never gone while the owner lives.
	for _, c := range h.Creates {
		if c.Outcome != OK {
			continue
		}
		until := alive[c.Session]
		for _, ob := range obs[c.Path] {
			if ob.Exists || ob.Call <= c.Return || ob.Return >= until {
				continue
			}
			if excused(ob, c, deletes[c.Path]) {
				continue
			}
			ev := []string{c.String(), ob.String()}
			if e, ok := ends[c.Session]; ok && e.LastOK == until {
				ev = append(ev, e.String())
			} else {
				ev = append(ev, fmt.Sprintf("session %s answered a request called at %s", hex(c.Session), ts(until)))
			}
			res.fail(fmt.Sprintf("ephemeral %s of live session %s was missing at %s (no delete could have removed it)",
				c.Path, hex(c.Session), span(ob.Call, ob.Return)), ev...)
			return res
		}
	}

	// Gone once the owner died.
	var sessions []int64
	for s := range ends {
		sessions = append(sessions, s)
	}
	slices.Sort(sessions)
	var paths []string
	for p := range obs {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, s := range sessions {
		e := ends[s]
		deadline := e.At + int64(o.Bound)
		if e.Kind == SessionExpired {
			deadline += int64(o.SessionTimeout)
		}
		for _, p := range paths {
			cs := creates[p]
			var own *EphemeralCreate
			for i := range cs {
				if cs[i].Session == s && cs[i].Outcome != Failed {
					own = &cs[i]
					break
				}
			}
			for _, ob := range obs[p] {
				if !ob.Exists || ob.Call <= deadline {
					continue
				}
				switch {
				case ob.Owner != 0 && ob.Owner != s:
					continue
				case ob.Owner == 0 && (own == nil || otherCreate(ob, s, cs)):
					continue
				}
				ev := []string{e.String(), ob.String()}
				if own != nil {
					ev = append([]string{own.String()}, ev...)
				}
				res.fail(fmt.Sprintf("ephemeral %s of session %s still existed at %s, after the session %s at %s (deadline %s)",
					p, hex(s), span(ob.Call, ob.Return), e.Kind.verb(), ts(e.At), ts(deadline)), ev...)
				return res
			}
		}
	}
	res.note("%d ephemeral creates (%d of unknown outcome), %d observations, %d session ends", len(h.Creates), unknown, len(h.Observations), len(h.Ends))
	if noEnd > 0 {
		res.note("%d creates by sessions with no recorded end: alive only as long as their own answered requests show, never checked for removal", noEnd)
	}
	return res
}

// excused reports whether a delete could have removed c's node before ob
// read it: not a definite failure, called before ob returned, and not one
// that ended before c was called.
func excused(ob Observation, c EphemeralCreate, deletes []EphemeralDelete) bool {
	for _, d := range deletes {
		if d.Outcome == Failed || d.Call >= ob.Return {
			continue
		}
		if d.Outcome == OK && d.Return < c.Call {
			continue
		}
		return true
	}
	return false
}

// otherCreate reports whether a create of ob's path by a session other
// than s, not a definite failure and called before ob returned, could
// have made the node ob saw.
func otherCreate(ob Observation, s int64, cs []EphemeralCreate) bool {
	for _, c := range cs {
		if c.Session != s && c.Outcome != Failed && c.Call < ob.Return {
			return true
		}
	}
	return false
}
