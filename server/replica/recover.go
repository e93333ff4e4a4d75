package replica

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/tree"
)

// Recovery from the loss of a quorum for good (ClickHouse Keeper's rcvr,
// etcd's --force-new-cluster; with Apache ZooKeeper, a restore). A member
// whose ensemble lost a majority of its members for good can never
// commit again. RecoverDataDir, on that member stopped, turns its data
// into a standalone server's — its state with every entry its log holds
// applied (an acknowledged write was stored by a majority; if this
// member holds it, it is kept) — and keeps the old directory beside it.
// Started again with its zoo.cfg, the member converts that data as it
// converts any standalone's (convert.go): a new log whose only voter is
// this member, under a formation of its own, so the lost members' data
// can never rejoin. With the same zoo.cfg, new members started with empty
// data directories at the lost ones' addresses join it and receive the
// state; with a zoo.cfg listing it alone (standaloneEnabled=false,
// reconfigEnabled=true), it serves at once and grows back by reconfig.

// recoveredDir is where RecoverDataDir keeps the data it recovered from.
const recoveredDir = "zkgo.before-recovery"

// RecoverDataDir recovers the stopped member's data directory (see
// above) and returns the tree it recovered and the old directory's new
// name. It takes the directory's lock, so it fails while the member runs.
// Caller: zkgo recover (cmd/zkgo).
func RecoverDataDir(opts Config) (*tree.Tree, string, error) {
	t, last, err := loadDataDir(opts, true)
	if err != nil {
		return nil, "", err
	}
	dir := opts.DataDir
	if opts.DataLogDir != "" {
		dir = opts.DataLogDir
	}
	zdir := filepath.Join(dir, "zkgo")
	kept := filepath.Join(dir, fmt.Sprintf("%s-%d", recoveredDir, time.Now().Unix()))
	if err := os.Rename(zdir, kept); err != nil {
		return nil, "", err
	}
	if err := syncDirOf(dir); err != nil {
		return nil, "", err
	}
	// A standalone's log (raft id 1, no ensemble identity) at the old
	// log's last index: zxids go on above every one a client saw.
	if err := seedTree(zdir, opts, t, 1, []raftnode.Peer{{ID: 1}}, max(last, 1), nil); err != nil {
		os.Rename(kept, zdir) // back as it was
		return nil, "", err
	}
	return t, kept, syncDirOf(dir)
}

// syncDirOf fsyncs directory dir (a rename in it is durable then).
func syncDirOf(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
