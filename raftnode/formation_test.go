package raftnode

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// A member left over from an earlier formation of an ensemble (same
// member list, so the same cluster id) is refused by the new formation at
// every stage; members of one formation get through while it is chosen.
func TestTCPFormations(t *testing.T) {
	const a, b = 0x2a2a2a2a2a2a, 0x3b3b3b3b3b3b
	for _, tt := range []struct {
		acceptor, dialer uint64
		ok               bool
	}{
		{0, 0, true},
		{0, FormationPending, false},
		{0, a, false},
		{FormationPending, FormationPending, true},
		{FormationPending, 0, false},
		{FormationPending, a, false},
		{a, a, true},
		{a, FormationPending, true},
		{a, b, false},
		{a, 0, false},
	} {
		t.Run(fmt.Sprintf("%s<-%s", FormationString(tt.acceptor), FormationString(tt.dialer)), func(t *testing.T) {
			refused := make(chan uint64, 4)
			acc, rec := newTCPWith(t, 2, func(c *TCPConfig) {
				c.FormationRefused = func(from, f uint64) { refused <- f }
			})
			acc.SetFormation(tt.acceptor)
			dial, _ := newTCPWith(t, 1, func(*TCPConfig) {})
			dial.SetFormation(tt.dialer)
			c, err := dial.dial(&tcpPeer{id: 2, addr: acc.Addr().String(), ctx: context.Background()})
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				defer c.Close()
				m := raftpb.Message{Type: raftpb.MsgHeartbeat, From: 1, To: 2}
				d, _ := m.Marshal()
				if err := writeFrame(c, d); err != nil {
					t.Fatal(err)
				}
				if m := recv(t, rec.msgs, "a message"); m.From != 1 {
					t.Fatalf("from %d", m.From)
				}
				return
			}
			if !errors.Is(err, ErrHandshake) {
				t.Fatalf("dial: %v", err)
			}
			if f := recv(t, refused, "FormationRefused"); f != tt.dialer {
				t.Fatalf("FormationRefused(%x), want %x", f, tt.dialer)
			}
		})
	}
}
