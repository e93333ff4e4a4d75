package replica

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/storage"
	"github.com/zkgo/zkgo/tree"
)

// SeedDataDir makes the data directory of opts (DataLogDir/zkgo, or
// DataDir/zkgo) start from a tree: the state a member of this
// configuration restores when it first starts, as if its ensemble had
// been formed with that tree instead of an empty one. The tree is read
// from r in zkgo's snapshot format (tree.WriteSnapshot's) and checked in
// full before anything is written; its sessions start anew when the
// member does (each with its whole timeout, as after a ZooKeeper
// restart).
//
// Standalone, that is all. In an ensemble, seed every member — the
// participants and the observers, each with its own zoo.cfg — from the
// same bytes before any of them starts: they begin from the same log and
// state, as members bootstrapped together do, and form a new ensemble
// (its formation is chosen when they first elect a leader, so members of
// any earlier ensemble on the same addresses are refused). A member
// started on an empty directory instead would join the seeded ones and
// receive their state.
//
// The directory must not hold zkgo data yet. Callers: zkgo import and
// zkgo snapshot restore (cmd/zkgo), tests.
func SeedDataDir(opts Config, r io.Reader) error {
	dir := opts.DataDir
	if opts.DataLogDir != "" {
		dir = opts.DataLogDir
	}
	if dir == "" {
		return errors.New("seed: no data directory")
	}
	if opts.Clustered() {
		found := false
		for _, p := range opts.Peers {
			found = found || p.ID == opts.ServerID
		}
		if !found {
			return fmt.Errorf("seed: server id %d is not among the ensemble's members", opts.ServerID)
		}
	}
	zdir := filepath.Join(dir, "zkgo")
	if _, err := os.Stat(zdir); err == nil {
		return fmt.Errorf("seed: %s exists: the data directory holds zkgo data already", zdir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("seed: %w", err)
	}
	maxBuf := opts.MaxBuffer
	if maxBuf <= 0 {
		maxBuf = jute.DefaultMaxBuffer
	}
	// Read and check the whole tree first (tree.ReadSnapshot checks every
	// invariant and the CRC), then write it back out canonically into the
	// snapshot: what a member restores is what was checked.
	t, err := tree.ReadSnapshot(r, tree.ReadOptions{MaxBuffer: maxBuf})
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	id, peers := uint64(1), []raftnode.Peer{{ID: 1}}
	if opts.Clustered() {
		id, peers = raftID(opts.ServerID, 0), nil
		for _, p := range opts.Peers {
			peers = append(peers, raftnode.Peer{ID: raftID(p.ID, 0), Addr: p.Addr, Learner: p.Observer})
		}
	}
	var ident *identity
	if opts.Clustered() {
		ident = &identity{ensemble: membershipHash(opts.Peers), formation: raftnode.FormationPending}
	}
	if err := seedTree(zdir, opts, t, id, peers, uint64(max(t.LastZxid(), 1)), ident); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// seedTree makes zdir (which must not hold zkgo data) a raft log of member
// id that starts with tree t as its snapshot at index (zkgo's zxids are
// raft indexes: the log goes on above the tree's), with configuration
// peers, and records ident in it unless nil. On an error, nothing half
// made is left behind: a later start or seed finds an empty directory.
func seedTree(zdir string, opts Config, t *tree.Tree, id uint64, peers []raftnode.Peer, index uint64, ident *identity) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(t.WriteSnapshot(pw)) }()
	defer pr.Close()
	st, err := storage.Open(zdir, storage.Options{Metadata: raftnode.Metadata(id, clusterID), Logger: opts.Logger, NoPrefill: opts.NoWALPrefill})
	if err != nil {
		return err
	}
	err = raftnode.Seed(st, peers, index, pr)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err == nil && ident != nil {
		err = writeIdentity(zdir, *ident)
	}
	if err != nil {
		os.RemoveAll(zdir)
		return err
	}
	return nil
}
