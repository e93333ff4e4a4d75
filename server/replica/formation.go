package replica

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/statemachine"
)

// Formations (ensemble.go's identity, raftnode's formation.go). A member
// that forms a new ensemble starts with a pending formation; the
// ensemble's first leader chooses one at random and logs it
// (statemachine.EntryFormation); every member records the first one in the log, and
// from then on the peer handshake lets in members of this formation only
// (and pending ones, which have not applied it yet). A member whose
// formation is still pending while the others' is chosen — it missed the
// entry, or received the state as a snapshot — refuses their connections
// and learns the formation from a majority of the voters instead.

// formation returns this member's formation.
func (r *Replica) Formation() uint64 {
	r.view.mu.Lock()
	defer r.view.mu.Unlock()
	return r.view.formation
}

// setFormation records formation f if this member's is pending: in the
// data directory first, then in the handshake. how says where it came
// from, for the log.
func (r *Replica) setFormation(f uint64, how string) {
	r.formationMu.Lock()
	defer r.formationMu.Unlock()
	v := &r.view
	v.mu.Lock()
	id := identity{ensemble: v.ensemble, formation: f}
	pending := v.formation == raftnode.FormationPending
	v.mu.Unlock()
	if !pending || f < 2 {
		return
	}
	if err := writeIdentity(filepath.Join(r.dir, "zkgo"), id); err != nil {
		r.log.Error("could not record the ensemble's formation; it stays pending here", "err", err)
		return
	}
	v.mu.Lock()
	v.formation = f
	v.mu.Unlock()
	if t, ok := r.tr.(*raftnode.TCPTransport); ok {
		t.SetFormation(f)
	}
	r.log.Info("recorded the ensemble's formation", "formation", raftnode.FormationString(f), "how", how)
}

// formationChosen is the state machine's onFormation (apply goroutine).
// Only the first choice in the log counts: later ones (two leaders that
// both chose) find the formation recorded and change nothing.
//
// The first choice also gives the Membership of a new ensemble its
// version, as ZooKeeper's /zookeeper/config says version=100000000 (its
// first leader's first zxid) from the start: the entry's index, which is
// its zxid. Every member applies the same entry at the same index, so
// they agree; a snapshot carries the text (see setupTree).
func (r *Replica) FormationChosen(f, index uint64) {
	r.setFormation(f, "logged by the ensemble's first leader")
	if m := r.members.Load(); m != nil && m.Version == 0 && !m.fromLog {
		v := *m
		v.Version = int64(index)
		r.members.Store(&v)
		if r.h.ConfigVersioned != nil {
			r.h.ConfigVersioned(&v)
		}
	}
}

// chooseFormation runs on a member while its formation is pending. On the
// leader it proposes a random formation (again after two seconds, if it
// was not applied: a proposal may be lost in a change of leader) — but
// only while no voter answers that it holds one: a member whose formation
// is pending in a formed ensemble (it missed the entry: it was down, or
// the state came to it as a snapshot, which does not carry the formation)
// must not choose another. On every member it asks the voters every two
// seconds, and takes a formation a majority of them hold
// (learnFormation).
func (r *Replica) chooseFormation() {
	defer r.wg.Done()
	t := time.NewTicker(min(max(r.opts.TickTime/2, 10*time.Millisecond), 500*time.Millisecond))
	defer t.Stop()
	var lastLearn, lastPropose time.Time
	for r.Formation() == raftnode.FormationPending {
		now := false
		select {
		case <-t.C:
		case <-r.learnFormationNow:
			now = true
		case <-r.quit:
			return
		}
		leader := r.IsLeader()
		due := now || time.Since(lastLearn) >= 2*time.Second ||
			(leader && time.Since(lastPropose) >= 2*time.Second)
		if !due {
			continue
		}
		lastLearn = time.Now()
		if chosen, _, _ := r.learnFormation(); chosen || !leader || time.Since(lastPropose) < 2*time.Second {
			continue
		}
		f, err := newFormation()
		if err != nil {
			r.log.Error("choosing the ensemble's formation", "err", err)
			continue
		}
		lastPropose = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := r.prop.proposeNow(ctx, statemachine.FormationEntry(f)); err != nil {
			r.log.Info("proposing the ensemble's formation", "err", err)
		}
		cancel()
	}
}

// snapshotRestored is the state machine's onRestore (apply goroutine). A
// member still pending takes the formation the snapshot carries (its
// sender is a member of this ensemble: only those are let in); a snapshot
// without one makes it ask the voters at once rather than at the next
// round.
func (r *Replica) SnapshotRestored(f uint64) {
	if r.Formation() != raftnode.FormationPending {
		if own := r.Formation(); f >= 2 && own >= 2 && f != own {
			r.log.Warn("a snapshot carries another formation than this member's; keeping its own",
				"own", raftnode.FormationString(own), "snapshot", raftnode.FormationString(f))
		}
		return
	}
	if f >= 2 {
		r.setFormation(f, "carried by a snapshot from the ensemble")
		return
	}
	select {
	case r.learnFormationNow <- struct{}{}:
	default:
	}
}

// learnFormation asks the other members for their formation. It takes
// one that a majority of the voters hold (this member, pending, counts
// as a voter without one) and reports chosen if any voter holds a chosen
// formation, with the most common one and how many hold it. A member left
// over from an earlier formation of the ensemble is never a majority: the
// ensemble could only form anew with a majority of fresh members.
//
// A voter rebuilt from an empty disk asks to join with the formation it
// took from the ensemble's answers; it counts as holding it when every
// other voter that answers holds or joins that same formation (none
// pending, none another). Without that, a member that stopped before it
// received the formation entry, and another rebuilt meanwhile, left the
// one holder no majority: it could not lead without the pending member,
// the pending member refused it, and the rebuilt one waited for a leader
// to admit it (TestEnsembleFormationAfterCrashAndRebuild). The only
// formation a rebuilt member can have taken is one a member holds, so
// this never invents one; it takes a leftover's only when the leftover is
// the only member the others can find, whose log then is the one that
// holds what any of them acknowledged.
func (r *Replica) learnFormation() (chosen bool, f uint64, holding int) {
	r.view.mu.Lock()
	ensemble := r.view.ensemble
	r.view.mu.Unlock()
	voters := 0
	count := map[uint64]int{}
	joining := map[uint64]int{}
	others := false // a voter that answered pending or with another ensemble
	peers := r.CurrentPeers()
	answers, _ := r.probeAll(peers, probeRequest{Op: "status"})
	for i, p := range peers {
		if p.Observer {
			continue
		}
		voters++
		a := answers[i]
		switch {
		case p.ID == r.opts.ServerID || a == nil || a.Error != "":
		case a.Ensemble != ensemble || a.Formation < 2:
			others = true
		case a.Joining:
			joining[a.Formation]++
		default:
			count[a.Formation]++
			if count[a.Formation] > holding {
				f, holding = a.Formation, count[a.Formation]
			}
		}
	}
	switch {
	case holding > voters/2:
		r.setFormation(f, "held by a majority of the voters")
	case holding > 0 && len(count) == 1 && !others && len(joining) == 1 && holding+joining[f] > voters/2:
		r.setFormation(f, "held by the voters that answer, one of them rebuilt and joining with it")
	}
	return holding > 0, f, holding
}

// newFormation returns a random formation (never 0 or pending).
func newFormation() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		if f := binary.BigEndian.Uint64(b[:]); f >= 2 {
			return f, nil
		}
	}
}

// formationRefused is the peer transport's FormationRefused: a member of
// formation f was refused. If this member's formation is pending, it asks
// the other members (one such check at a time) and takes the formation a
// majority of the voters hold (learnFormation).
//
// First it looks in its own log: a member stopped after it had stored the
// entry that chose the formation but before it learnt that the entry was
// committed holds it unapplied, and refuses the members that applied it —
// with another member down or rebuilt, no majority is left to learn from,
// and the ensemble cannot elect a leader (found by
// TestRollingRestartUnderLoad). A formation that is both in this member's
// log and held by a member of the ensemble is the ensemble's: formations
// are random, and the leader that logged it is the one the holder
// followed.
func (r *Replica) formationRefused(from, f uint64) {
	if f < 2 || r.Formation() != raftnode.FormationPending || !r.adopting.CompareAndSwap(false, true) {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.adopting.Store(false)
		if r.logHoldsFormation(f) {
			r.setFormation(f, fmt.Sprintf("in this member's log, held by member %d", MemberID(from)))
			return
		}
		if _, _, holding := r.learnFormation(); r.Formation() == raftnode.FormationPending && r.view.refusalLog.Allow() {
			r.log.Warn("refused a member of another formation of this ensemble; the voters that hold it are no majority",
				"from", MemberID(from), "formation", raftnode.FormationString(f), "holding", holding)
		}
	}()
}

// logHoldsFormation reports whether this member's log (in memory: the
// entries since its last snapshot) holds an entry choosing formation f,
// applied or not.
func (r *Replica) logHoldsFormation(f uint64) bool {
	st := r.Storage()
	if st == nil {
		return false
	}
	ms := st.RaftStorage()
	first, err := ms.FirstIndex()
	if err != nil {
		return false
	}
	last, err := ms.LastIndex()
	if err != nil {
		return false
	}
	const chunk = 4 << 20 // bytes of entries looked at per call
	for i := first; i <= last; {
		ents, err := ms.Entries(i, last+1, chunk)
		if err != nil || len(ents) == 0 {
			return false
		}
		for _, ent := range ents {
			if ent.Type != raftpb.EntryNormal || len(ent.Data) == 0 {
				continue
			}
			if e, err := statemachine.DecodeEntry(ent.Data); err == nil && e.Kind == statemachine.EntryFormation && e.Formation == f {
				return true
			}
		}
		i = ents[len(ents)-1].Index + 1
	}
	return false
}

// verifyPending is the peer transport's VerifyPending: a dialer whose
// formation is pending claims raft id from and runs with instance token
// inst. This member asks the member it knows under that server id, at the
// address its configuration gives, for its token (a probe); only the
// member itself has it, so a pending member of another ensemble that
// lists this one by mistake is refused, whatever addresses either side
// uses. The answer is kept for a while: the first attempt of a dialer is
// refused while the probe runs, its next one (the transport retries
// within a second) finds the answer.
//
// A pending dialer must also be in this member's raft configuration: the
// members still pending in a formation are those it was formed with (or
// admitted while it was forming). That keeps out a configured member that
// is forming another ensemble — the others of a standalone's data
// converted here (convert.go) that formed a pair of their own first.
func (r *Replica) verifyPending(from, inst uint64) error {
	p, ok := r.Peer(MemberID(from))
	if !ok {
		return fmt.Errorf("server.%d is not a member of this ensemble", MemberID(from))
	}
	if node := r.Raft(); node != nil {
		if st := node.Status(); !slices.Contains(st.Voters, from) && !slices.Contains(st.Learners, from) {
			return fmt.Errorf("server.%d's raft id %x, whose formation is pending, is not in this member's configuration: "+
				"a member of another ensemble that is forming (with the same server ids)?", p.ID, from)
		}
	}
	key := pendingKey{from, inst}
	r.pendingMu.Lock()
	defer r.pendingMu.Unlock()
	if r.pendingChecks == nil {
		r.pendingChecks = map[pendingKey]*pendingCheck{}
	}
	c := r.pendingChecks[key]
	if c != nil && !c.running && time.Since(c.at) > pendingCheckTTL(c.err) {
		delete(r.pendingChecks, key)
		c = nil
	}
	if c == nil {
		if len(r.pendingChecks) >= 64 {
			for k, old := range r.pendingChecks {
				if !old.running {
					delete(r.pendingChecks, k)
				}
			}
		}
		c = &pendingCheck{running: true, at: time.Now()}
		r.pendingChecks[key] = c
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			var err error
			a, perr := r.probe(p, probeRequest{Op: "status"})
			switch {
			case perr != nil:
				err = fmt.Errorf("could not ask server.%d at %s for its instance: %w", p.ID, p.Addr, perr)
			case a.Instance != inst:
				err = fmt.Errorf("the member at server.%d's address (%s) is another process than the dialer: a pending member of another ensemble with the same server ids?", p.ID, p.Addr)
			}
			r.pendingMu.Lock()
			c.running, c.err, c.at = false, err, time.Now()
			r.pendingMu.Unlock()
			if err != nil && r.view.refusalLog.Allow() {
				r.log.Warn("refused a forming member that claims a member's id", "server", p.ID, "err", err)
			}
		}()
	}
	switch {
	case c.running:
		return fmt.Errorf("checking that the dialer is server.%d (pending formation): try again", p.ID)
	case c.err != nil:
		return c.err
	}
	return nil
}

// pendingKey and pendingCheck are verifyPending's cache.
type pendingKey struct{ id, instance uint64 }

type pendingCheck struct {
	running bool
	at      time.Time // when the check started, or finished
	err     error
}

// pendingCheckTTL is how long a check's answer is kept: a success for a
// minute, a failure for two seconds (the member may have restarted).
func pendingCheckTTL(err error) time.Duration {
	if err != nil {
		return 2 * time.Second
	}
	return time.Minute
}
