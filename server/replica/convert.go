package replica

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/internal/atomicfile"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/storage"
)

// A standalone server becomes an ensemble's first member the way an Apache
// ZooKeeper operator does it: start it with the ensemble's zoo.cfg (server
// lines and myid), then start the other members with empty data
// directories; they join and receive its data.
//
// A standalone's log is a raft group of one voter (raft id 1) with no
// ensemble identity. Started as an ensemble member, it is converted once,
// before raft starts: its state — every entry of its log applied, since a
// group of one commits all it stored once it leads again — becomes the
// snapshot of a new log at the old log's last index (so zxids go on above
// every one a client saw), whose only voter is this member under its
// server id, with the ensemble's identity (the zoo.cfg Membership) and a
// formation of its own, chosen here. The standalone's directory is kept
// beside it, as zkgo.standalone. Then the configured-quorum rule
// (quorum.go) keeps it from serving while it is its log's only voter; the
// others' joins make them voters (members.go's admit and promoteLearners),
// and it serves once a majority of the configured voters are.
//
// Its own formation is what keeps the converted member apart from an
// ensemble the other members formed among themselves before it started
// (their formation is another): neither lets the other in, and the
// converted member goes on waiting, saying why, rather than mixing a log
// with theirs. An operator then empties the others' data directories and
// starts them again, as with Apache ZooKeeper, whose empty members would
// otherwise have truncated the data member's log to theirs.

const (
	convertingDir = "zkgo.converting" // the new log while it is written
	standaloneDir = "zkgo.standalone" // the standalone's data, kept
)

// convertStandalone converts the data directory if it holds a standalone
// server's data (see above), and finishes a conversion a crash cut short.
// It runs before the member opens its storage.
func (r *Replica) convertStandalone(sopts storage.Options) error {
	zdir := filepath.Join(r.dir, "zkgo")
	conv := filepath.Join(r.dir, convertingDir)
	kept := filepath.Join(r.dir, standaloneDir)
	if _, err := os.Stat(conv); err == nil {
		if !storage.Exists(zdir) && storage.Exists(kept) {
			// The crash came between the two renames: the new log was
			// complete (it is written and synced before them).
			return r.finishConversion(conv, zdir)
		}
		if err := os.RemoveAll(conv); err != nil {
			return fmt.Errorf("removing an unfinished conversion: %w", err)
		}
	}
	if !storage.Exists(zdir) {
		return nil
	}
	if _, ok, err := readIdentity(zdir); err != nil || ok {
		return err
	}
	standalone, err := isStandaloneLog(zdir, sopts)
	if err != nil || !standalone {
		return err
	}
	if storage.Exists(kept) {
		return fmt.Errorf("%s holds a standalone server's data to convert into an ensemble member, but %s exists already: move it away first", zdir, kept)
	}
	r.log.Warn("this data directory holds a standalone server's data: converting it into the first member of the ensemble zoo.cfg describes",
		"dir", zdir, "server", r.opts.ServerID, "kept", kept)
	opts := *r.opts
	opts.DataDir, opts.DataLogDir = r.dir, ""
	t, last, err := loadDataDir(opts, true)
	if err != nil {
		return fmt.Errorf("converting the standalone data in %s: %w", zdir, err)
	}
	f, err := newFormation()
	if err != nil {
		return err
	}
	id := raftID(r.opts.ServerID, 0)
	ident := identity{ensemble: membershipHash(r.opts.Peers), formation: f}
	index := max(last, uint64(max(t.LastZxid(), 1)))
	if err := seedTree(conv, opts, t, id, []raftnode.Peer{{ID: id}}, index, &ident); err != nil {
		return fmt.Errorf("converting the standalone data in %s: %w", zdir, err)
	}
	if err := atomicfile.SyncDir(r.dir); err != nil {
		return err
	}
	if err := os.Rename(zdir, kept); err != nil {
		return fmt.Errorf("converting the standalone data: keeping it as %s: %w", kept, err)
	}
	if err := r.finishConversion(conv, zdir); err != nil {
		return err
	}
	r.log.Warn("converted: this member's log starts from the standalone's data; it serves once a majority of the configured voters are members. "+
		"Start the other members with empty data directories: they join and receive the data",
		"index", index, "znodes", t.NodeCount(), "formation", raftnode.FormationString(f))
	return nil
}

// finishConversion puts the converted log in place.
func (r *Replica) finishConversion(conv, zdir string) error {
	if err := os.Rename(conv, zdir); err != nil {
		return fmt.Errorf("converting the standalone data: %w", err)
	}
	return atomicfile.SyncDir(r.dir)
}

// isStandaloneLog reports whether the raft log in zdir is a standalone
// server's: raft id 1 in its metadata, one voter (1) in the configuration
// of its newest snapshot and no configuration change after it.
func isStandaloneLog(zdir string, sopts storage.Options) (bool, error) {
	sopts.Metadata = nil
	st, err := storage.Open(zdir, sopts)
	if err != nil {
		return false, fmt.Errorf("open data directory: %w", err)
	}
	defer st.Close()
	md := st.Recovered().Metadata
	if len(md) != 16 || binary.BigEndian.Uint64(md) != 1 || binary.BigEndian.Uint64(md[8:]) != clusterID {
		return false, nil
	}
	ms := st.RaftStorage()
	snap, err := ms.Snapshot()
	if err != nil {
		return false, err
	}
	cs := snap.Metadata.ConfState
	if raft.IsEmptySnap(snap) || len(cs.Voters) != 1 || cs.Voters[0] != 1 || len(cs.Learners)+len(cs.VotersOutgoing)+len(cs.LearnersNext) > 0 {
		return false, nil
	}
	first, _ := ms.FirstIndex()
	last, _ := ms.LastIndex()
	for i := first; i <= last; {
		ents, err := ms.Entries(i, last+1, 4<<20)
		if err != nil {
			return false, err
		}
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			if e.Type == raftpb.EntryConfChange || e.Type == raftpb.EntryConfChangeV2 {
				return false, nil
			}
		}
		i = ents[len(ents)-1].Index + 1
	}
	return true, nil
}
