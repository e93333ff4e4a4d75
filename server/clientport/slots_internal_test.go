package clientport

import (
	"testing"
	"time"
)

// A connection's request takes a slot of its own limit and one of the
// server's (globalOutstandingLimit); at the server's limit the reader
// waits until some request anywhere is answered.
func TestGlobalOutstandingLimit(t *testing.T) {
	s := &Port{inflight: make(chan struct{}, 2)}
	c := &Conn{s: s, slots: make(chan struct{}, 5), closed: make(chan struct{})}
	other := &Conn{s: s, slots: make(chan struct{}, 5), closed: make(chan struct{})}
	if !c.acquireSlot() || !other.acquireSlot() {
		t.Fatal("slots under the limits refused")
	}
	done := make(chan bool, 1)
	go func() { done <- c.acquireSlot() }()
	// The waiting reader holds its connection's slot, not the server's.
	for len(c.slots) != 2 {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("a request beyond the server's limit was taken")
	default:
	}
	other.release() // a reply on another connection frees a server slot
	if !<-done {
		t.Fatal("acquire failed")
	}
	if len(s.inflight) != 2 || len(c.slots) != 2 || len(other.slots) != 0 {
		t.Fatalf("slots: server %d, c %d, other %d", len(s.inflight), len(c.slots), len(other.slots))
	}
	// A connection that closes while waiting gives its slot back.
	go func() { done <- c.acquireSlot() }()
	for len(c.slots) != 3 {
		time.Sleep(time.Millisecond)
	}
	close(c.closed)
	if <-done || len(c.slots) != 2 || len(s.inflight) != 2 {
		t.Fatalf("after close: ok, c %d, server %d", len(c.slots), len(s.inflight))
	}
	c.release()
	c.release()
	if len(s.inflight) != 0 || len(c.slots) != 0 {
		t.Fatalf("after releases: server %d, c %d", len(s.inflight), len(c.slots))
	}
}

// A connection that closes with requests outstanding — a write whose
// proposal was lost, reads queued behind it, never to be answered — gives
// the server's slots back; a late answer to one of them frees nothing
// more, and a reader that got its slots as the connection closed gives
// them back too. (Before, every such request kept a server slot forever,
// and after globalOutstandingLimit of them — one leader change under
// load — the member served no client again.)
func TestClosedConnectionFreesSlots(t *testing.T) {
	s := &Port{inflight: make(chan struct{}, 4)}
	c := &Conn{s: s, slots: make(chan struct{}, 5), closed: make(chan struct{})}
	other := &Conn{s: s, slots: make(chan struct{}, 5), closed: make(chan struct{})}
	for range 3 {
		if !c.acquireSlot() {
			t.Fatal("slot under the limits refused")
		}
	}
	if !other.acquireSlot() {
		t.Fatal("slot under the limits refused")
	}
	c.release() // one of c's requests is answered
	close(c.closed)
	c.freeSlots() // as close does
	if len(s.inflight) != 1 || len(c.slots) != 0 {
		t.Fatalf("after close: server %d (want 1: other's), c %d", len(s.inflight), len(c.slots))
	}
	c.release() // a write applied after all: nothing more to free
	if len(s.inflight) != 1 {
		t.Fatalf("a late release freed another connection's slot: server %d", len(s.inflight))
	}
	if c.acquireSlot() || len(s.inflight) != 1 || len(c.slots) != 0 {
		t.Fatalf("a closed connection took slots: server %d, c %d", len(s.inflight), len(c.slots))
	}
	// The server's limit is whole again.
	for range 3 {
		if !other.acquireSlot() {
			t.Fatal("slot refused")
		}
	}
	if len(s.inflight) != 4 {
		t.Fatalf("server %d, want 4", len(s.inflight))
	}
}

// The connection throttle is a token bucket: tokens connections at
// once, then fillCount more per fillEvery; refusals are logged at most
// once a second with their count.
func TestConnThrottle(t *testing.T) {
	if ok, _, _ := (*connThrottle)(nil).take(time.Now()); !ok || newConnThrottle(0, time.Second, 1, time.Now()) != nil {
		t.Fatal("a throttle with no tokens is not off")
	}
	t0 := time.Unix(1000, 0)
	th := newConnThrottle(3, 100*time.Millisecond, 2, t0)
	for i := 0; i < 3; i++ {
		if ok, _, _ := th.take(t0); !ok {
			t.Fatalf("connection %d refused with tokens left", i)
		}
	}
	ok, logNow, n := th.take(t0)
	if ok || !logNow || n != 1 {
		t.Fatalf("empty bucket: ok %v log %v refused %d", ok, logNow, n)
	}
	if ok, logNow, _ := th.take(t0.Add(50 * time.Millisecond)); ok || logNow {
		t.Fatalf("still empty: ok %v, logged again within a second: %v", ok, logNow)
	}
	// One fill: two tokens.
	now := t0.Add(100 * time.Millisecond)
	for i := 0; i < 2; i++ {
		if ok, _, _ := th.take(now); !ok {
			t.Fatalf("after a fill, connection %d refused", i)
		}
	}
	if ok, _, _ := th.take(now); ok {
		t.Fatal("a third connection after one fill of two")
	}
	// Many fills: the bucket holds at most its size.
	now = now.Add(time.Hour)
	for i := 0; i < 3; i++ {
		if ok, _, _ := th.take(now); !ok {
			t.Fatalf("after an hour, connection %d refused", i)
		}
	}
	ok, logNow, n = th.take(now)
	if ok || !logNow || n != 3 {
		t.Fatalf("bucket over its size, or refusals not counted: ok %v log %v refused %d", ok, logNow, n)
	}
}
