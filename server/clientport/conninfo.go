package clientport

import (
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/report"
)

// Info reads c as cons and stat show it.
func (c *Conn) Info() report.ConnInfo {
	lastOp := "NA"
	if v := c.lastOp.Load(); v != 0 {
		if o := proto.Op(proto.OpCode(int32(uint32(v)))); o != nil {
			lastOp = o.Abbrev
		}
	}
	minLat, avg, maxLat, llat := c.lat.Get()
	return report.ConnInfo{
		Remote:      c.raw.RemoteAddr().String(),
		Secure:      c.secure,
		InterestOps: 1,
		Outstanding: len(c.slots),
		Received:    c.packetsIn.Load(),
		Sent:        c.packetsOut.Load(),
		SessionID:   c.sessionID,
		LastOp:      lastOp,
		Established: c.created.UnixMilli(),
		Timeout:     c.timeout.Milliseconds(),
		LastCxid:    int64(c.lastXid.Load()),
		LastZxid:    c.lastZxid.Load(),
		LastResp:    c.lastResp.Load(),
		LastLat:     llat,
		MinLat:      minLat,
		AvgLat:      int64(avg),
		MaxLat:      maxLat,
	}
}

// ResetStats is crst for one connection: as ZooKeeper's
// ServerCnxn.resetStats, the packet counts and latencies start over and
// the last operation, cxid and zxid read "none" (NA, -1, -1).
func (c *Conn) ResetStats() {
	c.packetsIn.Store(0)
	c.packetsOut.Store(0)
	c.lat.Reset()
	c.lastOp.Store(0)
	c.lastXid.Store(-1)
	c.lastZxid.Store(-1)
	c.lastResp.Store(0)
}

// AuthIDs are the identities the connection authenticated as.
func (c *Conn) AuthIDs() []proto.Id { return *c.auth.Load() }

// Outstanding is how many of the connection's requests are in flight.
func (c *Conn) Outstanding() int { return len(c.slots) }
