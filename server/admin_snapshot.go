package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/adminhttp"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zkdata"
)

// The AdminServer's snapshot command, as ZooKeeper 3.9's (ZOOKEEPER-4570):
//
//	curl -H 'Authorization: digest user:password' \
//	    'http://host:8080/commands/snapshot?streaming=true' -o snapshot.file
//
// or, over HTTPS (Options.AdminTLS), with a client certificate whose x509
// identity is the one (admin_identity.go: requestIdentity; ZooKeeper 3.9 wants
// the header "Authorization: x509" then, which zkgo accepts and does not
// need).
//
// answers a snapshot of this member's tree in Apache ZooKeeper's format
// (zkdata: a snapshot.<zxid> file ZooKeeper 3.8 loads, and zkgo snapshot
// restore and zkgo import read), with the headers last_zxid ("0x…") and
// snapshot_size. Like ZooKeeper's it needs an identity that holds every
// permission on / — each one checked on its own, as ZooKeeper 3.9.4 does
// after CVE-2025-58457 (an identity with only READ must not read the whole
// tree this way) — and, unlike ZooKeeper's, from an entry that names the
// identity: world:anyone does not count, so that made-up credentials get
// nothing from /'s default ACL (snapshotAllowed); the super digest always
// does. It is rate limited (one per
// Options.AdminRateLimit, ZooKeeper's admin.rateLimiterIntervalInMS,
// default 5 minutes: 429 before that), and switched off with
// admin.snapshot.enabled=false (503). streaming=false takes the snapshot
// and answers only the headers.
//
// The tree is captured as a raft snapshot is (statemachine.Machine.Snapshot: a
// consistent view while applying goes on), written in zkgo's format to a
// temporary file, read back into a private tree and written out in
// ZooKeeper's: the member holds a second copy of the tree while the
// command runs, never two captures at once (a raft snapshot that falls
// due meanwhile is retried later, as after any failed snapshot).

// adminRateLimited is the state of a command that runs one at a time and
// at most once per Options.AdminRateLimit (snapshot, restore).
type adminRateLimited struct {
	mu   sync.Mutex // guards last; held while the command runs
	last time.Time  // when it last began
}

// begin starts the command, or answers 429 and returns false; a true
// return must be followed by end.
func (a *adminRateLimited) begin(w http.ResponseWriter, name string, every time.Duration) bool {
	if !a.mu.TryLock() {
		commandError(w, name, http.StatusTooManyRequests, "a "+name+" is under way")
		return false
	}
	if !a.last.IsZero() && time.Since(a.last) < every {
		a.mu.Unlock()
		commandError(w, name, http.StatusTooManyRequests, fmt.Sprintf("rate limited: one %s per %v", name, every))
		return false
	}
	a.last = time.Now()
	return true
}

func (a *adminRateLimited) end() { a.mu.Unlock() }

// serveSnapshot is the snapshot command (adminhttp.Config.Snapshot).
func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, msg string) { commandError(w, "snapshot", code, msg) }
	if !s.opts.AdminSnapshot {
		fail(http.StatusServiceUnavailable, "the snapshot command is disabled (admin.snapshot.enabled=false)")
		return
	}
	if !s.operatorAllowed(w, r, "snapshot") {
		return
	}
	if !s.running() {
		fail(http.StatusServiceUnavailable, "This ZooKeeper instance is not currently serving requests")
		return
	}
	if !s.snap.begin(w, "snapshot", s.opts.AdminRateLimit) {
		return
	}
	defer s.snap.end()
	streaming := true
	if v := r.URL.Query().Get("streaming"); v != "" {
		streaming = strings.EqualFold(v, "true")
	}
	f, zxid, size, err := s.zkSnapshotFile()
	if err != nil {
		s.log.Warn("snapshot command failed", "err", err)
		fail(http.StatusInternalServerError, err.Error())
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	s.log.Info("snapshot command", "zxid", fmt.Sprintf("0x%x", zxid), "bytes", size, "streaming", streaming)
	w.Header().Set("last_zxid", fmt.Sprintf("0x%x", zxid))
	w.Header().Set("snapshot_size", strconv.FormatInt(size, 10))
	if !streaming {
		fail(http.StatusOK, "")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	// A large tree takes longer than the AdminServer's write timeout.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(max(adminhttp.WriteTimeout, time.Duration(size/(1<<20))*time.Second)))
	io.Copy(w, f)
}

// zkSnapshotFile writes this member's tree as an Apache ZooKeeper
// snapshot into an unlinked-on-close temporary file and returns it
// rewound, with the tree's zxid and the file's size.
func (s *Server) zkSnapshotFile() (f *os.File, zxid int64, size int64, err error) {
	write, err := s.sm.Snapshot()
	if err != nil {
		if errors.Is(err, tree.ErrSnapshotInProgress) {
			err = errors.New("a raft snapshot is being written: try again in a moment")
		}
		return nil, 0, 0, err
	}
	dir := os.TempDir()
	own, err := os.CreateTemp(dir, "zkgo-admin-snap-*")
	if err != nil {
		write(nil)
		return nil, 0, 0, err
	}
	defer func() {
		own.Close()
		os.Remove(own.Name())
	}()
	bw := bufio.NewWriterSize(own, 1<<16)
	if err := write(bw); err != nil {
		return nil, 0, 0, err
	}
	if err := bw.Flush(); err != nil {
		return nil, 0, 0, err
	}
	if _, err := own.Seek(0, io.SeekStart); err != nil {
		return nil, 0, 0, err
	}
	t, err := statemachine.ReadSnapshot(bufio.NewReaderSize(own, 1<<16), s.opts.MaxBuffer)
	if err != nil {
		return nil, 0, 0, err
	}
	out, err := os.CreateTemp(dir, "zkgo-admin-zksnap-*")
	if err != nil {
		return nil, 0, 0, err
	}
	bw = bufio.NewWriterSize(out, 1<<16)
	err = zkdata.WriteSnapshot(bw, t, zkdata.WriteOptions{})
	if err == nil {
		err = bw.Flush()
	}
	var n int64
	if err == nil {
		n, err = out.Seek(0, io.SeekCurrent)
	}
	if err == nil {
		_, err = out.Seek(0, io.SeekStart)
	}
	if err != nil {
		out.Close()
		os.Remove(out.Name())
		return nil, 0, 0, err
	}
	return out, t.LastZxid(), n, nil
}

// snapshotAllowed reports whether ids may take a snapshot of the whole
// tree: the super user may; anyone else needs every permission on /,
// each one checked on its own, from entries of rootACL that name an
// identity. world:anyone is left out: digest credentials are never
// refused (any user:password is an identity), so with /'s default ACL
// made-up credentials would otherwise read every znode, those that ACLs
// protect included. An empty ACL grants nothing here either.
func snapshotAllowed(rootACL []proto.ACL, ids []proto.Id) bool {
	for _, id := range ids {
		if id.Scheme == acl.SchemeSuper {
			return true
		}
	}
	named := make([]proto.ACL, 0, len(rootACL))
	for _, a := range rootACL {
		if a.ID.Scheme != acl.SchemeWorld {
			named = append(named, a)
		}
	}
	if len(named) == 0 {
		return false
	}
	for _, perm := range []proto.Perm{proto.PermRead, proto.PermWrite, proto.PermCreate, proto.PermDelete, proto.PermAdmin} {
		if !acl.Check(named, perm, ids) {
			return false
		}
	}
	return true
}

// adminIdentity reads ZooKeeper 3.9's admin Authorization header,
// "digest user:password", into the identities it authenticates (with the
// super user's when it is the super digest).
func adminIdentity(header, superDigest string) ([]proto.Id, bool) {
	scheme, auth, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, acl.SchemeDigest) || !strings.Contains(auth, ":") {
		return nil, false
	}
	ids, err := acl.Authenticate(acl.SchemeDigest, []byte(strings.TrimSpace(auth)), superDigest)
	return ids, err == nil && len(ids) > 0
}
