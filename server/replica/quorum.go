package replica

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/raftnode"
)

// The configured quorum. Raft runs on the configuration its log holds
// (bootstrapped, changed by rejoins and reconfigs); zoo.cfg names the
// voters the operator configured. The two differ when the data directory
// comes from elsewhere — a standalone server's data restarted as member 1
// of 3, a member restarted with a zoo.cfg that lists servers the log has
// never admitted — and raft alone would then let this member lead the
// log's configuration: a standalone's data would elect itself and take
// writes while the two other members formed an ensemble of their own.
//
// The rule: the log's configuration governs raft, and a member serves
// clients (takes writes, expires sessions, counts as having a leader)
// only while the log's voters include a majority of the voters its
// Membership names. The Membership is zoo.cfg's (the static file or the
// dynamic one) until a reconfig in the log replaces it; after that the
// two agree by construction, since the reconfig changed both in one
// entry. A member that fails the rule still runs raft for what needs no
// clients: admitting the configured servers that ask to join
// (members.go's admit), promoting them once caught up — after which the
// rule holds and it serves. It says what it waits for every 10 s, in
// srvr and mntr, and on the console.

// configuredQuorum reports whether raft's voters include a majority of the
// voters of the Membership; when not, why says which ones are missing.
func (r *Replica) configuredQuorum(voters []uint64) (ok bool, why string) {
	m := r.members.Load()
	if m == nil || !r.Clustered() {
		return true, ""
	}
	if m.fromLog {
		if _, ok := m.Server(r.opts.ServerID); !ok {
			return false, "this server was removed from the ensemble by a reconfig: it serves no clients until a reconfig adds it again"
		}
		return true, ""
	}
	var want, have, missing []string
	for _, s := range m.Servers {
		if s.Role == config.Observer {
			continue
		}
		name := fmt.Sprintf("server.%d", s.ID)
		want = append(want, name)
		if slices.ContainsFunc(voters, func(v uint64) bool { return MemberID(v) == s.ID }) {
			have = append(have, name)
		} else {
			missing = append(missing, name)
		}
	}
	if len(have) > len(want)/2 {
		return true, ""
	}
	var logged []string
	for _, v := range voters {
		logged = append(logged, fmt.Sprintf("server.%d", MemberID(v)))
	}
	return false, fmt.Sprintf("the configuration names %d voters (%s) but this member's log has %d of them as voters (log: %s): "+
		"serving no clients until %d of them are; start the missing ones (%s) with empty data directories: they join and receive this member's data",
		len(want), strings.Join(want, " "), len(have), strings.Join(logged, " "), len(want)/2+1, strings.Join(missing, " "))
}

// recheckQuorum asks followLeader to check the configured quorum again: a
// raft configuration or the Membership changed. It does not block.
func (r *Replica) RecheckQuorum() {
	if r.recheck == nil {
		return
	}
	select {
	case r.recheck <- struct{}{}:
	default:
	}
}

// settleLeader works out the leader this member acts on from raft's last
// report ch: raft's leader when the configured quorum holds, none
// otherwise. It tells the server when that changes, and every change raft
// reports while the quorum holds (a new term may have lost proposals).
// changed says whether ch is a new report (false: a recheck).
func (r *Replica) settleLeader(node *raftnode.Node, ch raftnode.LeaderChange, changed bool) {
	ok, why := r.configuredQuorum(node.Status().Voters)
	eff := ch
	if !ok {
		eff = raftnode.LeaderChange{Term: ch.Term}
		r.setWaiting("members: " + why)
	} else if r.WaitingFor() != "" && strings.HasPrefix(r.WaitingFor(), "members: ") {
		r.setWaiting("")
		r.log.Info("the log's voters now include a majority of the configured ones: serving")
	}
	prev := uint64(r.leader.Load())
	if prev == eff.Leader && (!changed || !ok) {
		return
	}
	r.leader.Store(int64(eff.Leader))
	r.h.LeaderChanged(eff)
	if !ok && r.view.quorumLog.Allow() {
		r.log.Warn("waiting for the configured members", "why", why)
	}
}

// setWaiting records what the member waits for ("" when it does not).
func (r *Replica) setWaiting(what string) {
	r.view.mu.Lock()
	r.view.waiting = what
	r.view.mu.Unlock()
}

// waitingFor says what the member waits for before it serves clients:
// forming or joining the ensemble, or the configured members; "" when it
// waits for nothing of the kind (it may still wait for an election).
func (r *Replica) WaitingFor() string {
	r.view.mu.Lock()
	defer r.view.mu.Unlock()
	return r.view.waiting
}

// logWaiting repeats, every 10 s while it lasts, why a member with a raft
// leader does not serve.
func (r *Replica) logWaiting(node *raftnode.Node) {
	if node.Leader() == 0 {
		return
	}
	if ok, why := r.configuredQuorum(node.Status().Voters); !ok && r.view.quorumLog.Allow() {
		r.log.Warn("waiting for the configured members", "why", why)
	}
}
