package zkdata

import (
	"io"
	"os"

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
	// Progress, if set, is told as the files are read: the file's name,
	// the bytes read from it so far and its size (on the reading
	// goroutine, at most every 64 KiB; zkgo import draws its progress bar
	// with it).
	Progress func(file string, done, size int64)
}

const (
	// DefaultMaxACLs is ReadOptions.MaxACLs when 0.
	DefaultMaxACLs = 1 << 20
	// juteExtra is ZooKeeper's default zookeeper.jute.maxbuffer.extrasize.
	juteExtra = 1024
)

type limits struct {
	buf, nodes, sessions, acls, snapshots int
	progress                              func(file string, done, size int64)
}

// progressReader tells l.progress how much of a file was read.
type progressReader struct {
	r          io.Reader
	name       string
	done, size int64
	last       int64 // done when progress was last told
	fn         func(file string, done, size int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if p.done-p.last >= 64<<10 || (p.done != p.last && (err != nil || p.done == p.size)) {
		p.last = p.done
		p.fn(p.name, p.done, p.size)
	}
	return n, err
}

// track wraps f (named name) so that its reading is reported, if l asks.
func (l limits) track(f *os.File, name string) io.Reader {
	if l.progress == nil {
		return f
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return &progressReader{r: f, name: name, size: size, fn: l.progress}
}

func (o ReadOptions) limits() limits {
	l := limits{buf: o.MaxBuffer, nodes: o.MaxNodes, sessions: o.MaxSessions, acls: o.MaxACLs, snapshots: o.MaxSnapshots, progress: o.Progress}
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
