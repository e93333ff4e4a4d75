package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/adminhttp"
	"github.com/zkgo/zkgo/server/audit"
	"github.com/zkgo/zkgo/server/clientport"
	"github.com/zkgo/zkgo/server/metrics"
	"github.com/zkgo/zkgo/server/replica"
	"github.com/zkgo/zkgo/server/session"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/server/stats"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

// Server is a zkgo server: standalone, or a member of an ensemble.
type Server struct {
	opts Options
	log  *slog.Logger

	sm       *statemachine.Machine // the tree, its lock, and applying the log
	watches  *watch.Manager
	sessions *session.Tracker
	prop     *replica.Proposer
	raft     *replica.Replica // raft, storage, and following the leader
	port     *clientport.Port // the client port: listeners, connections, requests

	started time.Time

	stats   stats.Counters
	heavy   heavyCache        // outputs of the heavy four-letter words (fourlw.go)
	trace   traceMask         // stmk's mask, reported by gtmk (report.go)
	met     *metrics.Metrics  // Prometheus metrics; nil unless Options.MetricsAddr
	adminMu sync.Mutex        // guards admin
	admin   *adminhttp.Server // the AdminServer; nil unless it listens (Options.AdminAddr)
	snap    adminRateLimited  // the snapshot command's state (admin_snapshot.go)
	restore adminRateLimited  // the restore command's state (admin_restore.go)
	// electionStart is when this member last lost its leader (or
	// started); only leaderChanged uses it, on the replica's
	// followLeader goroutine.
	electionStart time.Time

	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
	// quiet is watchQuiet's state (memrelease.go), set once by quietOnce.
	quiet     *quietWatch
	quietOnce sync.Once
	// returningMemory: a collection after a compacted log runs
	// (memrelease.go).
	returningMemory atomic.Bool

	// noLeaderMu guards noLeader: the timer that drops the clients if an
	// election under way elects nobody in time (leaderChanged).
	noLeaderMu sync.Mutex // guards noLeader
	noLeader   *time.Timer

	errMu sync.Mutex // guards err
	err   error      // the fatal error that stopped the server (Err)

	auditOnce sync.Once
}

// New creates a server; call Start or Serve to accept clients.
func New(opts Options) (*Server, error) {
	opts.setDefaults()
	if opts.MinSessionTimeout > opts.MaxSessionTimeout {
		return nil, fmt.Errorf("minSessionTimeout %v is greater than maxSessionTimeout %v", opts.MinSessionTimeout, opts.MaxSessionTimeout)
	}
	if strings.ContainsAny(opts.AdminCommandURL, "?#*{}% \t") {
		return nil, fmt.Errorf("AdminServer command URL %q: not a plain URL path", opts.AdminCommandURL)
	}
	if opts.ServerID < 0 || opts.ServerID > 254 {
		return nil, fmt.Errorf("server id %d out of range 0..254", opts.ServerID)
	}
	if err := opts.checkAuth(); err != nil {
		return nil, err
	}
	if opts.clustered() {
		if opts.DataDir == "" && opts.DataLogDir == "" {
			return nil, errors.New("an ensemble member needs a data directory")
		}
		found := false
		for _, p := range opts.Peers {
			if p.ID == opts.ServerID {
				found = true
			}
			if p.ID < 0 || p.ID > 254 {
				return nil, fmt.Errorf("server id %d out of range 0..254", p.ID)
			}
		}
		if !found {
			return nil, fmt.Errorf("server id %d is not among the ensemble's members", opts.ServerID)
		}
	}
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		watches: watch.NewManager(),
		done:    make(chan struct{}),
		started: time.Now(),
	}
	s.electionStart = s.started
	s.trace.v.Store(defaultTraceMask)
	s.stats.Response.Reset()
	s.sm = statemachine.New(s.log, s.watches, s.setupTree, opts.MaxBuffer)
	s.prop = replica.NewProposer(s.log)
	// A stopping member expires no session: Shutdown keeps them for the
	// restart (while it drains, readers no longer see the clients' pings).
	s.sessions = session.New(s.log, opts.TickTime, opts.ServerID, func(id int64) {
		s.prop.Propose(statemachine.TxnEntry(&tree.Txn{Op: proto.OpCloseSession, Session: id, Time: time.Now().UnixMilli()}), nil, false)
	}, func() bool { return s.isLeader() && !s.port.Draining() })
	if opts.clustered() {
		// Writes that neither commit nor fail (a forwarded proposal lost
		// in transit) must not hang their clients forever.
		s.sessions.Housekeeping = func() { s.port.AbortPendingWrites(max(2*opts.MaxSessionTimeout, 30*time.Second)) }
	}
	s.sm.Waiters, s.sm.Sessions = s.prop, s.sessions
	s.sm.OnFail = s.fail
	if opts.MetricsAddr != "" {
		s.met = newMetrics(s)
		s.sm.Metrics = s.met
		s.watches.SetFanOutHook(s.met.WatchFanOut)
	}
	s.raft = replica.New(opts.replicaConfig(), s.sm, s.prop, s.sessions, replica.Hooks{
		LeaderChanged:     s.leaderChanged,
		Fatal:             s.fail,
		MembershipChanged: s.membershipChanged,
		ConfigVersioned: func(m *replica.Membership) {
			s.sm.SetConfigData([]byte(m.Text()), m.Version)
		},
		StartupLoaded: s.startupLoaded,
		WALSynced: func(entries int, d time.Duration) {
			s.stats.Stages.NS[stats.StageFsync].Add(int64(d))
			s.stats.Stages.Count[stats.StageFsync].Add(1)
			s.met.WALSynced(entries, d)
		},
		SnapshotTaken: func(bytes int64, d time.Duration) {
			s.stats.SnapshotBytes.Store(bytes)
			s.stats.SnapshotNanos.Store(int64(d))
			s.met.SnapshotTaken(d)
		},
		LogCompacted: s.logCompacted,
	})
	s.port = clientport.New(opts.portConfig(), clientport.Parts{SM: s.sm, Watches: s.watches,
		Sessions: s.sessions, Prop: s.prop, Raft: s.raft, Stats: &s.stats, Metrics: s.met,
		FourLetterWord: s.fourLetterWord})
	s.sm.OnRestore = func(formation uint64) {
		s.raft.SnapshotRestored(formation)
		s.raft.RecheckQuorum() // the configuration came with the snapshot
		s.dropClientsAfterRestore()
	}
	return s, nil
}

// setupTree gives a tree the state machine installs the configured
// options.
func (s *Server) setupTree(t *tree.Tree) {
	t.SetOptions(tree.Options{ExtendedTypes: s.opts.ExtendedTypes, EnforceQuota: s.opts.EnforceQuota,
		DigestDisabled: s.opts.DisableDigestAuth, X509: s.opts.TLS != nil || s.opts.AdminTLS != nil,
		SASL: len(s.opts.SASL.Users) > 0 || s.opts.SASL.Provider})
	if s.opts.NoTreeDigest {
		t.SetDigestEnabled(false)
	}
	t.QuotaWarning = func(prefix, what string, value, limit int64) {
		s.log.Warn("quota exceeded", "path", prefix, "what", what, "value", value, "softLimit", limit)
	}
	if s.raft != nil {
		s.raft.SetupTree(t)
	} else if s.opts.ConfigText != "" {
		t.SetConfigData([]byte(s.opts.ConfigText))
	}
}

// currentMembership is the ensemble's membership (nil standalone or
// before New finished).
func (s *Server) currentMembership() *replica.Membership {
	if s.raft == nil {
		return nil
	}
	return s.raft.Members()
}

// clustered reports whether the server is a member of an ensemble.
func (s *Server) clustered() bool { return s.opts.clustered() }

// Mode returns ZooKeeper's name for the server's role: "standalone",
// "leader", "follower", "observer" or "read-only".
func (s *Server) Mode() string {
	if !s.clustered() {
		return "standalone"
	}
	if s.port.ReadOnly() {
		return "read-only"
	}
	if p, ok := s.raft.Peer(s.opts.ServerID); ok && p.Observer {
		return "observer"
	}
	if s.isLeader() {
		return "leader"
	}
	return "follower"
}

// isLeader reports whether this server decides session expiry.
func (s *Server) isLeader() bool { return s.raft.IsLeader() }

// hasQuorum reports whether the server is part of a working quorum (it
// knows a leader); a member that is not refuses new sessions.
func (s *Server) hasQuorum() bool { return s.raft.HasQuorum() }

// dropClientsAfterRestore closes every client connection after the tree
// was replaced by a snapshot from the leader (this member had fallen too
// far behind for the log): the changes the snapshot carries fired no
// watch, so a client still connected would miss them without knowing. A
// ZooKeeper follower that resynchronises with a snapshot has dropped its
// clients too. They reconnect and re-register their watches (setWatches
// fires the one-shot watches whose nodes changed since the zxid they had
// seen; a persistent watch resumes from now, the gap ZooKeeper documents
// across a reconnection). Called on the apply goroutine; at startup there
// are no clients yet.
func (s *Server) dropClientsAfterRestore() {
	if n := s.port.DropClients("this member's state was replaced by a snapshot from the leader"); n > 0 {
		s.log.Warn("state replaced by a snapshot from the leader: closed every client connection so that their watches are set again", "connections", n)
	}
}

// leaderChanged is told by the replica of every change of raft leader. A
// member that becomes leader gives every session a fresh timeout before it
// expires any.
func (s *Server) leaderChanged(ch raftnode.LeaderChange) {
	s.port.LeaderChanged(ch.Leader != 0)
	if !ch.ProposalsLost {
		s.noteLeaderChange(ch)
	}
	if ch.ProposalsLost {
		// The same leader, but a proposal forwarded to it was dropped
		// on the way: its writer would wait forever.
		s.port.AbortPendingWrites(0)
		return
	}
	if ch.IsSelf {
		s.sessions.RefreshAll()
	}
	// A proposal in flight across a change of leader may be lost (raft
	// drops it, or overwrites it in an old leader's log) without telling
	// anyone: drop the connections that wait for one, so their clients
	// see a connection loss (outcome unknown, as with ZooKeeper) instead
	// of waiting forever.
	s.port.AbortPendingWrites(0)
	s.noLeaderMu.Lock()
	if s.noLeader != nil {
		s.noLeader.Stop()
		s.noLeader = nil
	}
	s.noLeaderMu.Unlock()
	switch {
	case s.opts.ReadOnlyMode:
		// readonlymode.enabled: serve read-only sessions while cut off
		// from the quorum; back to normal with a leader.
		s.SetReadOnly(ch.Leader == 0)
	case ch.Leader == 0 && ch.Silent:
		s.dropClientsNoLeader()
	case ch.Leader == 0:
		// An election under way (a leadership transfer, a candidate's
		// higher term), not silence: it usually ends with a leader
		// within an election timeout, and the clients keep their
		// connections meanwhile (writes wait for the leader; those in
		// flight were aborted above). Only if none is elected by then
		// are they dropped.
		grace := time.Duration(raftnode.DefaultElectionTick) * replica.RaftTickInterval(s.opts.TickTime)
		s.noLeaderMu.Lock()
		s.noLeader = time.AfterFunc(grace, func() {
			if !s.hasQuorum() {
				s.dropClientsNoLeader()
			}
		})
		s.noLeaderMu.Unlock()
	}
	s.log.Info("raft leader", "leader", ch.Leader, "term", ch.Term, "self", ch.IsSelf)
}

// dropClientsNoLeader closes every client connection of a member without
// a leader: cut off from the quorum, a ZooKeeper member shuts its client
// service down; its clients go to another member (their sessions live on
// there), and handshakes are refused until a leader is back (hasQuorum).
func (s *Server) dropClientsNoLeader() {
	s.port.DropClients("lost the quorum: no leader")
	s.log.Warn("no leader: closed every client connection; refusing new ones until a leader is back")
}

// Durable reports whether the server keeps its data on disk (it has a
// data directory); without one it runs the same raft path in memory.
func (s *Server) Durable() bool { return s.raft.Durable() }

// Start recovers the data directory (if any), listens on the configured
// address and serves in the background.
func (s *Server) Start() error {
	if s.clustered() && s.opts.ReadOnlyMode {
		// readonlymode.enabled: read-only from the first second, until
		// the member has a leader (leaderChanged) — also while a new
		// ensemble forms or a member waits to join, as ZooKeeper's
		// member serves read-only clients while it looks for a quorum.
		s.port.SwapReadOnly(true)
	}
	if err := s.port.OpenAudit(); err != nil {
		s.prop.Stop()
		return err
	}
	if err := s.start(); err != nil {
		// As ZooKeeper: a failure, and no serverStop (its shutdown hook
		// is registered once the server started).
		s.port.AbortAudit()
		return err
	}
	s.port.AuditServer(audit.OpStart, audit.Success)
	return nil
}

// start is Start once the audit log is open.
func (s *Server) start() error {
	if err := s.raft.Start(); err != nil {
		s.prop.Stop()
		return err
	}
	if err := s.port.Listen(); err != nil {
		s.prop.Stop()
		s.raft.Stop()
		return err
	}
	if s.met != nil {
		if err := s.met.Listen(s.opts.MetricsAddr, &s.wg); err != nil {
			s.port.CloseListeners()
			s.prop.Stop()
			s.raft.Stop()
			return err
		}
	}
	s.startAdmin()
	s.startBackground()
	s.port.Serve()
	return nil
}

// Addr returns the plaintext (or unified) client address, the TLS one if
// there is no other, or nil before Start.
func (s *Server) Addr() net.Addr {
	if a := s.port.Addr(); a != nil {
		return a
	}
	return s.SecureAddr()
}

// MetricsAddr returns the address of the Prometheus metrics endpoint, or
// nil without one (Options.MetricsAddr) or before Start.
func (s *Server) MetricsAddr() net.Addr {
	if a := s.met.Addr(); a != nil {
		return a
	}
	return nil
}

// SecureAddr returns the TLS client address, or nil without one.
func (s *Server) SecureAddr() net.Addr {
	if a := s.port.SecureAddr(); a != nil {
		return a
	}
	return nil
}

func (s *Server) startBackground() {
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.sessions.Run(s.done)
	}()
	go func() {
		defer s.wg.Done()
		s.reapLoop()
	}()
}

// Close stops accepting, closes every connection and stops the background
// goroutines. Sessions are not closed: like a ZooKeeper server going down,
// clients may resume them on another server (or after a restart, once
// sessions are durable).
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.port.BeginClose()
		close(s.done)
		s.met.Close()
		s.closeAdmin()
		s.port.CloseAll("server shutting down")
		s.prop.Stop()
		s.raft.Stop()
	})
	s.port.Wait()
	s.wg.Wait()
	s.auditOnce.Do(s.port.CloseAudit)
	return nil
}

// fail stops the server after a fatal error, which Err reports from then
// on: the member could not start, raft stopped (its disk failed), or the
// state machine cannot apply the log. Each of these is logged where it
// happens. An error after Close began is not recorded.
func (s *Server) fail(err error) {
	s.errMu.Lock()
	if s.err == nil && !s.port.Closing() {
		s.err = err
	}
	s.errMu.Unlock()
	s.Close()
}

// Done is closed when the server begins to stop: Close or Shutdown was
// called, or a fatal error stopped it (then Err is not nil). A process
// serving one Server exits then: call Close, which returns once the
// server has stopped, and exit with a failure status if Err is set, so
// that a supervisor restarts the member (after a disk failure, once the
// disk is fixed).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err returns the fatal error that stopped the server on its own, or nil
// (it runs, or it was closed). An error wrapping storage.ErrFailed means
// the data directory's disk failed: the member stopped rather than
// acknowledge any write it could not make durable.
func (s *Server) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// SetReadOnly switches the server into or out of read-only mode, the mode of
// a ZooKeeper member cut off from its quorum with readonlymode.enabled: it
// accepts only clients that allow read-only sessions, answers every write
// (and sync) with NotReadOnly, reports "ro" to isro and sets the readOnly
// flag of ConnectResponse. Like ZooKeeper switching between its read-only
// and normal server, a change drops every client connection, so that
// clients reconnect (read-write clients go elsewhere; read-only clients
// notice the change). Sessions are kept.
func (s *Server) SetReadOnly(ro bool) {
	if s.port.SwapReadOnly(ro) == ro {
		return
	}
	s.log.Warn("read-only mode changed", "readOnly", ro)
	s.port.DropClients("server switched read-only mode")
}

// ReadOnly reports whether the server is in read-only mode.
func (s *Server) ReadOnly() bool { return s.port.ReadOnly() }

// reapLoop periodically proposes the deletion of empty containers and
// expired TTL nodes (ZooKeeper's ContainerManager).
func (s *Server) reapLoop() {
	t := time.NewTicker(s.opts.ContainerCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		now := time.Now().UnixMilli()
		var cands []string
		s.sm.View(func(t *tree.Tree) { cands = t.ReapCandidates(now) })
		for _, p := range cands {
			txn := &tree.Txn{Op: proto.OpDeleteContainer, Time: now, Req: &tree.DeleteContainerReq{Path: p}}
			s.prop.Propose(statemachine.TxnEntry(txn), nil, false)
		}
	}
}

// Tree calls fn with the tree under the read lock; for tests and tools.
func (s *Server) Tree(fn func(t *tree.Tree)) { s.sm.View(fn) }

// ExpireSession expires a session now, as if its timeout had passed. It is
// meant for tests.
func (s *Server) ExpireSession(id int64) {
	s.sessions.Expire(id)
}

// membershipChanged, on the Server, records a new membership in
// /zookeeper/config and tells Options.OnConfigChange.
func (s *Server) membershipChanged(m *replica.Membership, mtime int64) {
	text := m.Text()
	events := s.sm.ReconfigData([]byte(text), m.Version, mtime)
	s.watches.Trigger(events)
	if s.opts.OnConfigChange != nil {
		if err := s.opts.OnConfigChange(text, m.Version); err != nil {
			s.log.Error("writing the new dynamic configuration", "err", err)
		}
	}
}
