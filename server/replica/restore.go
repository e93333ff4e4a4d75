package replica

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkgo/zkgo/tree"
)

// A restore from a snapshot (the AdminServer's restore command, as
// ZooKeeper 3.9's) is staged, then applied when the member next starts:
//
//  1. StageRestore writes the tree, checked in full, as zkgo's snapshot
//     into the file restoreFile beside the member's zkgo directory
//     (fsynced, then renamed into place): the running member is not
//     touched, and nothing is staged if anything fails.
//  2. The server stops (server.ErrRestored) and is started again on the
//     same data directory (zkgo server does so itself).
//  3. Start finds the staged file: it moves the zkgo directory aside
//     (zkgo.before-restore-<unix time>, kept for the operator to delete),
//     seeds a new one from the staged tree (SeedDataDir: a log that
//     starts with it at its zxid, a new formation for an ensemble), and
//     only then removes the staged file. A crash at any step repeats it
//     at the next start: a half-seeded directory is moved aside too.
//
// Every member of an ensemble restored from the same bytes holds the same
// log, so they form a new ensemble together, as members seeded before
// they first start do; a member not restored yet belongs to the old
// formation and is refused by them until it is.

// restoreFile is the staged tree's name in the data (log) directory.
const restoreFile = "zkgo.restore"

// StageRestore stages tree t as the state the member of cfg restores at
// its next start. The data directory must exist.
func StageRestore(cfg Config, t *tree.Tree) error {
	dir := cfg.DataDir
	if cfg.DataLogDir != "" {
		dir = cfg.DataLogDir
	}
	if dir == "" {
		return errors.New("restore: this member keeps no data directory (in memory)")
	}
	tmp, err := os.CreateTemp(dir, restoreFile+".*.tmp")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	bw := bufio.NewWriterSize(tmp, 1<<16)
	err = t.WriteSnapshot(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, restoreFile))
	}
	if err == nil {
		err = syncDirOf(dir)
	}
	if err != nil {
		return fmt.Errorf("restore: staging the snapshot: %w", err)
	}
	return nil
}

// applyStagedRestore seeds the data directory from a staged restore, if
// one is there (see StageRestore). Start calls it before it opens the
// storage.
func (r *Replica) applyStagedRestore() error {
	if r.dir == "" {
		return nil
	}
	staged := filepath.Join(r.dir, restoreFile)
	f, err := os.Open(staged)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	zdir := filepath.Join(r.dir, "zkgo")
	if _, err := os.Stat(zdir); err == nil {
		aside := fmt.Sprintf("%s.before-restore-%d", zdir, time.Now().UnixNano())
		if err := os.Rename(zdir, aside); err != nil {
			return fmt.Errorf("restore: moving the data aside: %w", err)
		}
		if err := syncDirOf(r.dir); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		r.log.Warn("restoring from a snapshot: the member's previous data is kept aside", "dir", aside)
	}
	if err := SeedDataDir(*r.opts, bufio.NewReaderSize(f, 1<<16)); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := os.Remove(staged); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := syncDirOf(r.dir); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	r.log.Warn("restored from a snapshot", "dir", zdir)
	return nil
}
