package zkdata

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// versionDir is the subdirectory ZooKeeper keeps its files in.
const versionDir = "version-2"

type dataFile struct {
	name string
	zxid int64
	mode string
}

// listFiles returns the files of dir named <prefix>.<hex zxid>[...], sorted
// by zxid (descending if desc).
func listFiles(dir, prefix string, desc bool) ([]dataFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []dataFile
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if z, mode, ok := parseName(e.Name(), prefix); ok && z >= 0 {
			out = append(out, dataFile{name: e.Name(), zxid: z, mode: mode})
		}
	}
	slices.SortStableFunc(out, func(a, b dataFile) int {
		c := 0
		switch {
		case a.zxid < b.zxid:
			c = -1
		case a.zxid > b.zxid:
			c = 1
		}
		if desc {
			c = -c
		}
		return c
	})
	return out, nil
}

// looksValid is SnapStream.isValidSnapshot: a quick check of a file's
// ends, done before a snapshot is read.
func looksValid(path, mode string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	switch mode {
	case "gz":
		var b [2]byte
		_, err := io.ReadFull(f, b[:])
		return err == nil && b[0] == 0x1f && b[1] == 0x8b
	case "snappy":
		var b [8]byte
		_, err := io.ReadFull(f, b[:])
		return err == nil && string(b[:]) == string(xerialMagic)
	}
	st, err := f.Stat()
	if err != nil || st.Size() < 10 {
		return false
	}
	var b [5]byte
	if _, err := f.ReadAt(b[:], st.Size()-5); err != nil {
		return false
	}
	return b == [5]byte{0, 0, 0, 1, '/'}
}

// ReadDir recovers the state an Apache ZooKeeper server would recover from
// its data directories, as FileTxnSnapLog.restore does:
//
//   - the newest snapshot in dataDir/version-2 that passes the quick check
//     and reads to its seal (up to ReadOptions.MaxSnapshots tried, newest
//     first; the others are listed in Summary.Skipped),
//   - then every transaction after the snapshot's zxid from the logs in
//     dataLogDir/version-2 ("" means dataDir), starting with the newest log
//     named at or before that zxid, replayed onto the fuzzy snapshot,
//   - then the ephemerals of sessions that are not in the session table are
//     removed, as ZooKeeper does before it serves.
//
// A torn log tail is dropped (Summary.TornTails). A checksum mismatch in
// a log, or an entry that does not decode, stops ReadDir with a
// *FormatError naming the file and offset (ZooKeeper refuses to start on
// one). With no usable snapshot the error wraps ErrNoSnapshot. The
// directories are only read.
func ReadDir(dataDir, dataLogDir string, opts ReadOptions) (*Image, error) {
	if dataLogDir == "" {
		dataLogDir = dataDir
	}
	snapDir := filepath.Join(dataDir, versionDir)
	logDir := filepath.Join(dataLogDir, versionDir)
	l := opts.limits()

	snaps, err := listFiles(snapDir, "snapshot", true)
	if err != nil {
		return nil, fmt.Errorf("zkdata: %w", err)
	}
	var (
		im      *Image
		dig     *zxidDigest
		skipped []string
		errs    []error
		tried   int
	)
	for _, s := range snaps {
		if tried >= l.snapshots {
			break
		}
		p := filepath.Join(snapDir, s.name)
		if !looksValid(p, s.mode) {
			skipped = append(skipped, s.name+": not a complete snapshot")
			continue
		}
		tried++
		im, dig, err = readSnapshotFile(p, s.name, s.zxid, s.mode, l)
		if err == nil {
			break
		}
		skipped = append(skipped, fmt.Sprintf("%s: %v", s.name, err))
		errs = append(errs, err)
		im = nil
	}
	if im == nil {
		return nil, errors.Join(append([]error{fmt.Errorf("%w in %s", ErrNoSnapshot, snapDir)}, errs...)...)
	}
	im.summary.Skipped = skipped
	if err := im.replayLogs(logDir, dig, l); err != nil {
		return nil, err
	}
	im.finish()
	return im, nil
}

// replayLogs applies the transactions after the snapshot (FileTxnIterator
// and FileTxnSnapLog.fastForwardFromEdits).
func (im *Image) replayLogs(logDir string, dig *zxidDigest, l limits) error {
	logs, err := listFiles(logDir, "log", false)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("zkdata: %w", err)
	}
	start := im.summary.SnapshotZxid + 1
	// The newest log named before start may hold it; older ones cannot.
	first := 0
	for i, f := range logs {
		if f.zxid < start {
			first = i
		}
	}
	logs = logs[first:]

	// The snapshot's digest is compared when replay reaches its zxid
	// (ZooKeeper ignores it if it is older than the snapshot, and compares
	// it at once if it is the snapshot's own).
	if dig != nil && (dig.zxid <= 0 || dig.zxid <= im.summary.SnapshotZxid) {
		dig = nil
	}
	if dig != nil && dig.version != digestVersion {
		dig = nil
	}
	seeking := true
	for _, f := range logs {
		fh, err := os.Open(filepath.Join(logDir, f.name))
		if err != nil {
			return fmt.Errorf("zkdata: %w", err)
		}
		used := false
		end, off, err := readLog(l.track(fh, f.name), f.name, l, func(t *txn, at int64) error {
			if seeking && t.hdr.zxid < start {
				return nil
			}
			seeking = false
			used = true
			if err := im.applyTxn(t); err != nil {
				return &FormatError{File: f.name, Offset: at, Msg: err.Error(), kind: ErrBadLog}
			}
			im.summary.Txns++
			if dig != nil && t.hdr.zxid == dig.zxid {
				im.checkDigest(dig.version, dig.digest, dig.zxid, "snapshot")
				dig = nil
			}
			if t.digest != nil && dig == nil {
				im.checkDigest(t.digest.version, t.digest.digest, t.hdr.zxid, f.name)
			}
			return nil
		})
		fh.Close()
		if err != nil {
			return err
		}
		if used || !seeking {
			im.summary.Logs = append(im.summary.Logs, f.name)
		}
		if end == endTorn {
			im.summary.TornTails = append(im.summary.TornTails, fmt.Sprintf("%s at offset %d", f.name, off))
		}
	}
	return nil
}

// SnapshotName returns the file name ZooKeeper gives the snapshot of zxid
// (FileTxnSnapLog: "snapshot." and the zxid in lower-case hex), with the
// suffix of compression ("", "gz" or "snappy").
func SnapshotName(zxid int64, compression string) string {
	name := fmt.Sprintf("snapshot.%x", uint64(zxid))
	if compression != "" {
		name += "." + strings.ToLower(compression)
	}
	return name
}
