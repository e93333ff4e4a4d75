package raftnode

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/storage"
)

// Screening what peers send. raft trusts its messages: it appends the
// entries of any MsgApp at its term, follows whoever sends a heartbeat of
// a higher term, and panics on a message that contradicts its log (a
// commit index past its last entry, an entry conflicting with a committed
// one). A transport hands Process whatever arrived on a connection whose
// handshake named a member; before raft sees a message, screen drops
// those no correct member sends:
//
//   - an entry that cannot be applied: a normal entry the state machine's
//     Config.ValidateEntry refuses, a configuration change that does not
//     decode. Stored, it would stop every member that applies it, at
//     every restart (the log keeps it);
//   - a leader's message (append, heartbeat, snapshot, timeout-now,
//     read-index answer) at this member's term from another member than
//     the leader raft follows at that term: one term has one leader;
//   - a leader's message of a higher term from a member that is not in
//     the configuration, while this member leads or follows a leader it
//     heard from within the election timeout: raft would step down or
//     follow at once, so one heartbeat would force an election. From a
//     member of the configuration it is taken: after a leadership
//     transfer, the new leader's first append reaches members that still
//     hear the old one (dropping it stalled writes for an election
//     timeout);
//   - an append whose entries contradict committed ones: raft panics
//     on it (no leader sends one). A heartbeat committing past the log
//     is not dropped: the leader sends one to a member restored from an
//     old backup, which must stop then (ErrLogBehind), not lag silently;
//   - a snapshot inside a message, when the transport streams them, or
//     whose data claims to be a received file (storage.ReceivedMarker):
//     only ResumeSnapshot steps snapshots then, after it received the
//     stream from the leader and the state machine checked it
//     (SnapshotChecker).
//
// A dropped message is logged (at most once per sender and reason every
// screenLogEvery) and counted in Status.Screened. Screening cannot tell a
// forger from the member it names: that needs the peers authenticated
// (sslQuorum with hostname verification, quorum SASL).

const screenLogEvery = 10 * time.Second

// screenLog rate-limits the log lines of dropped messages.
type screenLog struct {
	mu   sync.Mutex // guards last
	last map[screenKey]time.Time
}

type screenKey struct {
	from uint64
	why  string
}

// leaderMsg reports whether only a leader sends messages of type t.
func leaderMsg(t raftpb.MessageType) bool {
	switch t {
	case raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgSnap, raftpb.MsgTimeoutNow, raftpb.MsgReadIndexResp:
		return true
	}
	return false
}

// screen returns why m must be dropped, or nil; rn is raft, under rnMu;
// received: m is a snapshot ResumeSnapshot received and checked.
// why is a short fixed text (the log's rate-limit key), err the details.
func (n *Node) screen(rn *raft.RawNode, m *raftpb.Message, received bool) (why string, err error) {
	switch m.Type {
	case raftpb.MsgApp, raftpb.MsgProp:
		for i := range m.Entries {
			if err := n.validateEntry(&m.Entries[i]); err != nil {
				return "an entry that cannot be applied", fmt.Errorf("entry %d: %w", m.Entries[i].Index, err)
			}
		}
	case raftpb.MsgSnap:
		if m.Snapshot != nil && storage.IsReceived(m.Snapshot.Data) && !received {
			return "a snapshot marker from the network", errors.New("a snapshot whose data is the received-file marker")
		}
		if _, streams := n.cfg.Transport.(SnapshotStreamer); streams && !received {
			// Its data would be restored unchecked; the leader
			// streams every snapshot (ResumeSnapshot checks them).
			return "a snapshot outside a snapshot stream", errors.New("a snapshot inside a message")
		}
	}
	if !leaderMsg(m.Type) {
		return "", nil
	}
	st := rn.BasicStatus()
	switch {
	case m.Term < st.Term:
		return "", nil // stale: raft answers it with its term
	case m.Term == st.Term:
		if st.Lead != raft.None && st.Lead != m.From {
			return "a second leader of the term", fmt.Errorf("%v from %x at term %d, which %x leads", m.Type, m.From, m.Term, st.Lead)
		}
	case n.inLease(st.Lead) && !n.inConfig(m.From):
		return "a higher term from a non-member", fmt.Errorf("%v from %x at term %d, not in this member's configuration; this member is at term %d with leader %x, heard within the election timeout",
			m.Type, m.From, m.Term, st.Term, st.Lead)
	}
	if m.Type == raftpb.MsgApp {
		rs := n.st.RaftStorage()
		for i := range m.Entries {
			e := &m.Entries[i]
			if e.Index > st.Commit {
				break
			}
			if t, err := rs.Term(e.Index); err == nil && t != e.Term {
				return "an append contradicting committed entries", fmt.Errorf("append from %x has entry %d of term %d; the committed one is of term %d", m.From, e.Index, e.Term, t)
			}
		}
	}
	return "", nil
}

// inConfig reports whether id is a voter or learner of the configuration
// this member applied.
func (n *Node) inConfig(id uint64) bool {
	n.confMu.Lock()
	defer n.confMu.Unlock()
	cs := &n.confState
	return slices.Contains(cs.Voters, id) || slices.Contains(cs.Learners, id) ||
		slices.Contains(cs.VotersOutgoing, id) || slices.Contains(cs.LearnersNext, id)
}

// inLease reports whether this member leads, or follows lead and heard
// from it within the election timeout.
func (n *Node) inLease(lead uint64) bool {
	switch {
	case lead == raft.None:
		return false
	case lead == n.id:
		return true
	}
	at, ok := n.heardAt.Load(lead)
	if !ok {
		return false
	}
	now, t := n.tickCount.Load(), at.(*atomic.Uint64).Load()
	return now >= t && now-t < uint64(n.cfg.ElectionTick)
}

// validateEntry checks that e can be applied: a configuration change
// decodes; a normal entry passes Config.ValidateEntry.
func (n *Node) validateEntry(e *raftpb.Entry) error {
	switch e.Type {
	case raftpb.EntryNormal:
		if len(e.Data) == 0 || n.cfg.ValidateEntry == nil {
			return nil
		}
		return n.cfg.ValidateEntry(e.Data)
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		cc, err := decodeConfChange(*e)
		if err != nil {
			return fmt.Errorf("configuration change: %w", err)
		}
		for _, c := range cc.Changes {
			if c.NodeID == 0 {
				return errors.New("configuration change of member 0")
			}
			if _, ok := raftpb.ConfChangeType_name[int32(c.Type)]; !ok {
				return fmt.Errorf("configuration change of type %d", c.Type)
			}
		}
		if _, ok := raftpb.ConfChangeTransition_name[int32(cc.Transition)]; !ok {
			return fmt.Errorf("configuration change transition %d", cc.Transition)
		}
		return nil
	default:
		return fmt.Errorf("entry type %d", e.Type)
	}
}

// dropped logs (rate-limited) and counts a screened message.
func (n *Node) dropped(m *raftpb.Message, why string, err error) {
	n.screened.Add(1)
	now := time.Now()
	k := screenKey{m.From, why}
	n.screenLog.mu.Lock()
	last, seen := n.screenLog.last[k]
	logIt := !seen || now.Sub(last) >= screenLogEvery
	if logIt {
		if n.screenLog.last == nil || len(n.screenLog.last) >= 1024 {
			n.screenLog.last = map[screenKey]time.Time{}
		}
		n.screenLog.last[k] = now
	}
	n.screenLog.mu.Unlock()
	if logIt {
		n.log.Warn("raftnode: dropped a peer's message: "+why, "from", m.From, "type", m.Type.String(), "err", err)
	}
}
