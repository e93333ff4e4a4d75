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
