package raftnode

import (
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// A leader whose process died (a crash, kill -9, an OOM kill) is known
// dead the moment its peer port refuses connections: the TCP transport
// sees its connection close and a redial refused (PeerDownHandler). A
// follower then need not wait out an election timeout of silence and a
// randomized election timeout more (about 1 s each at ZooKeeper's
// default tickTime, during which no write is taken): one voter campaigns
// at once. ZooKeeper's followers likewise start an election as soon as
// the leader's socket closes.
//
// Which voter: the voters other than the dead leader, in id order, each
// after rank × a quarter of the election timeout, so that normally one
// campaigns alone and wins (two at once would split the vote and fall
// back to the randomized timeout); a later one campaigns only if no new
// leader appeared meanwhile. The campaign is the one a leadership
// transfer starts (the dead leader's MsgTimeoutNow, stepped locally):
// it skips pre-vote, and the other voters grant it although they heard
// from the leader within the election timeout (raft's lease check) —
// they saw the same refusal, or soon will. Safety is raft's: votes and
// log comparison decide as in any election; a live leader wrongly taken
// for dead (it cannot be: its listener is open while it runs) would only
// see a higher term and step down.

// PeerDown implements PeerDownHandler.
func (n *Node) PeerDown(id uint64) {
	if n.raftLead.Load() != id || Role(n.role.Load()) != RoleFollower {
		return
	}
	term := n.term.Load()
	n.confMu.Lock()
	var others []uint64
	for _, v := range n.confState.Voters {
		if v != id {
			others = append(others, v)
		}
	}
	n.confMu.Unlock()
	slices.Sort(others)
	rank := slices.Index(others, n.id)
	if rank < 0 {
		return // not a voter
	}
	delay := time.Duration(rank) * n.cfg.TickInterval * time.Duration(n.cfg.ElectionTick) / 4
	n.log.Warn("raftnode: the leader's peer port refuses connections: its process is gone; electing a new leader without waiting for an election timeout",
		"leader", id, "term", term, "campaign_after", delay)
	campaign := func() {
		n.withRaft(func(rn *raft.RawNode) error {
			st := rn.BasicStatus()
			if st.Lead != id || st.Term != term || st.RaftState != raft.StateFollower {
				return nil // a leader was elected meanwhile, or this member moved on
			}
			n.fastElections.Add(1)
			return rn.Step(raftpb.Message{Type: raftpb.MsgTimeoutNow, From: id, To: n.id, Term: term})
		})
	}
	if delay == 0 {
		campaign()
		return
	}
	time.AfterFunc(delay, campaign)
}
