package raftnode

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// sendFirst lets go early only what raft queued before its first vote or
// append response, and nothing of a Ready that sends a snapshot.
func TestSendFirst(t *testing.T) {
	m := func(ty raftpb.MessageType, to uint64) raftpb.Message { return raftpb.Message{Type: ty, To: to} }
	for _, c := range []struct {
		name  string
		msgs  []raftpb.Message
		first int
	}{
		{"none", nil, 0},
		{"appends and heartbeats", []raftpb.Message{m(raftpb.MsgApp, 2), m(raftpb.MsgApp, 3), m(raftpb.MsgHeartbeat, 2)}, 3},
		{"vote requests", []raftpb.Message{m(raftpb.MsgVote, 2), m(raftpb.MsgPreVote, 3)}, 2},
		{"append responses wait", []raftpb.Message{m(raftpb.MsgAppResp, 1)}, 0},
		{"vote responses wait", []raftpb.Message{m(raftpb.MsgHeartbeatResp, 1), m(raftpb.MsgVoteResp, 1), m(raftpb.MsgPreVoteResp, 3)}, 1},
		{"nothing after a response", []raftpb.Message{m(raftpb.MsgApp, 2), m(raftpb.MsgAppResp, 3), m(raftpb.MsgApp, 3)}, 1},
		{"a snapshot holds all", []raftpb.Message{m(raftpb.MsgApp, 2), m(raftpb.MsgSnap, 3)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, rest := sendFirst(c.msgs)
			if len(first) != c.first || len(first)+len(rest) != len(c.msgs) {
				t.Fatalf("first %d, rest %d; want first %d of %d", len(first), len(rest), c.first, len(c.msgs))
			}
			for i, x := range append(append([]raftpb.Message{}, first...), rest...) {
				if x.Type != c.msgs[i].Type || x.To != c.msgs[i].To {
					t.Fatalf("message %d is %v to %d, want %v to %d (order changed)", i, x.Type, x.To, c.msgs[i].Type, c.msgs[i].To)
				}
			}
			for _, x := range first {
				switch x.Type {
				case raftpb.MsgAppResp, raftpb.MsgVoteResp, raftpb.MsgPreVoteResp, raftpb.MsgSnap:
					t.Fatalf("%v sent before the persist", x.Type)
				}
			}
		})
	}
}
