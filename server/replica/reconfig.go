package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/tree"
)

// Dynamic reconfiguration (ZooKeeper 3.5+'s reconfig) on raft's
// Membership changes. The Membership — every server's dynamic
// configuration line — is replicated state: a reconfig proposes one
// ConfChangeV2 whose context carries the new lines, and every member, when
// it applies that entry, takes them as its Membership (version: the
// entry's index, the zxid), writes them into /zookeeper/config (its
// watchers fire) and tells the server (Hooks.MembershipChanged), which
// hands them to server.Options.OnConfigChange (zkgo server rewrites the
// dynamic configuration file). New servers join as raft
// learners and are promoted by promoteLearners once caught up, so a voter
// never lacks the log; leaving servers are removed.

// Membership is the ensemble's dynamic configuration. A Membership once
// published (Replica.Members) is never changed: read it, do not write it.
type Membership struct {
	// Version is its version (the zxid of the reconfig that made it; 0
	// for zoo.cfg's own, until the formation versions it).
	Version int64
	Servers []config.Server // by id
	// fromLog: the Membership was set by a reconfig in the log (or a
	// snapshot taken after one), so raft's configuration follows it; else
	// it is what this member's zoo.cfg says, which the log's configuration
	// may not match (quorum.go).
	fromLog bool
}

// text is the Membership in /zookeeper/config's format.
func (m *Membership) Text() string { return config.ServersText(m.Servers, m.Version) }

// lines are the server lines of the text (without the version).
func (m *Membership) lines() []string {
	var out []string
	for _, l := range strings.Split(config.ServersText(m.Servers, 0), "\n") {
		if strings.HasPrefix(l, "server.") {
			out = append(out, l)
		}
	}
	return out
}

// peers is the Membership as Peers.
func (m *Membership) Peers() []Peer {
	out := make([]Peer, len(m.Servers))
	for i, s := range m.Servers {
		out[i] = serverPeer(s)
	}
	return out
}

func (m *Membership) Server(id int64) (config.Server, bool) {
	for _, s := range m.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return config.Server{}, false
}

func serverPeer(s config.Server) Peer {
	p := Peer{ID: s.ID, Addr: net.JoinHostPort(s.Host, strconv.Itoa(s.PeerPort)), Observer: s.Role == config.Observer}
	for _, a := range s.Addrs[min(1, len(s.Addrs)):] {
		p.More = append(p.More, net.JoinHostPort(a.Host, strconv.Itoa(a.PeerPort)))
	}
	return p
}

// initialMembership is the Membership a member starts with: the server
// lines of Config.ConfigText (zoo.cfg or its dynamic file), or, without
// them, the Peers.
func initialMembership(o *Config) *Membership {
	m := parseMembership(o.ConfigText)
	if len(m.Servers) != len(o.Peers) {
		m.Servers = m.Servers[:0]
		for _, p := range o.Peers {
			role := config.Participant
			if p.Observer {
				role = config.Observer
			}
			sv := config.Server{ID: p.ID, Role: role}
			for _, a := range p.addrs() {
				host, port, _ := net.SplitHostPort(a)
				pp, _ := strconv.Atoi(port)
				sv.Addrs = append(sv.Addrs, config.Address{Host: host, PeerPort: pp})
			}
			sv.Host, sv.PeerPort = sv.Addrs[0].Host, sv.Addrs[0].PeerPort
			m.Servers = append(m.Servers, sv)
		}
	}
	slices.SortFunc(m.Servers, func(a, b config.Server) int { return int(a.ID - b.ID) })
	return m
}

// parseMembership reads /zookeeper/config's text.
func parseMembership(text string) *Membership {
	m := &Membership{}
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "version="); ok {
			m.Version, _ = strconv.ParseInt(v, 16, 64)
		} else if s, err := config.ParseServerLineMulti(l, true); err == nil {
			m.Servers = append(m.Servers, s)
		}
	}
	slices.SortFunc(m.Servers, func(a, b config.Server) int { return int(a.ID - b.ID) })
	return m
}

// reconfigContext is the context of a reconfig's ConfChangeV2.
type reconfigContext struct {
	Servers []string `json:"servers"` // the new Membership's lines
	Time    int64    `json:"time"`    // the Proposer's clock (ms), /zookeeper/config's mtime
	// Nonce tells the asking member its own change from another
	// (absent from entries older versions wrote).
	Nonce uint64 `json:"nonce,omitempty"`
}

// joiner is a server that asked to be admitted while not a member (a new
// server waiting for a reconfig to add it).
type joiner struct {
	id   uint64 // its raft id
	addr string // its peer address
	seen time.Time
}

// joinerTimeout is how recently a joiner must have asked for a reconfig
// to count it as connected.
const joinerTimeout = 10 * time.Second

// applyMembership takes a reconfig's new Membership, on the apply
// goroutine (confChanged).
func (r *Replica) applyMembership(index uint64, rc reconfigContext) {
	m := &Membership{Version: int64(index), fromLog: true}
	for _, l := range rc.Servers {
		s, err := config.ParseServerLineMulti(l, true)
		if err != nil {
			r.log.Error("a reconfig entry holds a bad server line; Membership unchanged", "line", l, "err", err)
			return
		}
		m.Servers = append(m.Servers, s)
	}
	slices.SortFunc(m.Servers, func(a, b config.Server) int { return int(a.ID - b.ID) })
	r.members.Store(m)
	r.log.Info("Membership changed", "version", fmt.Sprintf("%x", m.Version), "servers", rc.Servers)
	if r.h.MembershipChanged != nil {
		r.h.MembershipChanged(m, rc.Time)
	}
	r.memberMu.Lock()
	if rc.Nonce != 0 {
		r.appliedNonces[r.nonceNext%len(r.appliedNonces)] = rc.Nonce
		r.nonceNext++
	}
	close(r.memberCh)
	r.memberCh = make(chan struct{})
	r.memberMu.Unlock()
	r.RecheckQuorum()
	if _, ok := m.Server(r.opts.ServerID); !ok {
		r.log.Warn("this server is no longer a member of the ensemble (removed by a reconfig): it serves no clients")
	}
}

// Reconfig carries out a reconfig request and returns the result code.
// authorized tells whether the asking session may reconfigure; it is
// asked after ZooKeeper's other checks, in ZooKeeper's order.
func (r *Replica) Reconfig(ctx context.Context, req *proto.ReconfigRequest, authorized func() bool) proto.ErrCode {
	if node := r.Raft(); node == nil || !r.HasQuorum() {
		return proto.ErrNewConfigNoQuorum
	}
	// The checks come in ZooKeeper's order (PrepRequestProcessor): a
	// reconfig in progress, the version, the request itself, a quorum
	// for the new configuration, and only then the authorization.
	if !r.reconfigMu.TryLock() {
		return proto.ErrReconfigInProgress
	}
	defer r.reconfigMu.Unlock()
	deadline := time.Now().Add(reconfigWait)
	for {
		code, dropped := r.reconfigOnce(ctx, req, authorized, deadline)
		if !dropped {
			return code
		}
		// raft's leader drops a configuration change proposed while
		// another is still unapplied, as one of its own may be (a
		// rejoining member's new identity, a learner's promotion, the
		// step out of a joint configuration). Work the change out
		// again from what is now the configuration, and propose it
		// again, after a pause for the other to apply.
		r.log.Info("reconfig: the leader dropped the change (another configuration change was in progress); proposing it again")
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return proto.ErrConnectionLoss
		}
	}
}

// SetBeforeConfChange makes fn run in each reconfig attempt just before
// its change is proposed, with the raft node it is proposed to: a test's
// hook, to race the change with another.
func (r *Replica) SetBeforeConfChange(fn func(*raftnode.Node)) { r.beforeConfChange.Store(&fn) }

// reconfigWait bounds how long a reconfig waits for its change to
// commit, its retries after a drop included.
const reconfigWait = 10 * time.Second

// reconfigOnce is one attempt of Reconfig; dropped reports that raft's
// leader dropped the change, so that no part of it was applied.
func (r *Replica) reconfigOnce(ctx context.Context, req *proto.ReconfigRequest, authorized func() bool, deadline time.Time) (code proto.ErrCode, dropped bool) {
	node := r.Raft()
	if node == nil {
		return proto.ErrNewConfigNoQuorum, false
	}
	cur := r.members.Load()
	if req.CurConfigID != -1 && req.CurConfigID != cur.Version {
		return proto.ErrBadVersion, false
	}
	next, err := nextMembership(cur, req, r.opts.MultiAddress)
	if err != nil {
		r.log.Info("reconfig refused", "err", err)
		return proto.ErrBadArguments, false
	}
	if !slices.ContainsFunc(next.Servers, func(sv config.Server) bool { return sv.Role != config.Observer }) {
		r.log.Info("reconfig refused: the new configuration has no participant")
		return proto.ErrBadArguments, false
	}
	// A participant still a learner (a rejoin, or a server an earlier
	// reconfig added, catching up) is promoted within moments once it
	// has the log: wait for that, a little, rather than answer a client
	// that just saw the server serve ReconfigInProgress. A learner whose
	// server leaves now needs no wait.
	st, pending := r.awaitPromotions(ctx, node, next)
	if pending {
		return proto.ErrReconfigInProgress, false
	}
	var cc raftpb.ConfChangeV2
	voters := 0
	inConfig := func(myid int64) []uint64 {
		var out []uint64
		for _, id := range append(slices.Clone(st.Voters), st.Learners...) {
			if MemberID(id) == myid && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
		return out
	}
	for _, old := range cur.Servers {
		if _, ok := next.Server(old.ID); !ok {
			for _, id := range inConfig(old.ID) {
				cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeRemoveNode, NodeID: id})
			}
		}
	}
	// A quorum of the new configuration must be in sync, as ZooKeeper
	// requires (its leader counts the followers that acknowledged the
	// new configuration): participants that stay and whose log is
	// caught up and that answer, by the leader's account.
	synced, err := r.syncedMembers()
	if err != nil {
		r.log.Info("reconfig: cannot tell which members are in sync", "err", err)
		return proto.ErrNewConfigNoQuorum, false
	}
	type newcomer struct {
		id          uint64
		participant bool
	}
	var newcomers []newcomer
	var toParticipant []uint64 // observers that become participants
	participants, ready, asked := 0, 0, 0
	for _, ns := range next.Servers {
		participant := ns.Role != config.Observer
		if participant {
			participants++
		}
		ids := inConfig(ns.ID)
		if len(ids) == 0 {
			// Not in the configuration: a server that asked to join
			// (a new one, or one removed earlier that asks to come
			// back) under the raft id it announced, or else one that
			// has not started yet, under a new identity reserved for
			// it. It catches up when it comes: it asks to join, and
			// the leader gives the reserved identity's place to the
			// one it announces (admit), never heard from before.
			id := uint64(0)
			if j, ok := r.joiner(ns.ID); ok {
				id = j.id
				if participant {
					asked++
				}
			} else {
				inc, err := newIncarnation()
				if err != nil {
					return proto.ErrNewConfigNoQuorum, false
				}
				id = raftID(ns.ID, inc)
			}
			newcomers = append(newcomers, newcomer{id, participant})
			continue
		}
		old, _ := cur.Server(ns.ID)
		if ns.Role != old.Role && !participant {
			// To an observer: demoted to a raft learner now.
			for _, id := range ids {
				cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeAddLearnerNode, NodeID: id})
			}
		}
		if participant {
			for _, id := range ids {
				if slices.Contains(st.Voters, id) {
					voters++
				} else if ns.Role != old.Role {
					toParticipant = append(toParticipant, id)
				}
				if slices.Contains(synced, id) {
					ready++
				}
			}
		}
	}
	// With a quorum of the new configuration in sync, new participants
	// are voters at once, as in ZooKeeper: the quorum does not need
	// them, and they catch up when they come. Without one, servers that
	// asked to join (and are not in sync yet, having no log) may make
	// it: they join as learners and become voters once caught up
	// (promoteLearners), so no quorum ever counts a voter without the
	// log. Else there is no quorum for the new configuration.
	direct := ready > participants/2
	if !direct && ready+asked <= participants/2 {
		r.log.Info("reconfig: no quorum of the new configuration is in sync", "participants", participants, "inSync", ready, "askedToJoin", asked)
		return proto.ErrNewConfigNoQuorum, false
	}
	for _, n := range newcomers {
		typ := raftpb.ConfChangeAddLearnerNode
		if n.participant && direct {
			typ = raftpb.ConfChangeAddNode
			voters++
		}
		cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: typ, NodeID: n.id})
	}
	for _, id := range toParticipant {
		if direct && slices.Contains(synced, id) {
			cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeAddNode, NodeID: id})
			voters++
		}
		// Otherwise it stays a learner (the entry carries the new
		// Membership) until promoteLearners finds it caught up.
	}
	if voters == 0 {
		return proto.ErrBadArguments, false // no voter would be left
	}
	if !authorized() {
		return proto.ErrNoAuth, false
	}
	for _, sv := range next.Servers {
		// ZooKeeper takes any long as a server id; zkgo refuses those
		// it cannot have here, after ZooKeeper's own checks.
		if !config.ValidServerID(sv.ID) {
			r.log.Info("reconfig refused: server ids are 0..254", "server", sv.ID)
			return proto.ErrBadArguments, false
		}
	}
	if len(cc.Changes) == 0 && slices.Equal(cur.lines(), next.lines()) && len(st.Voters) > 0 {
		// The same Membership (an empty reconfig, a member given again
		// as it is, an id that is not a member leaving): ZooKeeper
		// commits it all the same, as a new version whose watchers
		// fire. The entry needs a change raft accepts: adding a voter
		// that already is one changes nothing.
		cc.Changes = append(cc.Changes, raftpb.ConfChangeSingle{Type: raftpb.ConfChangeAddNode, NodeID: slices.Min(st.Voters)})
	}
	if len(cc.Changes) == 0 {
		// raft reads a ConfChangeV2 without changes as "leave the joint
		// configuration"; a change of addresses only is not supported.
		r.log.Info("reconfig refused: only adding, removing and changing the role of servers is supported")
		return proto.ErrBadArguments, false
	}
	if _, stays := next.Server(MemberID(st.Leader)); !stays && st.Leader != 0 {
		r.handOverLeadership(ctx, st, next)
		if ctx.Err() != nil {
			// The change of leader closed the asking connection (its
			// client sees a connection loss and may ask again).
			return proto.ErrConnectionLoss, false
		}
	}
	if slices.ContainsFunc(cc.Changes, func(c raftpb.ConfChangeSingle) bool {
		return c.Type == raftpb.ConfChangeAddLearnerNode && !slices.Contains(st.Voters, c.NodeID) && !slices.Contains(st.Learners, c.NodeID)
	}) &&
		!r.formationChosenWait(ctx) {
		// A server added now would take the formation from the probes
		// before the first leader chose it, and then refuse the members
		// that hold it: with two voters (a quorum of one grown by one)
		// they are no majority and the ensemble stops.
		r.log.Info("reconfig: the ensemble's formation is not chosen yet")
		return proto.ErrReconfigInProgress, false
	}
	nonce, err := newIncarnation()
	if err != nil {
		return proto.ErrNewConfigNoQuorum, false
	}
	cc.Context, _ = json.Marshal(reconfigContext{Servers: next.lines(), Time: time.Now().UnixMilli(), Nonce: nonce})
	pctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if !r.settle(pctx) {
		r.log.Warn("reconfig: the log did not settle in time")
		return proto.ErrNewConfigNoQuorum, false
	}
	if fn := r.beforeConfChange.Load(); fn != nil {
		(*fn)(node)
	}
	if err := node.ProposeConfChange(pctx, cc); err != nil {
		r.log.Warn("reconfig: proposing the change", "err", err)
		return proto.ErrNewConfigNoQuorum, false
	}
	switch r.awaitChange(pctx, nonce) {
	case changeDropped:
		return 0, true
	case changeTimedOut:
		r.log.Warn("reconfig: the change did not commit in time")
		return proto.ErrNewConfigNoQuorum, false
	}
	r.log.Info("reconfig committed", "config", r.members.Load().Text())
	// New participants become voters once they have caught up
	// (promoteLearners); until then another reconfig is answered
	// ReconfigInProgress.
	return proto.ErrOk, false
}

type changeOutcome int

const (
	changeApplied changeOutcome = iota
	changeDropped
	changeTimedOut
)

// awaitChange waits until the reconfig marked nonce, just proposed, is
// applied here, or is known dropped: a barrier proposed after it went
// through the log without it. Proposals from one member reach the
// leader in order, so the change, had the leader appended it, would
// come before the barrier (a barrier lost on the way is proposed again).
func (r *Replica) awaitChange(ctx context.Context, nonce uint64) changeOutcome {
	var w *barrier
	for {
		if r.nonceApplied(nonce) {
			return changeApplied
		}
		if w == nil {
			w = &barrier{done: make(chan struct{})}
			if !r.prop.Propose(statemachine.SyncEntry(), w, false) {
				return changeTimedOut
			}
		}
		r.memberMu.Lock()
		changed := r.memberCh
		r.memberMu.Unlock()
		if r.nonceApplied(nonce) {
			return changeApplied
		}
		select {
		case <-changed:
		case <-w.done:
			if r.nonceApplied(nonce) {
				return changeApplied
			}
			if !w.wasLost {
				return changeDropped
			}
			w = nil
		case <-ctx.Done():
			return changeTimedOut
		}
	}
}

// nonceApplied reports whether the reconfig marked nonce was applied
// here (among the last few).
func (r *Replica) nonceApplied(nonce uint64) bool {
	r.memberMu.Lock()
	defer r.memberMu.Unlock()
	return slices.Contains(r.appliedNonces[:], nonce)
}

// awaitPromotions waits, for up to two election timeouts, until no
// participant that stays in next is a raft learner, and returns raft's
// status then; pending reports one still is.
func (r *Replica) awaitPromotions(ctx context.Context, node *raftnode.Node, next *Membership) (raftnode.Status, bool) {
	deadline := time.Now().Add(2 * time.Duration(raftnode.DefaultElectionTick) * RaftTickInterval(r.opts.TickTime))
	for {
		st := node.Status()
		pending := false
		for _, l := range st.Learners {
			if p, ok := r.Peer(MemberID(l)); ok && !p.Observer {
				if sv, stays := next.Server(MemberID(l)); stays && sv.Role != config.Observer {
					pending = true
				}
			}
		}
		if !pending || len(st.Voters) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return st, pending
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// settle waits for a barrier through the log, so that raft's leader
// counts the previous configuration change applied: raft drops a
// configuration change proposed before that (the entry becomes empty,
// and the reconfig would wait in vain), and raft learns what was applied
// only after this member's apply goroutine may have answered the
// previous reconfig — a client's next reconfig can come first.
func (r *Replica) settle(ctx context.Context) bool {
	w := &barrier{done: make(chan struct{})}
	if !r.prop.Propose(statemachine.SyncEntry(), w, false) {
		return false
	}
	select {
	case <-w.done:
		return !w.wasLost
	case <-ctx.Done():
		return false
	}
}

// barrier is the waiter of settle's sync entry.
type barrier struct {
	done    chan struct{}
	wasLost bool // written before done is closed
}

func (b *barrier) Applied(int64, *tree.Result, *statemachine.Batch) { close(b.done) }
func (b *barrier) Lost()                                            { b.wasLost = true; close(b.done) }

// formationChosenWait reports whether this member has recorded the
// ensemble's formation, waiting a little for the first leader to choose
// it (a new ensemble's formation is pending for a tick or so).
func (r *Replica) formationChosenWait(ctx context.Context) bool {
	deadline := time.Now().Add(2 * time.Duration(raftnode.DefaultElectionTick) * RaftTickInterval(r.opts.TickTime))
	for r.Formation() == raftnode.FormationPending {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// handOverLeadership moves the leadership, before a reconfig removes the
// leader, to a voter that stays (as ZooKeeper's leader hands over to the
// next one): the ensemble then does not wait an election timeout after
// the leader leaves. Like any change of leader, it costs the members'
// clients their connections (they reconnect at once), the asking one's
// included, which then sees a connection loss. If the transfer does
// not happen within two election timeouts, the reconfig goes on and raft
// elects after the removal.
func (r *Replica) handOverLeadership(ctx context.Context, st raftnode.Status, next *Membership) {
	node := r.Raft()
	var to uint64
	for _, v := range st.Voters {
		if sv, ok := next.Server(MemberID(v)); ok && sv.Role != config.Observer && v != st.Leader {
			if to == 0 || v == st.ID {
				to = v // this member if it stays, else the first
			}
		}
	}
	if to == 0 || node == nil {
		return
	}
	r.log.Info("reconfig removes the leader: handing leadership over first", "from", MemberID(st.Leader), "to", MemberID(to))
	node.TransferLeadership(ctx, to)
	deadline := time.Now().Add(2 * time.Duration(raftnode.DefaultElectionTick) * RaftTickInterval(r.opts.TickTime))
	for time.Now().Before(deadline) {
		if node.Leader() == to {
			return
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
	r.log.Info("leadership was not handed over in time; the removal elects instead")
}

// nextMembership applies a reconfig request to cur.
// multiAddress says whether a server line may give several addresses
// (multiAddress.enabled), as ZooKeeper refuses them otherwise.
func nextMembership(cur *Membership, req *proto.ReconfigRequest, multiAddress bool) (*Membership, error) {
	next := &Membership{Version: cur.Version}
	// parse reads a list of server lines. A server given twice counts
	// as its last line, as in ZooKeeper (a map by id there). A member
	// list is read as ZooKeeper reads it, as properties: lines separated
	// by commas or newlines, a version= line ignored (the reconfig sets
	// the version).
	parse := func(list string, members bool) ([]config.Server, error) {
		var out []config.Server
		at := map[int64]int{}
		for _, l := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || members && r == '\n' }) {
			if l = strings.TrimSpace(l); l == "" {
				continue
			}
			if k, _, _ := strings.Cut(l, "="); members && strings.TrimSpace(k) == "version" {
				continue
			}
			sv, err := config.ParseReconfigLine(l, multiAddress)
			if err != nil {
				return nil, err
			}
			if i, ok := at[sv.ID]; ok {
				out[i] = sv
				continue
			}
			at[sv.ID] = len(out)
			out = append(out, sv)
		}
		return out, nil
	}
	if req.NewMembers != "" {
		// Joining and leaving servers given with it are ignored, as
		// ZooKeeper ignores them.
		list, err := parse(req.NewMembers, true)
		if err != nil {
			return nil, err
		}
		next.Servers = list
	} else {
		join, err := parse(req.JoiningServers, false)
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(req.JoiningServers, ",") {
			// ZooKeeper wants all three ports of a joining server.
			if _, client, _ := strings.Cut(l, ";"); strings.TrimSpace(l) != "" && client == "" {
				return nil, fmt.Errorf("joining server %q has no client port (want server.N=host:peerPort:electionPort[:role];[clientAddr:]clientPort)", strings.TrimSpace(l))
			}
		}
		leave := map[int64]bool{}
		for _, f := range strings.Split(req.LeavingServers, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("leaving server %q is not a server id", f)
			}
			leave[id] = true
		}
		for _, sv := range cur.Servers {
			if !leave[sv.ID] && !slices.ContainsFunc(join, func(j config.Server) bool { return j.ID == sv.ID }) {
				next.Servers = append(next.Servers, sv)
			}
		}
		next.Servers = append(next.Servers, join...)
	}
	slices.SortFunc(next.Servers, func(a, b config.Server) int { return int(a.ID - b.ID) })
	return next, nil
}

// joiner returns a server that asked to join recently.
func (r *Replica) joiner(myid int64) (joiner, bool) {
	r.view.mu.Lock()
	defer r.view.mu.Unlock()
	j, ok := r.view.joiners[myid]
	return j, ok && time.Since(j.seen) < joinerTimeout
}

// SetupTree brings a tree the state machine installs (the empty tree, or
// one restored from a snapshot) and the membership together: a restored
// /zookeeper/config that a reconfig changed is the membership, newer than
// the one this member started with; otherwise the tree gets the
// membership's text, with its version.
func (r *Replica) SetupTree(t *tree.Tree) {
	if n := t.Get(tree.ConfigPath); n != nil && n.Stat().Version > 0 {
		if m := parseMembership(string(n.Data())); len(m.Servers) > 0 {
			if cur := r.members.Load(); cur == nil || m.Version > cur.Version || !cur.fromLog {
				m.fromLog = true
				r.members.Store(m)
				r.RecheckQuorum()
			}
		}
	} else if m := r.members.Load(); m != nil && m.Version != initialMembership(r.opts).Version {
		t.SetConfigDataAt([]byte(m.Text()), m.Version) // changed by a reconfig, or versioned by the formation, since start
	} else if v := versionedText(t, r.opts.ConfigText); v != nil {
		// The same membership, versioned when the ensemble formed
		// (formation.go): keep the version.
		r.members.Store(v)
		t.SetConfigDataAt([]byte(v.Text()), v.Version)
	} else if r.opts.ConfigText != "" {
		t.SetConfigData([]byte(r.opts.ConfigText))
	}
}

// versionedText returns configText's membership with the version a
// restored tree's /zookeeper/config holds, if the ensemble's formation
// gave it one (its data version is 0: no reconfig changed it) and it has
// the same members (ids and roles: members may name each other by other
// addresses); nil otherwise.
func versionedText(t *tree.Tree, configText string) *Membership {
	n := t.Get(tree.ConfigPath)
	if n == nil || n.Stat().Version != 0 || configText == "" {
		return nil
	}
	have, want := parseMembership(string(n.Data())), parseMembership(configText)
	if have.Version == 0 || want.Version != 0 || !slices.Equal(membershipLines(have.Peers()), membershipLines(want.Peers())) {
		return nil
	}
	want.Version = have.Version
	return want
}
