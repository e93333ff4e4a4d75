package clientport

import (
	"net/netip"

	"github.com/zkgo/zkgo/server/metrics"
)

// Gauges fills in the connections' gauges: parked, alive (handshaken),
// outstanding requests, non-mTLS connections, local sessions.
func (s *Port) Gauges(g *metrics.Gauges) {
	if s.idle != nil {
		g.ParkedConnections = s.idle.count()
	}
	s.connsMu.Lock()
	for c := range s.conns {
		if !c.handshaken.Load() {
			continue
		}
		g.AliveConnections++
		g.Outstanding += len(c.slots)
		if !c.mtls {
			if isLoopback(c.remoteIP) {
				g.NonMTLSLocal++
			} else {
				g.NonMTLSRemote++
			}
		}
		if c.localSession {
			g.LocalSessions++
		}
	}
	s.connsMu.Unlock()
}

// isLoopback reports whether ip (a connection's remote address, without
// the port) is a loopback address: ZooKeeper's "local" connections.
func isLoopback(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Unmap().IsLoopback()
}
