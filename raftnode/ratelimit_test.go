package raftnode

import (
	"net"
	"testing"
	"time"
)

// Each source gets its burst, then acceptRate a second; other sources
// are not affected; the table stays bounded.
func TestAcceptLimiter(t *testing.T) {
	var l acceptLimiter
	now := time.Unix(1000, 0)
	a := &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}
	b := &net.TCPAddr{IP: net.ParseIP("10.0.0.2"), Port: 2}
	for i := range acceptBurst {
		if !l.allow(&net.TCPAddr{IP: a.IP, Port: i}, now) {
			t.Fatalf("connection %d of the burst refused", i)
		}
	}
	if l.allow(a, now) {
		t.Fatal("a connection beyond the burst was allowed")
	}
	if !l.allow(b, now) {
		t.Fatal("another source was refused")
	}
	now = now.Add(time.Second / acceptRate)
	if !l.allow(a, now) {
		t.Fatal("no token after 1/rate s")
	}
	if l.allow(a, now) {
		t.Fatal("two tokens after 1/rate s")
	}
	for i := range 3 * maxSources {
		l.allow(&net.TCPAddr{IP: net.IPv4(11, byte(i>>16), byte(i>>8), byte(i))}, now)
		if len(l.sources) > maxSources {
			t.Fatalf("%d sources kept", len(l.sources))
		}
	}
}
