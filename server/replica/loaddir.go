package replica

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"go.etcd.io/raft/v3"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/storage"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

// LoadDataDir returns the tree a stopped member's data directory holds
// (DataLogDir/zkgo, or DataDir/zkgo): its newest snapshot with every
// committed entry of its log after it applied, as the member would
// restore it when it starts. Entries the member wrote but did not know to
// be committed are not applied (the ensemble may not have them). It takes
// the data directory's lock, so it fails while the member runs. Callers:
// zkgo export and the snapshot commands (cmd/zkgo), tests.
func LoadDataDir(opts Config) (*tree.Tree, error) {
	t, _, err := loadDataDir(opts, false)
	return t, err
}

// loadDataDir is LoadDataDir; with whole, every entry the log holds is
// applied, committed or not — right for a log whose only voter was this
// member (a standalone server's), where every stored entry is committed
// once it leads again — and last is the log's last index.
func loadDataDir(opts Config, whole bool) (_ *tree.Tree, last uint64, _ error) {
	dir := opts.DataDir
	if opts.DataLogDir != "" {
		dir = opts.DataLogDir
	}
	zdir := filepath.Join(dir, "zkgo")
	if dir == "" || !storage.Exists(zdir) {
		return nil, 0, fmt.Errorf("no zkgo data in %q", dir)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := storage.Open(zdir, storage.Options{Logger: log})
	if err != nil {
		return nil, 0, fmt.Errorf("open data directory: %w", err)
	}
	defer st.Close()
	maxBuf := opts.MaxBuffer
	if maxBuf <= 0 {
		maxBuf = jute.DefaultMaxBuffer
	}
	sm := statemachine.New(log, watch.NewManager(), func(*tree.Tree) {}, maxBuf)
	sm.Waiters, sm.Sessions = offlineWaiters{}, offlineSessions{}
	failed := make(chan error, 1)
	sm.OnFail = func(err error) { failed <- err }

	ms := st.RaftStorage()
	snap, err := ms.Snapshot()
	if err != nil {
		return nil, 0, err
	}
	if !raft.IsEmptySnap(snap) {
		rc, _, err := st.OpenSnapshotData(snap.Metadata.Index, snap.Metadata.Term)
		if err != nil {
			return nil, 0, fmt.Errorf("open snapshot %d: %w", snap.Metadata.Index, err)
		}
		err = sm.Restore(rc, snap.Metadata.Index)
		rc.Close()
		if err != nil {
			return nil, 0, err
		}
	}
	hs, _, err := ms.InitialState()
	if err != nil {
		return nil, 0, err
	}
	first, err := ms.FirstIndex()
	if err != nil {
		return nil, 0, err
	}
	if last, err = ms.LastIndex(); err != nil {
		return nil, 0, err
	}
	upto := hs.Commit
	if whole {
		upto = last
	}
	// OnFail runs on a goroutine of its own; sm.Failed says at once that
	// applying stopped.
	for lo := first; lo <= upto && !sm.Failed(); {
		ents, err := ms.Entries(lo, upto+1, 64<<20)
		if err != nil {
			return nil, 0, fmt.Errorf("read the log at %d: %w", lo, err)
		}
		if len(ents) == 0 {
			break
		}
		sm.Apply(ents)
		lo = ents[len(ents)-1].Index + 1
	}
	if sm.Failed() {
		return nil, 0, <-failed
	}
	var t *tree.Tree
	sm.View(func(tr *tree.Tree) { t = tr })
	return t, max(last, snap.Metadata.Index), nil
}

// offlineWaiters and offlineSessions stand in for the Proposer and the
// session tracker when LoadDataDir applies a log: nobody waits for the
// entries, and sessions are what the tree records.
type offlineWaiters struct{}

func (offlineWaiters) Take(uint64) waiter { return nil }

type offlineSessions struct{}

func (offlineSessions) Applied(*tree.Txn, *tree.Result) {}
func (offlineSessions) RemoteTouch([]int64)             {}
func (offlineSessions) Moved(int64, int64, uint64)      {}
