package raftnode

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// When the leader's process is gone — its connections close and its peer
// port refuses new ones — a follower campaigns at once. The clocks are
// manual and stop once the first leader is elected, so no election
// timeout can ever elect the second: only the refusal can.
func TestLeaderGoneElectsWithoutTimeout(t *testing.T) {
	c, _ := newTCPCluster(t, 3)
	ticks := map[uint64]chan struct{}{}
	for _, id := range []uint64{1, 2, 3} {
		ticks[id] = make(chan struct{})
	}
	c.mod = func(cfg *Config) { cfg.Ticks = ticks[cfg.ID] }
	c.startAll()
	stop := tickAll(ticks, 1, 2, 3)
	c.waitLeader()
	stop()
	// The clocks stopped: once all three name the same leader, no
	// election is under way, and none can start.
	var first uint64
	c.waitFor("one leader named by all", func() bool {
		l := c.nodes[1].Leader()
		if l == 0 || c.nodes[2].Leader() != l || c.nodes[3].Leader() != l {
			return false
		}
		first = l
		return true
	})
	c.propose(first, "before")

	var survivors []uint64
	for _, id := range []uint64{1, 2, 3} {
		if id != first {
			survivors = append(survivors, id)
		}
	}
	c.stop(first)
	var second uint64
	c.waitFor("a new leader without any tick", func() bool {
		l := c.nodes[survivors[0]].Leader()
		if l == 0 || l == first || c.nodes[survivors[1]].Leader() != l {
			return false
		}
		second = l
		return true
	})
	// The lower surviving id campaigns first, alone.
	if second != survivors[0] {
		t.Errorf("member %d leads; want %d, the lower surviving id", second, survivors[0])
	}
	if got := c.nodes[second].Status().FastElections; got != 1 {
		t.Errorf("the new leader started %d fast elections; want 1", got)
	}
	c.propose(second, "after", survivors...)
}

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// downRecorder is a recorder that is also a PeerDownHandler.
type downRecorder struct {
	*recorder
	down atomic.Int64
}

func (r *downRecorder) PeerDown(uint64) { r.down.Add(1) }

// A live peer's connection ending makes a member check whether the peer's
// process is gone: it dials the peer, which answers, and closes that dial.
// The peer must not take the end of that message-less connection for a
// reason to check back: two members would then answer each other's
// probes with probes, without end, until the peer port's per-source rate
// limit refused their connections (it did once, in CI).
func TestGoneCheckIsNotAnsweredWithACheck(t *testing.T) {
	start := func(id uint64) (*TCPTransport, *downRecorder, *countingListener) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cl := &countingListener{Listener: ln}
		tr, err := NewTCPTransport(TCPConfig{ID: id, ClusterID: 1, Listener: cl, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rec := &downRecorder{recorder: newRecorder()}
		if err := tr.Start(rec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.Stop)
		return tr, rec, cl
	}
	a, arec, aln := start(1)
	b, brec, bln := start(2)
	a.AddPeer(2, b.Addr().String())
	b.AddPeer(1, a.Addr().String())
	b.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 2, To: 1, Term: 1}})
	recv(t, arec.msgs, "the heartbeat from 2")
	// Each side dials the other once it knows it (AddPeer).
	waitAccepted := func(what string, na, nb int64) {
		t.Helper()
		deadline := time.Now().Add(waitTimeout)
		for aln.n.Load() < na || bln.n.Load() < nb {
			if time.Now().After(deadline) {
				t.Fatalf("%s: 1 accepted %d connections, 2 accepted %d", what, aln.n.Load(), bln.n.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitAccepted("the writers' connections", 1, 1)
	na, nb := aln.n.Load(), bln.n.Load()

	// 1 closes the connection that carried the heartbeat: its reader sees
	// it end, and 1 checks on 2 (one dial). 2's writer sees its
	// connection end too, and checks on 1 (one dial).
	a.mu.Lock()
	for c := range a.inbound {
		c.Close()
	}
	a.mu.Unlock()
	waitAccepted("the checks", na+1, nb+1)
	// A check and its answer take about a millisecond on loopback: a
	// ping-pong would have made dozens of dials in this time.
	time.Sleep(20 * goneProbeGap)
	if da, db := aln.n.Load()-na, bln.n.Load()-nb; da != 1 || db != 1 {
		t.Fatalf("checks answered with checks: 1 accepted %d connections since, 2 accepted %d (want 1 each)", da, db)
	}
	if arec.down.Load() != 0 || brec.down.Load() != 0 {
		t.Fatalf("a live peer reported down: %d, %d", arec.down.Load(), brec.down.Load())
	}
}
