package raftnode

import (
	"testing"
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
