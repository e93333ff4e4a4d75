package server

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// Polling a heavy four-letter word computes it at most once per heavyTTL
// (CVE-2017-5637: polled dump/wchp/wchc/cons must not starve writes).
func TestHeavyFourLetterWordsComputedOncePerTTL(t *testing.T) {
	s, err := New(Options{Addr: "127.0.0.1:0", TickTime: 50 * time.Millisecond, FourLetterWords: []string{"*"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const polls = 30
	start := time.Now()
	for i := 0; i < polls; i++ {
		for _, w := range []string{"dump", "wchp"} {
			nc, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			nc.Write([]byte(w))
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			out, err := io.ReadAll(nc)
			nc.Close()
			if err != nil || w == "dump" && len(out) == 0 {
				t.Fatalf("%s: %q, %v", w, out, err)
			}
		}
	}
	elapsed := time.Since(start)
	// Each word is computed once, then again each time its output is
	// older than heavyTTL.
	max := 2 * (int64(elapsed/heavyTTL) + 1)
	if runs := s.heavy.runs.Load(); runs > max {
		t.Fatalf("%d computations for %d polls of 2 words in %v (at most %d)", runs, polls, elapsed, max)
	}
}

// A connection's request takes a slot of its own limit and one of the
// server's (globalOutstandingLimit); at the server's limit the reader
// waits until some request anywhere is answered.
func TestGlobalOutstandingLimit(t *testing.T) {
	s := &Server{inflight: make(chan struct{}, 2)}
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
