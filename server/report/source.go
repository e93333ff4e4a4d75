package report

import (
	"strings"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/server/metrics"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

// Source is what the server offers the reports: its state, its views and
// the actions of the words that act. The server implements it; every
// method may be called on any goroutine (a client connection answering a
// four-letter word, an AdminServer request) and takes what locks it needs
// briefly.
type Source interface {
	// Running: the server serves requests (a member with a quorum, or
	// serving read-only), what ZooKeeper's commands that need a running
	// server check. HasQuorum, ReadOnly, Clustered and IsLeader are the
	// parts; WaitingFor says what a member without a quorum waits for
	// ("" if nothing).
	Running() bool
	HasQuorum() bool
	ReadOnly() bool
	Clustered() bool
	IsLeader() bool
	WaitingFor() string

	ServerStats() ServerStats
	Gauges() metrics.Gauges
	// Conns are the handshaken client connections, oldest first.
	Conns() []ConnInfo
	Conf() Conf
	// ConfigDump, if not nil, is what conf prints instead of Conf (the
	// zoo.cfg the server was started from).
	ConfigDump() []string
	InitialConfig() string
	Environment() []EnvEntry
	Monitor() []MonitorValue
	Watches() *watch.Manager
	SessionDump() SessionDump
	DirSizes() (dataDir, logDir int64)
	DigestLog() []tree.ZxidDigest
	// LastSnapshot: the newest durable snapshot's zxid and time (unix
	// seconds), -1 and -1 without one.
	LastSnapshot() (zxid, unixSec int64)
	Leader() LeaderView
	Observers() []ObserverInfo
	VotingMembers() []config.Server
	ZabState() ZabState

	// ResetConnectionStats and ResetServerStats are crst and srst.
	ResetConnectionStats()
	ResetServerStats()
	TraceMask() int64
	SetTraceMask(mask int64)
	// The operator actions (ClickHouse Keeper's words): hand leadership
	// to another voter (the new leader's id), take it (this member's id),
	// schedule a snapshot (the last committed index), and read the log's
	// bounds.
	YieldLeadership() (int64, error)
	RequestLeadership() (int64, error)
	CreateSnapshot() (uint64, error)
	LogInfo() ([]KV, error)

	// Heavy returns compute's output under key, computed at most once a
	// second and one at a time (see the package comment).
	Heavy(key string, compute func() string) string
}

// FourLetterText returns a four-letter word's output.
func FourLetterText(src Source, cmd string) string {
	var b strings.Builder
	fourLetterText(src, cmd, &b)
	return b.String()
}
