package replica

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/raftnode"
)

// Raft identities. A member's raft id is its server id (myid, 0..254) in
// the low byte and an incarnation above it: 0 for the members that formed
// the ensemble, a random non-zero value for a member that rejoins with an
// empty data directory. A fresh data directory must never take over the
// raft id its predecessor used: raft trusts a voter to keep the log and
// the votes it acknowledged, and an emptied one would panic at the
// leader's first heartbeat ("tocommit out of range") or, worse, vote for a
// leader that lacks committed writes. Under a new raft id it is a new
// member: the leader swaps the old identity out and the new one in as a
// learner, and promotes it once it has caught up.
//
// Server id 0 (ZooKeeper allows it) would make incarnation 0's raft id 0,
// which raft reserves for "none": its first incarnation is written as
// zeroBase instead, a value random incarnations (48 bits) never take.
func raftID(myid int64, incarnation uint64) uint64 {
	if incarnation == 0 && myid == 0 {
		incarnation = zeroBase
	}
	return incarnation<<8 | uint64(myid)&0xff
}

// zeroBase is the incarnation part of server 0's first raft id.
const zeroBase = 1 << 48

// MemberID returns the server id (myid) of a raft id.
func MemberID(id uint64) int64 { return int64(id & 0xff) }

// newIncarnation returns a random non-zero incarnation of 48 bits.
func newIncarnation() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[2:]); err != nil {
			return 0, err
		}
		if inc := binary.BigEndian.Uint64(b[:]); inc != 0 {
			return inc, nil
		}
	}
}

// errNotAdmitted: a member asked to rejoin and this member's
// configuration says it may not.
var errNotAdmitted = errors.New("not admitted")

// memberView is what the probe handler reads about this member; it is
// filled in while the member starts.
type memberView struct {
	mu sync.Mutex // guards ensemble, formation, joining, waiting, proposed, hasState, hardState, and the Replica's st and node
	// ensemble and formation are the member's identity (ensemble.go).
	ensemble, formation uint64
	// hasState and hardState describe the storage as it was opened
	// (raft's MemoryStorage may not be read beside the node).
	hasState  bool
	hardState raftpb.HardState
	joining   bool
	// waiting says what the member waits for before it serves
	// (quorum.go's waitingFor).
	waiting string
	// refusalLog limits the log lines about refused joiners, quorumLog
	// those about the configured quorum.
	refusalLog, quorumLog logLimiter
	otherEnsembleLog      logLimiter
	// joiners are servers that asked to join but are not members (yet),
	// by server id: a reconfig that adds one uses its raft id.
	joiners map[int64]joiner
	// proposed remembers when a swap was proposed for a joining raft id,
	// so that a joiner's repeated requests do not flood the log.
	proposed map[uint64]time.Time
}

// syncedIDs are, on the leader whose status s is, the members in sync
// with it: itself, and those that answered within an election timeout
// and whose log is within PromoteLag entries of the commit index.
func syncedIDs(s raftnode.Status) []uint64 {
	out := []uint64{s.ID}
	for _, id := range s.Heard {
		if m, ok := s.Match[id]; ok && m+PromoteLag >= s.Commit {
			out = append(out, id)
		}
	}
	return out
}

// syncedMembers returns the members in sync with the leader, asking the
// leader when this member is not it.
func (r *Replica) syncedMembers() ([]uint64, error) {
	node := r.Raft()
	if node == nil {
		return nil, errors.New("not running")
	}
	s := node.Status()
	if s.Role == raftnode.RoleLeader {
		return syncedIDs(s), nil
	}
	lead, ok := r.Peer(MemberID(s.Leader))
	if s.Leader == 0 || !ok {
		return nil, errors.New("no leader")
	}
	a, err := r.probe(lead, probeRequest{Op: "status"})
	if err != nil {
		return nil, fmt.Errorf("asking the leader, server.%d: %w", lead.ID, err)
	}
	if a.ID != s.Leader || len(a.Synced) == 0 {
		return nil, fmt.Errorf("server.%d is not the leader (any more)", lead.ID)
	}
	return a.Synced, nil
}

// admit handles a joining member's request: it proposes that the raft ids
// of the same server id leave the configuration and the new one join it
// as a learner (promoteLearners makes it a voter once it caught up).
//
// Who may join is decided by server id alone, never by the address the
// joiner dials from or names (members behind a proxy or NAT, or that list
// themselves as 0.0.0.0, know each other by different addresses). What
// keeps a second machine configured with a live member's id from taking
// its place is that only the leader admits, and only once it has not
// heard from that server's current incarnation for an election timeout:
// a member whose disk was replaced is down meanwhile.
func (r *Replica) admit(q probeRequest) error {
	_, ok := r.Peer(q.MyID)
	switch {
	case !ok && MemberID(q.ID) == q.MyID:
		// A server to add (a new one, under the identity it chose; or
		// one a reconfig removed, asking to come back under its own),
		// remembered for a reconfig that adds it.
		r.view.mu.Lock()
		if r.view.joiners == nil {
			r.view.joiners = map[int64]joiner{}
		}
		// Bounded: anyone may ask. The oldest askers are forgotten
		// first (a reconfig adds a joiner only if it asked recently).
		if _, known := r.view.joiners[q.MyID]; !known && len(r.view.joiners) >= maxJoiners {
			forgetOldJoiners(r.view.joiners)
		}
		r.view.joiners[q.MyID] = joiner{id: q.ID, addr: q.Addr, seen: time.Now()}
		r.view.mu.Unlock()
		return fmt.Errorf("%w: server.%d is not a member of this ensemble: waiting for a reconfig to add it", errNotAdmitted, q.MyID)
	case !ok:
		return fmt.Errorf("%w: server.%d is not a member of this ensemble", errNotAdmitted, q.MyID)
	case MemberID(q.ID) != q.MyID:
		return fmt.Errorf("%w: raft id %x is not an identity of server.%d", errNotAdmitted, q.ID, q.MyID)
	}
	// The asking identity may be a new one (an empty data directory) or
	// the server's own from before a reconfig removed it (it kept its
	// log, as a voter may): either takes the place of the identity the
	// configuration holds, once that one is silent — a wiped member never
	// asks under an identity it had, it always makes a new one.
	v := &r.view
	v.mu.Lock()
	node := r.node
	if v.proposed == nil {
		v.proposed = map[uint64]time.Time{}
	}
	last, recent := v.proposed[q.ID]
	recent = recent && time.Since(last) < 2*time.Second
	v.mu.Unlock()
	if node == nil {
		return errors.New("this member is not running yet")
	}
	s := node.Status()
	if slices.Contains(s.Voters, q.ID) || slices.Contains(s.Learners, q.ID) {
		return nil // admitted already
	}
	if s.Leader == 0 {
		return errors.New("no leader: try again")
	}
	if s.Role != raftnode.RoleLeader {
		// Only the leader knows whether the server's current incarnation
		// still answers: pass the request on to it (once).
		lead, ok := r.Peer(MemberID(s.Leader))
		if q.Via != nil || !ok {
			return fmt.Errorf("not the leader: server.%d admits members", MemberID(s.Leader))
		}
		via := r.opts.ServerID
		q.Via = &via
		a, err := r.probe(lead, q)
		if err != nil {
			return fmt.Errorf("passing the request on to the leader, server.%d: %w", lead.ID, err)
		}
		if a.Error != "" {
			return errors.New(a.Error) // the leader logged it
		}
		return nil
	}
	var cc raftpb.ConfChangeV2
	var old []uint64
	for _, id := range append(slices.Clone(s.Voters), s.Learners...) {
		if MemberID(id) != q.MyID || slices.Contains(old, id) {
			continue
		}
		if id == s.ID || slices.Contains(s.Heard, id) {
			return fmt.Errorf("%w: server.%d is running (raft id %x answered within the last election timeout): "+
				"is a second machine configured with the same server id?", errNotAdmitted, q.MyID, id)
		}
		old = append(old, id)
		cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeRemoveNode, NodeID: id})
	}
	if recent {
		return nil
	}
	cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeAddLearnerNode, NodeID: q.ID})
	cc.Context, _ = json.Marshal(map[string]any{"rejoin": q.MyID, "id": q.ID, "replaces": old})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := node.ProposeConfChange(ctx, cc); err != nil {
		return fmt.Errorf("proposing the swap: %w", err)
	}
	v.mu.Lock()
	v.proposed[q.ID] = time.Now()
	v.mu.Unlock()
	if len(old) == 0 {
		r.log.Warn("admitting a server the configuration lists but the ensemble's log does not: as a learner until it has caught up",
			"server", q.MyID, "id", fmt.Sprintf("%x", q.ID), "addr", q.Addr)
	} else {
		r.log.Warn("server rejoins with an empty data directory: swapping its old raft identity for a new one, as a learner until it has caught up",
			"server", q.MyID, "new", fmt.Sprintf("%x", q.ID), "old", hexIDs(old), "addr", q.Addr)
	}
	return nil
}

func hexIDs(ids []uint64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%x", id)
	}
	return out
}

// currentPeers returns the current Membership's members.
func (r *Replica) CurrentPeers() []Peer {
	m := r.members.Load()
	if m == nil {
		return r.opts.Peers
	}
	return m.Peers()
}

// peer returns the member with server id myid in the current Membership.
func (r *Replica) Peer(myid int64) (Peer, bool) {
	if m := r.members.Load(); m != nil {
		if s, ok := m.Server(myid); ok {
			return serverPeer(s), true
		}
		return Peer{}, false
	}
	return r.peerFromConfig(myid)
}

// isObserver reports whether raft id id is an observer's.
func (r *Replica) IsObserver(id uint64) bool {
	p, ok := r.Peer(MemberID(id))
	return ok && p.Observer
}

// verifyPeer is the peer transport's VerifyPeer (and checks a joiner's
// probe): with hostname verification on (ssl.quorum.hostnameVerification,
// ZooKeeper's default), the certificate a peer presents must be valid for
// the host of its server.N address, so that a certificate of the
// ensemble's CA issued to one host cannot speak as another member.
func (r *Replica) verifyPeer(from uint64, cs *tls.ConnectionState) error {
	if !r.opts.PeerHostnameVerification || cs == nil {
		return nil
	}
	p, ok := r.Peer(MemberID(from))
	if !ok {
		return fmt.Errorf("server.%d is not a member of this ensemble", MemberID(from))
	}
	host, _, err := net.SplitHostPort(p.Addr)
	if err != nil {
		host = p.Addr
	}
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("server.%d presented no certificate", p.ID)
	}
	if err := cs.PeerCertificates[0].VerifyHostname(host); err != nil {
		return fmt.Errorf("the certificate presented as server.%d is not valid for %s, that server's address: %v", p.ID, host, err)
	}
	return nil
}

// maxJoiners bounds the servers remembered as asking to join (server
// ids are below 256 anyway).
const maxJoiners = 64

// forgetOldJoiners drops the joiners that asked longer ago than
// joinerTimeout, or the older half of them if none did. view.mu is held.
func forgetOldJoiners(js map[int64]joiner) {
	for id, j := range js {
		if time.Since(j.seen) >= joinerTimeout {
			delete(js, id)
		}
	}
	if len(js) < maxJoiners {
		return
	}
	seen := make([]time.Time, 0, len(js))
	for _, j := range js {
		seen = append(seen, j.seen)
	}
	slices.SortFunc(seen, func(a, b time.Time) int { return a.Compare(b) })
	cut := seen[len(seen)/2]
	for id, j := range js {
		if j.seen.Before(cut) || j.seen.Equal(cut) {
			delete(js, id)
		}
	}
}

// admitPeer is the peer transport's Admit: it refuses a server that is
// not a member, and a raft id of a server whose configuration holds
// another raft id — an incarnation that
// was replaced (a data directory older than the member's rejoin), or one
// this member has not learned of yet (it retries).
func (r *Replica) admitPeer(from uint64) error {
	node := r.Raft()
	var all []uint64
	if node != nil {
		s := node.Status()
		all = append(slices.Clone(s.Voters), s.Learners...)
		if slices.Contains(all, from) {
			// In raft's configuration (both halves of a joint one:
			// members a reconfig removes still vote until raft leaves
			// it, and refusing them stalled the change for good).
			return nil
		}
	}
	if _, ok := r.Peer(MemberID(from)); !ok {
		// Not in zoo.cfg, the Membership the log holds, nor raft's
		// configuration: whoever it is, its messages must not reach
		// raft (a heartbeat of a higher term would force an election).
		return fmt.Errorf("server.%d is not a member of this ensemble", MemberID(from))
	}
	for _, id := range all {
		if MemberID(id) == MemberID(from) {
			return fmt.Errorf("raft id %x of server.%d is not in this ensemble's configuration, which has %x for that server: "+
				"a replaced incarnation (empty its data directory to rejoin), or a newer one this member has not learned of yet",
				from, MemberID(from), id)
		}
	}
	return nil
}

// resolve is the peer transport's Resolve: the address of a raft id
// (every address of a multiAddress line, '|'-separated).
func (r *Replica) resolve(id uint64) (string, bool) {
	p, ok := r.Peer(MemberID(id))
	if !ok {
		// An outgoing voter of a joint configuration (see outgoing).
		if m := r.outgoing.Load(); m != nil {
			if s, found := m.Server(MemberID(id)); found {
				return serverPeer(s).dialAddr(), true
			}
		}
	}
	return p.dialAddr(), ok
}

// startDecision is how a member with no raft state starts.
type startDecision struct {
	id        uint64
	join      bool
	ensemble  identity // from the ensemble, when joining
	bootstrap bool
}

// decide finds out, by probing the other members, whether this member
// (with no raft state) forms the ensemble with them — a majority of the
// voters answer that they have not formed one yet — or rejoins one that
// exists under a new raft id: id is the one its storage was created with
// (0: none yet). It returns once decided, or with an error when the
// server stops. The new identity is recorded in the storage before the
// member asks to be admitted (open creates it), so a restart goes on
// with the same one.
func (r *Replica) decide(id uint64, open func(id uint64) error) (startDecision, error) {
	me, _ := r.Peer(r.opts.ServerID)
	voters := 0
	for _, p := range r.opts.Peers {
		if !p.Observer {
			voters++
		}
	}
	if id == raftID(r.opts.ServerID, 0) {
		// The storage was created for a bootstrap that a crash cut
		// short: the decision was made.
		return startDecision{id: id, bootstrap: true}, nil
	}
	pause := min(max(r.opts.TickTime/2, 50*time.Millisecond), time.Second)
	var lastLog time.Time
	mine := membershipLines(r.opts.Peers)
	defer r.setWaiting("")
	for round := 0; ; round++ {
		answers, errs := r.probeAll(r.opts.Peers, probeRequest{Op: "status"})
		var formed []int // indexes into r.opts.Peers
		unformed := 0
		if !me.Observer && id == 0 {
			unformed++
		}
		// What each member answered and why it does or does not count,
		// for the log and srvr while this member waits.
		var said []string
		for i, a := range answers {
			p := r.opts.Peers[i]
			if p.ID == r.opts.ServerID {
				continue
			}
			var what string
			switch {
			case a == nil:
				what = fmt.Sprintf("no answer from %s (%v)", p.Addr, errs[i])
			case a.formed():
				formed = append(formed, i)
				what = fmt.Sprintf("belongs to a formed ensemble (term %d, commit %d)", a.Term, a.Last)
				if a.Servers != nil && !slices.Equal(mine, a.Servers) {
					what += ", whose configuration lists other members: " + membershipDiff(mine, a.Servers)
				}
			case a.Error != "":
				what = "error: " + a.Error
			case a.Joining:
				what = "is joining an ensemble itself: does not count"
			case a.Members != membershipHash(r.opts.Peers):
				what = "its configuration lists other members, so it does not count: " + membershipDiff(mine, a.Servers)
			case p.Observer:
				what = "has not formed an ensemble yet; an observer, it does not count toward the majority"
			default:
				unformed++
				what = "has not formed an ensemble yet: counts"
			}
			said = append(said, fmt.Sprintf("server.%d %s", p.ID, what))
		}
		if len(formed) > 0 {
			if id == 0 {
				inc, err := newIncarnation()
				if err != nil {
					return startDecision{}, err
				}
				id = raftID(r.opts.ServerID, inc)
				if err := open(id); err != nil {
					return startDecision{}, err
				}
				r.log.Warn("the ensemble exists but this member's data directory is empty: rejoining under a new raft identity",
					"id", fmt.Sprintf("%x", id))
			}
			r.view.mu.Lock()
			r.view.joining = true
			// Answer probes with the identity this member joins under
			// (the first formed answer's), so that a member of the
			// ensemble still pending can count it (learnFormation).
			r.view.ensemble, r.view.formation = answers[formed[0]].Ensemble, answers[formed[0]].Formation
			r.view.mu.Unlock()
			for _, i := range formed {
				if answers[i].has(id) {
					return startDecision{id: id, join: true, ensemble: identity{answers[i].Ensemble, answers[i].Formation}}, nil
				}
			}
			var refusals []string
			for _, i := range formed {
				a, err := r.probe(r.opts.Peers[i], probeRequest{Op: "join", MyID: r.opts.ServerID, ID: id, Addr: me.Addr, Servers: mine})
				switch {
				case err != nil:
					refusals = append(refusals, fmt.Sprintf("server.%d: %v", r.opts.Peers[i].ID, err))
				case a.Error != "":
					refusals = append(refusals, fmt.Sprintf("server.%d: %s", r.opts.Peers[i].ID, a.Error))
				}
			}
			r.setWaiting("joining: " + strings.Join(refusals, "; "))
			if len(refusals) > 0 && time.Since(lastLog) > 10*time.Second {
				lastLog = time.Now()
				r.log.Warn("waiting to be admitted to the ensemble", "refusals", refusals, "members", said)
			}
		} else if id == 0 && unformed > voters/2 {
			return startDecision{id: raftID(r.opts.ServerID, 0), bootstrap: true}, nil
		} else {
			r.setWaiting(fmt.Sprintf("forming: %d of %d voters answered that they can form the ensemble (%d needed); %s",
				unformed, voters, voters/2+1, strings.Join(said, "; ")))
			if time.Since(lastLog) > 10*time.Second {
				lastLog = time.Now()
				r.log.Info("empty data directory: waiting for a majority of the members to answer, to form the ensemble with them or rejoin it",
					"answered", unformed, "voters", voters, "needed", voters/2+1, "members", said)
			}
		}
		select {
		case <-time.After(pause):
		case <-r.quit:
			return startDecision{}, errors.New("server stopped before the member could start")
		}
	}
}

// promoteLearners runs on every member and acts on the leader: a learner
// whose server is a participant (a member that rejoined under a new raft
// id) becomes a voter once its log is within PromoteLag entries of the
// commit index. Until then it neither votes nor counts toward a quorum.
func (r *Replica) promoteLearners(node *raftnode.Node) {
	defer r.wg.Done()
	t := time.NewTicker(min(max(r.opts.TickTime/2, 10*time.Millisecond), 500*time.Millisecond))
	defer t.Stop()
	proposed := map[uint64]time.Time{}
	for {
		select {
		case <-t.C:
		case <-r.quit:
			return
		}
		if !r.raftLeads() {
			continue
		}
		s := node.Status()
		for _, l := range s.Learners {
			p, ok := r.Peer(MemberID(l))
			// Match 0: the learner has acknowledged nothing yet (it has
			// not even connected); as a voter it could stop a
			// two-member ensemble.
			if !ok || p.Observer || s.Match[l] == 0 || s.Match[l]+PromoteLag < s.Commit || time.Since(proposed[l]) < 2*time.Second {
				continue
			}
			proposed[l] = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := node.ProposeConfChange(ctx, raftpb.ConfChangeV2{Changes: []raftpb.ConfChangeSingle{{Type: raftpb.ConfChangeAddNode, NodeID: l}}})
			cancel()
			r.log.Info("promoting a caught-up member to voter", "server", p.ID, "id", fmt.Sprintf("%x", l), "match", s.Match[l], "commit", s.Commit, "err", err)
		}
	}
}

// PromoteLag is how far behind the commit index a learner may be when it
// is made a voter.
const PromoteLag = 1000

// confChanged is raftnode's OnConfChange: it keeps the transport's peers
// in step with the configuration.
func (r *Replica) confChanged(index uint64, cc raftpb.ConfChangeV2, cs raftpb.ConfState) {
	joint := len(cs.VotersOutgoing) > 0
	var rc reconfigContext
	if json.Unmarshal(cc.Context, &rc) == nil && len(rc.Servers) > 0 {
		if joint {
			// Several voters changed at once: raft runs both
			// configurations until the leader's leaving entry commits,
			// which needs a majority of the outgoing voters too. Those
			// the new Membership drops must still be reached.
			r.outgoing.Store(r.members.Load())
		}
		r.applyMembership(index, rc)
	}
	if !joint {
		r.outgoing.Store(nil)
	}
	defer r.RecheckQuorum()
	for _, c := range cc.Changes {
		if c.Type == raftpb.ConfChangeRemoveNode && !slices.Contains(r.leaving, c.NodeID) {
			r.leaving = append(r.leaving, c.NodeID)
		}
	}
	// A removed identity stays a peer for as long as the joint
	// configuration holds it; it is dropped once raft has left it.
	self := r.id.Load()
	r.leaving = slices.DeleteFunc(r.leaving, func(id uint64) bool {
		if inConfState(cs, id) {
			return false
		}
		if id == self {
			r.log.Error("this member's raft identity was removed from the ensemble: it no longer votes or receives the log",
				"id", fmt.Sprintf("%x", id), "index", index)
			r.removed(self)
		} else if r.tr != nil {
			r.tr.RemovePeer(id)
		}
		return true
	})
}

// inConfState reports whether raft id id votes or learns in cs, in
// either half of a joint configuration.
func inConfState(cs raftpb.ConfState, id uint64) bool {
	return slices.Contains(cs.Voters, id) || slices.Contains(cs.VotersOutgoing, id) ||
		slices.Contains(cs.Learners, id) || slices.Contains(cs.LearnersNext, id)
}

// removed starts, once, what a member removed from the configuration does
// (confChanged, on the apply goroutine): it asks the members, every
// second, to take it back, as a server waiting to be added does, so that
// a reconfig adding it again (ZooKeeper allows that) uses its raft id —
// it keeps its log, which a voter may hold again. It stops when it is
// back in the configuration, or the server stops.
func (r *Replica) removed(self uint64) {
	if !r.askingBack.CompareAndSwap(false, true) {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.askingBack.Store(false)
		me, _ := r.peerFromConfig(r.opts.ServerID)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for first := true; ; first = false {
			if !first {
				select {
				case <-t.C:
				case <-r.quit:
					return
				}
			}
			node := r.Raft()
			if node == nil {
				return
			}
			if st := node.Status(); slices.Contains(st.Voters, self) || slices.Contains(st.Learners, self) {
				return
			}
			r.probeAll(r.CurrentPeers(), probeRequest{Op: "join", MyID: r.opts.ServerID, ID: self, Addr: me.Addr})
		}
	}()
}

// peerFromConfig returns this member's own entry as its zoo.cfg gives it
// (a removed member is not in the Membership any more).
func (r *Replica) peerFromConfig(myid int64) (Peer, bool) {
	for _, p := range r.opts.Peers {
		if p.ID == myid {
			return p, true
		}
	}
	return Peer{}, false
}
