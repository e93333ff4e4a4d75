package raftnode

import (
	"net"
	"sync"
	"time"
)

// Per-source limits on the peer port. A member dials each peer once and
// again only after a connection breaks (with backoff), and probes a few
// times a second at most while it forms or joins; a source that opens
// connections faster is not a member doing its job. Each source address
// (the IP, not the port) has a token bucket: acceptRate connections a
// second, acceptBurst at once; a connection beyond it is closed before
// its hello is read. The table of sources is bounded (maxSources); when
// full, the sources that were idle longest are forgotten.
const (
	acceptRate  = 100
	acceptBurst = 200
	maxSources  = 4096
)

// acceptLimiter is the per-source token buckets of one transport.
type acceptLimiter struct {
	mu      sync.Mutex // guards sources, refused
	sources map[string]*bucket
	refused uint64 // connections closed by the limit (logged by the caller)
}

type bucket struct {
	tokens float64
	last   time.Time
}

// allow reports whether a connection from addr may be served now.
func (l *acceptLimiter) allow(addr net.Addr, now time.Time) bool {
	host := addr.String()
	if ta, ok := addr.(*net.TCPAddr); ok {
		host = ta.IP.String()
	} else if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sources == nil {
		l.sources = make(map[string]*bucket)
	}
	b := l.sources[host]
	if b == nil {
		if len(l.sources) >= maxSources {
			l.forgetIdle(now)
		}
		b = &bucket{tokens: acceptBurst, last: now}
		l.sources[host] = b
	}
	b.tokens = min(acceptBurst, b.tokens+now.Sub(b.last).Seconds()*acceptRate)
	b.last = now
	if b.tokens < 1 {
		l.refused++
		return false
	}
	b.tokens--
	return true
}

// forgetIdle drops the buckets that are full again (their sources were
// idle long enough to have their whole burst back), or all of them if
// none is. l.mu is held.
func (l *acceptLimiter) forgetIdle(now time.Time) {
	for h, b := range l.sources {
		if b.tokens+now.Sub(b.last).Seconds()*acceptRate >= acceptBurst {
			delete(l.sources, h)
		}
	}
	if len(l.sources) >= maxSources {
		clear(l.sources)
	}
}

// everyLimiter allows one event every limitLogEvery (a log line).
type everyLimiter struct {
	mu   sync.Mutex // guards last
	last time.Time
}

const limitLogEvery = 10 * time.Second

func (l *everyLimiter) Allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < limitLogEvery {
		return false
	}
	l.last = now
	return true
}
