package clientport

import (
	"sync"
	"time"
)

// connThrottle is a token bucket that new client connections draw from
// (ZooKeeper's connection_throttle_tokens, _fill_time and _fill_count,
// without its probabilistic dropping): a connection accepted when the
// bucket is empty is closed at once. Called by the accept loops.
type connThrottle struct {
	tokens    int           // bucket size
	fillEvery time.Duration // a fill of fillCount tokens every fillEvery
	fillCount int

	mu      sync.Mutex // guards have, filled, warned
	have    int
	filled  time.Time // when the bucket was last filled
	warned  time.Time // when a refusal was last logged
	refused int64     // connections refused since the last log line
}

func newConnThrottle(tokens int, fillEvery time.Duration, fillCount int, now time.Time) *connThrottle {
	if tokens <= 0 {
		return nil
	}
	return &connThrottle{tokens: tokens, fillEvery: max(fillEvery, time.Millisecond), fillCount: max(fillCount, 1),
		have: tokens, filled: now}
}

// take takes a token for a new connection at now, and reports whether
// there was one (true when the throttle is off). logNow is set when a
// refusal should be logged (at most once a second), with the number of
// refusals since the last log line.
func (t *connThrottle) take(now time.Time) (ok bool, logNow bool, refused int64) {
	if t == nil {
		return true, false, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if fills := int(now.Sub(t.filled) / t.fillEvery); fills > 0 {
		t.have = min(t.tokens, t.have+fills*t.fillCount)
		t.filled = t.filled.Add(time.Duration(fills) * t.fillEvery)
	}
	if t.have > 0 {
		t.have--
		return true, false, 0
	}
	t.refused++
	if now.Sub(t.warned) >= time.Second {
		t.warned = now
		n := t.refused
		t.refused = 0
		return false, true, n
	}
	return false, false, 0
}
