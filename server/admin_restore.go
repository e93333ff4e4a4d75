package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/zkgo/zkgo/server/replica"
	"github.com/zkgo/zkgo/storage"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zkdata"
)

// The AdminServer's restore command, as ZooKeeper 3.9's (ZOOKEEPER-4571):
//
//	curl -H 'Content-Type: application/octet-stream' \
//	    -H 'Authorization: digest user:password' \
//	    -X POST http://host:8080/commands/restore --data-binary @snapshot.file
//
// The body is a snapshot in Apache ZooKeeper's format — what the snapshot
// command sends, a snapshot.<zxid> file of ZooKeeper 3.6 to 3.9 — whose
// last zxid is read from the bytes (zkdata.ReadSnapshotStream). It needs
// the snapshot command's identity (every permission on /, each checked on
// its own, world:anyone not counting: snapshotAllowed), at most one per
// Options.AdminRateLimit (429 before that), and is switched off with
// admin.restore.enabled=false (503). Unlike ZooKeeper's it works without
// zookeeper.serializeLastProcessedZxid.enabled, and on a member without
// a quorum (a restore is how an ensemble that lost it for good comes
// back).
//
// ZooKeeper swaps the restored tree into the running server. A zkgo
// member's tree is the state of its raft log, so the member stages the
// tree (checked in full first: a bad snapshot is a 400 and changes
// nothing), answers {"last_zxid": …}, and stops with ErrRestored; started
// again on the same data directory (zkgo server restarts itself) it moves
// its old data aside and starts from the snapshot (server/replica's
// restore.go). As in ZooKeeper's guide, restore every member of an
// ensemble from the same snapshot: they form a new ensemble from it, and
// members not restored yet are kept out of it. Clients see their
// connections close; sessions are the snapshot's.

// ErrRestored is Err's answer after the restore command staged a snapshot
// and stopped the server: a new Server with the same Options, started on
// the same data directory, starts from that snapshot.
var ErrRestored = errors.New("restored from a snapshot: start the server again to serve it")

// restoreReadTimeout bounds the upload of a restore's snapshot.
const restoreReadTimeout = 10 * time.Minute

// serveRestore is the restore command (adminhttp.Config.Restore).
func (s *Server) serveRestore(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, msg string) { commandError(w, "restore", code, msg) }
	if !s.opts.AdminRestore {
		fail(http.StatusServiceUnavailable, "the restore command is disabled (admin.restore.enabled=false)")
		return
	}
	if !s.operatorAllowed(w, r, "restore") {
		return
	}
	if !s.Durable() {
		fail(http.StatusServiceUnavailable, "this member keeps no data directory (in memory): there is nothing to restore into")
		return
	}
	if s.port.Closing() {
		fail(http.StatusServiceUnavailable, "the server is stopping")
		return
	}
	if !s.restore.begin(w, "restore", s.opts.AdminRateLimit) {
		return
	}
	defer s.restore.end()
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(restoreReadTimeout))
	t, err := s.readRestoreBody(r.Body)
	if err != nil {
		s.log.Warn("restore command: the snapshot was refused", "err", err)
		fail(http.StatusBadRequest, err.Error())
		return
	}
	if err := replica.StageRestore(s.opts.replicaConfig(), t); err != nil {
		s.log.Error("restore command failed", "err", err)
		fail(http.StatusInternalServerError, err.Error())
		return
	}
	s.log.Warn("restore command: snapshot staged; the server stops and starts again from it",
		"zxid", fmt.Sprintf("0x%x", t.LastZxid()), "znodes", t.NodeCount(), "sessions", t.SessionCount())
	// The whole answer is on its way before the server stops: its length
	// is known and it is flushed, and the stop waits for the handler's
	// end (closing the AdminServer closes its connections at once).
	answer := fmt.Appendf(nil, "{\n  \"last_zxid\" : %d,\n  \"command\" : \"restore\",\n  \"error\" : null\n}\n", t.LastZxid())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	w.Write(answer)
	http.NewResponseController(w).Flush()
	done := r.Context().Done()
	go func() {
		<-done
		s.fail(ErrRestored)
	}()
}

// readRestoreBody reads a restore's snapshot: copied to a temporary file
// (bounded by Options.MaxSnapshotBytes), read and checked as ZooKeeper's
// format, and turned into zkgo's tree (every invariant checked again).
func (s *Server) readRestoreBody(body io.Reader) (*tree.Tree, error) {
	limit := s.opts.MaxSnapshotBytes
	if limit <= 0 {
		limit = storage.DefaultMaxSnapshotBytes
	}
	f, err := os.CreateTemp("", "zkgo-restore-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	n, err := io.Copy(f, io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the snapshot: %w", err)
	}
	if n > limit {
		return nil, fmt.Errorf("the snapshot is larger than %d bytes (zkgo.snapshot.maxBytes)", limit)
	}
	if n == 0 {
		return nil, errors.New("no snapshot in the request body")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	im, err := zkdata.ReadSnapshotStream(bufio.NewReaderSize(f, 1<<16), zkdata.ReadOptions{MaxBuffer: s.opts.MaxBuffer})
	if err != nil {
		return nil, err
	}
	return im.Tree(tree.ReadOptions{MaxBuffer: s.opts.MaxBuffer})
}
