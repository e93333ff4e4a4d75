package zkdata

import (
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/tree"
)

// ReadOptions bound what the readers accept. The zero value uses the
// defaults. Every length and count read from a file is checked against
// them before anything is allocated for it.
type ReadOptions struct {
	// MaxBuffer is jute.maxbuffer: it bounds a node's data, a path, a
	// string and a log entry, in bytes, plus the 1024 bytes of slack
	// ZooKeeper's reader allows (zookeeper.jute.maxbuffer.extrasize).
	// 0 means jute.DefaultMaxBuffer (0xfffff).
	MaxBuffer int
	// MaxNodes bounds the number of znodes of a snapshot; 0 means
	// tree.DefaultMaxSnapshotNodes.
	MaxNodes int
	// MaxSessions bounds the number of sessions of a snapshot; 0 means
	// tree.DefaultMaxSnapshotSessions.
	MaxSessions int
	// MaxACLs bounds the number of ACL lists in a snapshot's ACL cache
	// and the entries of one list; 0 means DefaultMaxACLs.
	MaxACLs int
	// MaxSnapshots is how many snapshots ReadDir tries, newest first,
	// before it gives up; 0 means 100, as ZooKeeper.
	MaxSnapshots int
}

const (
	// DefaultMaxACLs is ReadOptions.MaxACLs when 0.
	DefaultMaxACLs = 1 << 20
	// juteExtra is ZooKeeper's default zookeeper.jute.maxbuffer.extrasize.
	juteExtra = 1024
)

type limits struct {
	buf, nodes, sessions, acls, snapshots int
}

func (o ReadOptions) limits() limits {
	l := limits{buf: o.MaxBuffer, nodes: o.MaxNodes, sessions: o.MaxSessions, acls: o.MaxACLs, snapshots: o.MaxSnapshots}
	if l.buf <= 0 {
		l.buf = jute.DefaultMaxBuffer
	}
	l.buf = min(l.buf, 1<<30) + juteExtra
	if l.nodes <= 0 {
		l.nodes = tree.DefaultMaxSnapshotNodes
	}
	if l.sessions <= 0 {
		l.sessions = tree.DefaultMaxSnapshotSessions
	}
	if l.acls <= 0 {
		l.acls = DefaultMaxACLs
	}
	if l.snapshots <= 0 {
		l.snapshots = 100
	}
	return l
}
