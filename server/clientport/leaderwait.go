package clientport

import "time"

// Holding handshakes through an election.
//
// A member without a leader serves no client: it refuses their handshakes
// (docs/decisions/0019). When the leader dies every member is without one
// for an election, and every client of the ensemble — those of the dead
// leader and those the followers dropped — reconnects at once: refused,
// each backs off (zkgo's client up to 1 s between passes, ZooKeeper's
// Java client a random second), so most reconnect a second or more after
// the new leader is there. For Config.HoldHandshakes after it lost its
// leader (or started), a member instead holds a handshake it cannot serve
// until a leader is back, and answers it then. After that window — a
// partitioned member, say — it refuses at once again, so that clients go
// on to a member that serves.

// LeaderChanged tells the port that the member has a leader (or none):
// the server calls it on every change the replica reports.
func (s *Port) LeaderChanged(hasLeader bool) {
	s.leaderMu.Lock()
	defer s.leaderMu.Unlock()
	if hasLeader {
		close(s.leaderCh)
		s.leaderCh = make(chan struct{})
	} else {
		s.lostAt = time.Now()
	}
}

// awaitLeader waits, while the member is in the window after losing its
// leader, until it has one; it reports whether it has. It returns false
// at once outside the window, or when the connection or the port closes.
func (c *Conn) awaitLeader() bool {
	s := c.s
	for {
		s.leaderMu.Lock()
		ch, left := s.leaderCh, s.opts.HoldHandshakes-time.Since(s.lostAt)
		s.leaderMu.Unlock()
		if s.hasQuorum() {
			return true
		}
		if left <= 0 {
			return false
		}
		t := time.NewTimer(left)
		select {
		case <-ch:
		case <-t.C:
		case <-c.closed:
			t.Stop()
			return false
		case <-s.done:
			t.Stop()
			return false
		}
		t.Stop()
	}
}
