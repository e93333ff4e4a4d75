package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/metrics"
)

// ServerStats is srvr/stat's summary and the AdminServer's server_stats.
type ServerStats struct {
	Version        string
	ReadOnly       bool
	Mode           string
	MinLat         int64
	AvgLat         float64
	MaxLat         int64
	Received, Sent int64
	Connections    int
	Outstanding    int
	LastZxid       int64
	NodeCount      int
	Uptime         time.Duration
	Response       metrics.ResponseSizes
}

// ConnInfo is a connection as cons and stat show it (ZooKeeper's
// ServerCnxn.getConnectionInfo).
type ConnInfo struct {
	Remote      string
	Secure      bool
	InterestOps int // 1 (reading), as a Java NIO connection that is not writing reports
	Outstanding int
	Received    int64
	Sent        int64
	// The rest are cons's (full) fields.
	SessionID          int64
	LastOp             string
	Established        int64 // unix ms
	Timeout            int64 // ms
	LastCxid, LastZxid int64
	LastResp           int64 // unix ms
	LastLat            int64
	MinLat, AvgLat     int64
	MaxLat             int64
}

// Text formats a connection as ZooKeeper's cons (full) and stat do.
func (ci ConnInfo) Text(full bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, " /%s[%d](queued=%d,recved=%d,sent=%d", ci.Remote, ci.InterestOps, ci.Outstanding, ci.Received, ci.Sent)
	if full && ci.SessionID != 0 {
		fmt.Fprintf(&b, ",sid=%s,lop=%s,est=%d,to=%d", proto.SessionIDHex(ci.SessionID), ci.LastOp, ci.Established, ci.Timeout)
		if ci.LastCxid >= 0 {
			fmt.Fprintf(&b, ",lcxid=0x%x", ci.LastCxid)
		}
		fmt.Fprintf(&b, ",lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			uint64(ci.LastZxid), ci.LastResp, ci.LastLat, ci.MinLat, ci.AvgLat, ci.MaxLat)
	}
	b.WriteString(")")
	return b.String()
}

// Conf is conf and configuration: the settings ZooKeeper's
// ZooKeeperServerConf holds.
type Conf struct {
	ClientPort          int
	SecureClientPort    int
	DataDir, DataLogDir string
	TickTime            int64
	MaxClientCnxns      int
	MinSessionTimeout   int64
	MaxSessionTimeout   int64
	ServerID            int64
}

// EnvEntry is one line of envi / one field of environment.
type EnvEntry struct{ Key, Value string }

// SessionDump is dump's content: the sessions by expiry time (the
// deadline the member tracks, rounded up to the tick as ZooKeeper's
// expiry buckets are, in unix ms) and the ephemeral nodes by session.
type SessionDump struct {
	Sessions   []int64 // every session, sorted
	Timeouts   map[int64]int32
	Expiry     map[int64][]int64 // deadline (unix ms) → sorted sessions
	Ephemerals map[int64][]string
	WithEph    []int64 // sessions owning ephemerals, sorted
}

// MonitorValue is one line of mntr and one field of monitor. ZooKeeper's
// keys are written without their zk_ prefix (monitor's names); zkgo's own
// keep their zkgo_ name in both.
type MonitorValue struct {
	Key   string
	Value any // int, int64, float64, bool or string
	Own   bool
}

// TextKey is the key mntr prints.
func (m MonitorValue) TextKey() string {
	if m.Own {
		return m.Key
	}
	return "zk_" + m.Key
}

// LeaderView is lead/leader on an ensemble member: whether it leads, and
// the leader's server id (-1 without one) and peer host.
type LeaderView struct {
	IsLeader bool
	LeaderID int64
	LeaderIP string
}

// ObserverInfo is an observer as the leader sees it (observers/obsr).
type ObserverInfo struct {
	Addr     string
	SID      int64
	LastZxid int64 // the index raft knows it holds
}

// ZabState is zabstate in raft's terms: a member with a leader
// "broadcast"s, one without is in "election"; zxids are raft indexes, so
// the epoch is 0 until an index passes 2^32.
type ZabState struct {
	Clustered     bool // false: standalone, nothing else is set
	MyID          int64
	IsLeader      bool
	QuorumAddress string
	ElectionAddr  string
	ClientAddress string
	Voting        bool
	LastZxid      int64
	Broadcast     bool // has a leader and a quorum
}

// KV is one line of lgif (ClickHouse Keeper's order and names).
type KV struct {
	Key   string
	Value uint64
}
