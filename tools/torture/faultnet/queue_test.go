package faultnet

import (
	"testing"
	"time"
)

// The queue takes units up to its byte limit (one larger unit when it is
// empty), then holds the pusher until a pop makes room; done releases
// both sides.
func TestQueueBound(t *testing.T) {
	q := newQueue(10)
	done := make(chan struct{})
	chunk := func(k int) timedUnit { return timedUnit{unit: unit{b: make([]byte, k)}} }

	if !q.push(chunk(25), done) {
		t.Fatal("an empty queue refused a unit over its limit")
	}
	pushed := make(chan bool, 1)
	go func() { pushed <- q.push(chunk(5), done) }()
	select {
	case <-pushed:
		t.Fatal("a push over the limit did not wait")
	case <-time.After(quiet):
	}
	if u, ok := q.pop(done, nil); !ok || len(u.b) != 25 {
		t.Fatalf("pop: %d bytes, %v", len(u.b), ok)
	}
	if !<-pushed {
		t.Fatal("the waiting push failed")
	}
	if !q.push(chunk(5), done) {
		t.Fatal("a push within the limit failed")
	}
	if q.bytes != 10 {
		t.Fatalf("queued %d bytes, want 10", q.bytes)
	}

	timeout := time.After(time.Millisecond)
	q.pop(done, nil)
	q.pop(done, nil)
	if _, ok := q.pop(done, timeout); ok {
		t.Fatal("pop of an empty queue returned a unit")
	}
	close(done)
	if _, ok := q.pop(done, nil); ok {
		t.Fatal("pop after done returned a unit")
	}
}
