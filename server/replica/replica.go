package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server/session"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/storage"
)

// clusterID names a standalone zkgo group in its WAL metadata.
const clusterID = 0x7a6b676f // "zkgo"

// Replica is the cluster glue: this server's member of the raft group
// (go.etcd.io/raft via raftnode) over its storage — etcd's WAL in the data
// directory, or memory without one — and what follows from raft's view of
// the group: who leads (isLeader, hasQuorum), what happens when that
// changes (leaderChanged: session refresh, lost writes, read-only mode),
// and the touch batches that tell the leader which sessions this member's
// clients keep alive.
//
// Ordering: raftnode persists entries (fsync unless NoSync or in memory)
// before it hands them to the state machine, so a reply — queued by the
// waiter inside Apply — is never sent for a write that is not on disk.
// Entries of one Ready share one fsync (group commit).
type Replica struct {
	opts     *Config
	log      *slog.Logger
	dir      string // the data directory; "" in memory
	sm       *statemachine.Machine
	prop     *Proposer
	sessions *session.Tracker
	// h are the server's callbacks (Hooks); set by New, read-only after.
	h Hooks
	// auth is quorum SASL (quorumauth.go); nil when off. Set before
	// start, read-only after.
	auth *raftnode.PeerAuth

	// st and node are guarded by view.mu once start returned (a member
	// that decides how to start sets them in the background).
	st   *storage.Storage
	node *raftnode.Node
	tr   raftnode.Transport
	// id is this member's raft id (members.go): the server id, or a new
	// identity after an empty data directory rejoined.
	id atomic.Uint64
	// members is the ensemble's Membership (reconfig.go); memberCh is
	// closed and replaced whenever it changes (guarded by memberMu).
	members atomic.Pointer[Membership]
	// outgoing is, while raft's configuration is joint (a reconfig that
	// changed several voters at once, until its leaving entry applies),
	// the Membership before it: the outgoing voters still vote, and
	// resolve finds them there. nil otherwise.
	outgoing atomic.Pointer[Membership]
	// leaving are raft ids a conf change removed that raft's joint
	// configuration still holds; confChanged drops their transports once
	// it does not (apply goroutine only).
	leaving []uint64
	// reconfigMu is held by the reconfig this member carries out (one at
	// a time; another is answered ReconfigInProgress).
	reconfigMu sync.Mutex // guards no field: held by the reconfig under way
	memberMu   sync.Mutex // guards memberCh and appliedNonces
	memberCh   chan struct{}
	// appliedNonces are the nonces of the last reconfigs applied here
	// (a ring), so that a Reconfig can tell its own change from another.
	appliedNonces [8]uint64
	nonceNext     int
	// beforeConfChange, if set (SetBeforeConfChange, by a test), runs in
	// each reconfig attempt just before its change is proposed.
	beforeConfChange atomic.Pointer[func(*raftnode.Node)]
	// view is what the peer transport's probes read.
	view memberView
	// formationMu serializes recording the formation (formation.go);
	// adopting is set while a check of a refused formation runs;
	// learnFormationNow wakes chooseFormation to ask the voters at once.
	// mismatchMu guards mismatchLogged: when a member of another
	// ensemble was last logged, by server id (ensemble.go).
	mismatchMu     sync.Mutex // guards mismatchLogged
	mismatchLogged map[int64]time.Time
	// pendingMu guards pendingChecks, verifyPending's answers.
	pendingMu     sync.Mutex
	pendingChecks map[pendingKey]*pendingCheck
	formationMu   sync.Mutex // guards no field: serialises setFormation
	adopting      atomic.Bool
	// askingBack is set while a member removed by a reconfig asks to be
	// taken back (members.go's removed).
	askingBack        atomic.Bool
	learnFormationNow chan struct{}

	// openTook is how long opening an existing storage took (0: created
	// or in memory); set before startNode, by the goroutine that calls it.
	openTook time.Duration

	// leader is the leader this member acts on, 0 while none: raft's
	// leader while the configured quorum holds (quorum.go). raftLead is
	// raft's leader whatever the configuration.
	leader   atomic.Int64
	raftLead atomic.Uint64
	// recheck asks followLeader to check the configured quorum again
	// (buffered 1; quorum.go).
	recheck chan struct{}
	quit    chan struct{} // closed by stop; ends the helper goroutines
	wg      sync.WaitGroup
}

// Hooks are how the replica tells the server (package server, which
// owns the client front end) what happens to it. Each is called on the
// goroutine named; nil ones are skipped, except LeaderChanged.
type Hooks struct {
	// LeaderChanged is told every change of the leader this member acts
	// on (quorum.go), on the goroutine that follows raft's leader.
	LeaderChanged func(raftnode.LeaderChange)
	// MembershipChanged is told a new membership (a reconfig applied) on
	// the apply goroutine: /zookeeper/config, the dynamic file.
	MembershipChanged func(m *Membership, mtime int64)
	// ConfigVersioned is told on the apply goroutine that a new
	// ensemble's membership got its first version (formation.go).
	ConfigVersioned func(m *Membership)
	// Fatal is told, on a goroutine of its own, that the member cannot
	// go on: it could not start, or raft stopped on an error.
	Fatal func(error)
	// WALSynced and SnapshotTaken are the storage's and raft's metrics
	// hooks (storage.Options.OnWALSync, raftnode.Config.OnSnapshot);
	// LogCompacted is raftnode.Config.OnLogCompacted.
	WALSynced     func(entries int, d time.Duration)
	SnapshotTaken func(bytes int64, d time.Duration)
	LogCompacted  func(dataBytes uint64)
	// StartupLoaded is told how the member loaded its state when raft
	// started: opening the storage (reading the WAL), and raftnode's
	// snapshot restore and log replay.
	StartupLoaded func(open time.Duration, load raftnode.StartupLoad)
}

// New makes the replica of the state machine sm: proposals go through
// prop, sessions kept alive on this member are told to the leader from
// sessions. It installs the replica's hooks in sm (the formation) and
// reads the membership from cfg; Start opens the storage and starts raft.
func New(cfg Config, sm *statemachine.Machine, prop *Proposer, sessions *session.Tracker, h Hooks) *Replica {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dir := cfg.DataDir
	if cfg.DataLogDir != "" {
		dir = cfg.DataLogDir
	}
	r := &Replica{opts: &cfg, log: cfg.Logger, dir: dir, sm: sm, prop: prop, sessions: sessions, h: h,
		memberCh: make(chan struct{}), learnFormationNow: make(chan struct{}, 1), recheck: make(chan struct{}, 1)}
	r.auth = r.peerAuth()
	sm.OnFormation = r.FormationChosen
	sm.Formation = r.Formation
	if cfg.Clustered() {
		r.members.Store(initialMembership(&cfg))
	}
	return r
}

// Durable reports whether the log is on disk (a data directory).
func (r *Replica) Durable() bool { return r.dir != "" }

// Members is the ensemble's membership; nil standalone.
func (r *Replica) Members() *Membership { return r.members.Load() }

// Leader is the server id of the leader this member acts on, 0 while
// there is none (quorum.go).
func (r *Replica) Leader() int64 { return r.leader.Load() }

// Clustered reports whether the member belongs to an ensemble.
func (r *Replica) Clustered() bool { return r.opts.Clustered() }

// start opens the storage, restores the newest snapshot and replays the
// log into the state machine, then starts raft. Standalone, it returns
// once the member leads its group of one and has applied its whole log.
// An ensemble member over TCP with an empty data directory first finds
// out from the others whether to form the ensemble with them or to rejoin
// it under a new raft identity (members.go): that happens in the
// background (start returns at once; the member has no leader, so it
// serves no client until raft runs).
func (r *Replica) Start() error {
	opts := r.opts
	if err := r.applyStagedRestore(); err != nil {
		return err
	}
	r.quit = make(chan struct{})
	sopts := storage.Options{
		NoSync:     opts.NoSync,
		NoPrefill:  opts.NoWALPrefill,
		SnapRetain: max(opts.SnapRetainCount, storage.DefaultSnapRetain),
		Logger:     r.log,
		OnWALSync:  r.h.WALSynced,
		// A snapshot stream from the leader is bounded by it too.
		MaxSnapshotBytes: opts.MaxSnapshotBytes,
	}
	if r.dir == "" || !r.Clustered() || opts.PeerTransport != nil {
		id := uint64(1)
		if r.Clustered() {
			id = raftID(opts.ServerID, 0)
		}
		sopts.Metadata = raftnode.Metadata(id, clusterID)
		var st *storage.Storage
		if r.dir == "" {
			st = storage.OpenMemory(sopts)
		} else {
			if err := refuseJavaDataDir(r.dir); err != nil {
				return err
			}
			var err error
			openStart := time.Now()
			if st, err = storage.Open(filepath.Join(r.dir, "zkgo"), sopts); err != nil {
				return fmt.Errorf("open data directory: %w", err)
			}
			r.openTook = time.Since(openStart)
		}
		r.setStorage(st, id)
		tr, err := r.transport()
		if err != nil {
			r.closeStorage()
			return err
		}
		r.tr = tr
		return r.startNode(tr, r.bootstrapPeers(), false)
	}
	if err := refuseJavaDataDir(r.dir); err != nil {
		return err
	}
	tr, err := r.transport()
	if err != nil {
		return err
	}
	r.tr = tr
	tcp := tr.(*raftnode.TCPTransport)
	if err := r.convertStandalone(sopts); err != nil {
		tcp.Stop()
		return err
	}
	restarted, err := r.openExisting(sopts)
	if err != nil {
		tcp.Stop()
		return err
	}
	tcp.Listen() // answer probes from now on
	if restarted {
		return r.startMember(tcp, startDecision{id: r.id.Load()})
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		d, err := r.decide(r.id.Load(), func(id uint64) error { return r.create(sopts, id) })
		if err == nil && r.Storage() == nil {
			err = r.create(sopts, d.id)
		}
		if err == nil {
			err = r.startMember(tcp, d)
		} else {
			tcp.Stop()
		}
		if err != nil {
			select {
			case <-r.quit:
			default:
				r.log.Error("the member could not start", "err", err)
				if r.h.Fatal != nil {
					go r.h.Fatal(err)
				}
			}
		}
	}()
	return nil
}

// startMember starts raft for an ensemble member over TCP once its
// identity is settled: bootstrapping the ensemble, rejoining it, or
// restarting on its log.
func (r *Replica) startMember(tcp *raftnode.TCPTransport, d startDecision) error {
	var peers []raftnode.Peer
	if d.bootstrap {
		peers = r.bootstrapPeers()
	}
	dir := filepath.Join(r.dir, "zkgo")
	var ident identity
	var err error
	if d.join {
		ident, err = adoptEnsembleIdentity(dir, d.ensemble)
	} else {
		ident, err = ensembleIdentity(dir, r.opts.Peers, d.bootstrap)
	}
	if err != nil {
		tcp.Stop()
		return err
	}
	// The handshake checks the ensemble's identity (ensemble.go); the WAL
	// keeps the constant clusterID it was created with.
	tcp.SetIdentity(r.id.Load(), ident.ensemble)
	tcp.SetFormation(ident.formation)
	r.view.mu.Lock()
	r.view.ensemble, r.view.formation = ident.ensemble, ident.formation
	r.view.mu.Unlock()
	if err := r.startNode(tcp, peers, d.join); err != nil {
		return err
	}
	if ident.formation == raftnode.FormationPending {
		r.wg.Add(1)
		go r.chooseFormation()
	}
	return nil
}

// startNode starts raft over the opened storage and the helpers that
// follow it.
func (r *Replica) startNode(tr raftnode.Transport, peers []raftnode.Peer, join bool) error {
	opts := r.opts
	node, err := raftnode.Start(raftnode.Config{
		ID:             r.id.Load(),
		ClusterID:      clusterID,
		Peers:          peers,
		Join:           join,
		Storage:        r.Storage(),
		StateMachine:   r.sm,
		Transport:      tr,
		OnConfChange:   r.confChanged,
		SnapCount:      uint64(opts.SnapCount),
		SnapBytes:      snapBytes(opts.SnapBytes),
		TickInterval:   RaftTickInterval(opts.TickTime),
		Ticks:          opts.RaftTicks,
		Logger:         r.log,
		OnSnapshot:     r.h.SnapshotTaken,
		OnLogCompacted: r.h.LogCompacted,
		ValidateEntry:  statemachine.ValidateEntry,
		CommitDelay:    opts.CommitDelay,
		ProposalSource: proposalSession,
		Notifications:  notifications(r.sm),
	})
	if err != nil {
		tr.Stop()
		r.closeStorage()
		return err
	}
	r.view.mu.Lock()
	r.node, r.view.joining = node, false
	r.view.mu.Unlock()
	if r.h.StartupLoaded != nil {
		r.h.StartupLoaded(r.openTook, node.StartupLoad())
	}
	// Connect to every member of the configuration now, not when raft
	// first writes to it, so that a member the handshake refuses (a
	// wrong server.N line) shows in the logs at once.
	st := node.Status()
	for _, id := range append(st.Voters, st.Learners...) {
		if addr, ok := r.resolve(id); ok && id != st.ID && opts.PeerTransport == nil {
			tr.AddPeer(id, addr)
		}
	}
	r.prop.start(node)
	r.sessions.Restore(r.sm)
	if !r.Clustered() {
		// A group of one leads at once; wait for it so proposals are
		// not dropped.
		for node.Leader() != 1 {
			select {
			case <-node.LeaderChanges():
			case <-node.Done():
				return fmt.Errorf("raft stopped: %w", node.Err())
			}
		}
		// After a machine crash the durable commit index may lag the
		// log: entries fsynced, applied and acknowledged before the
		// crash whose later commit-only hard state (never fsynced) was
		// lost. Leading alone, this member commits its whole log again;
		// serve only once it is applied, so no client reads a state
		// without an acknowledged write.
		if err := node.WaitApplied(context.Background(), r.Storage().Recovered().LastIndex); err != nil {
			return fmt.Errorf("applying the recovered log: %w", err)
		}
		r.leader.Store(1)
		return nil
	}
	r.wg.Add(3)
	go r.followLeader(node)
	go r.sendTouches()
	go r.promoteLearners(node)
	return nil
}

// openExisting opens an ensemble member's storage if its data directory
// has one, and takes its raft identity from it; restarted reports whether
// it holds raft state (a member that only recorded the identity it was
// going to rejoin under has none).
func (r *Replica) openExisting(sopts storage.Options) (restarted bool, err error) {
	dir := filepath.Join(r.dir, "zkgo")
	if !storage.Exists(dir) {
		return false, nil
	}
	openStart := time.Now()
	st, err := storage.Open(dir, sopts) // no Metadata: read what it records
	if err != nil {
		return false, fmt.Errorf("open data directory: %w", err)
	}
	r.openTook = time.Since(openStart)
	md := st.Recovered().Metadata
	if len(md) != 16 || binary.BigEndian.Uint64(md[8:]) != clusterID || MemberID(binary.BigEndian.Uint64(md)) != r.opts.ServerID {
		st.Close()
		return false, fmt.Errorf("%w: %s was created for another member or cluster (metadata %x; this is server %d)",
			raftnode.ErrIDMismatch, dir, md, r.opts.ServerID)
	}
	r.setStorage(st, binary.BigEndian.Uint64(md))
	return r.view.hasState, nil
}

// create creates the storage of an ensemble member that starts with
// raft id id.
func (r *Replica) create(sopts storage.Options, id uint64) error {
	sopts.Metadata = raftnode.Metadata(id, clusterID)
	st, err := storage.Open(filepath.Join(r.dir, "zkgo"), sopts)
	if err != nil {
		return fmt.Errorf("open data directory: %w", err)
	}
	r.setStorage(st, id)
	return nil
}

func (r *Replica) setStorage(st *storage.Storage, id uint64) {
	has := raftnode.HasState(st)
	hs, _, _ := st.RaftStorage().InitialState()
	r.view.mu.Lock()
	r.st = st
	r.view.hasState, r.view.hardState = has, hs
	r.view.mu.Unlock()
	r.id.Store(id)
}

// storage and raft return the storage and the raft node (nil before
// they exist).
func (r *Replica) Storage() *storage.Storage {
	r.view.mu.Lock()
	defer r.view.mu.Unlock()
	return r.st
}

func (r *Replica) Raft() *raftnode.Node {
	r.view.mu.Lock()
	defer r.view.mu.Unlock()
	return r.node
}

// bootstrapPeers is the initial Membership: every configured member under
// its first raft identity (the server id).
func (r *Replica) bootstrapPeers() []raftnode.Peer {
	if !r.Clustered() {
		return []raftnode.Peer{{ID: 1}}
	}
	var peers []raftnode.Peer
	for _, p := range r.opts.Peers {
		peers = append(peers, raftnode.Peer{ID: raftID(p.ID, 0), Addr: p.Addr, Learner: p.Observer})
	}
	return peers
}

func (r *Replica) closeStorage() {
	if st := r.Storage(); st != nil {
		st.Close()
	}
}

// transport returns the member's peer transport: the configured one, TCP
// on its peer address in an ensemble (its identity set once known), or a
// network of one.
func (r *Replica) transport() (raftnode.Transport, error) {
	opts := r.opts
	if opts.PeerTransport != nil {
		return opts.PeerTransport, nil
	}
	if !r.Clustered() {
		return raftnode.NewMemNetwork().Transport(1), nil
	}
	ln := opts.PeerListener
	if ln == nil {
		me, ok := r.Peer(opts.ServerID)
		if !ok {
			return nil, fmt.Errorf("listen for peers: server id %d is not among the members", opts.ServerID)
		}
		var err error
		if ln, err = listenPeers(me.addrs(), opts.PeerListenAll); err != nil {
			return nil, fmt.Errorf("listen for peers: %w", err)
		}
	}
	var dialAddr func(uint64, string) string
	if opts.PeerDialAddr != nil {
		dialAddr = func(id uint64, addr string) string { return opts.PeerDialAddr(MemberID(id), addr) }
	}
	return raftnode.NewTCPTransport(raftnode.TCPConfig{Listener: ln, Logger: r.log,
		ServerTLS: opts.PeerServerTLS, ClientTLS: opts.PeerClientTLS, ClientTLSFunc: opts.PeerClientTLSFunc,
		AcceptPlaintext: opts.PeerPortUnification,
		Probe:           r.answerProbe, Resolve: r.resolve, Admit: r.admitPeer, VerifyPeer: r.verifyPeer,
		FormationRefused: r.formationRefused, ClusterMismatch: r.clusterMismatch, VerifyPending: r.verifyPending, DialAddr: dialAddr,
		Auth: r.auth})
}

// isLeader reports whether this member decides session expiry: always
// when standalone, when it leads the raft group otherwise.
func (r *Replica) IsLeader() bool {
	if !r.Clustered() {
		return true
	}
	lead := r.leader.Load()
	return lead != 0 && uint64(lead) == r.id.Load()
}

// raftLeads reports whether raft names this member its leader, whether or
// not it serves (quorum.go): what admitting and promoting members need.
func (r *Replica) raftLeads() bool {
	lead := r.raftLead.Load()
	return lead != 0 && lead == r.id.Load()
}

// hasQuorum reports whether the member is part of a working quorum (it
// knows a leader); a member that is not refuses new sessions.
func (r *Replica) HasQuorum() bool {
	return !r.Clustered() || r.leader.Load() != 0
}

// followLeader records leadership changes and tells the server, and
// repeats every 10 s what keeps a member with a leader from serving.
func (r *Replica) followLeader(node *raftnode.Node) {
	defer r.wg.Done()
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	var last raftnode.LeaderChange // raft's last report
	r.settleLeader(node, last, false)
	for {
		select {
		case ch := <-node.LeaderChanges():
			if ch.ProposalsLost {
				r.h.LeaderChanged(ch)
				continue
			}
			last = ch
			r.raftLead.Store(ch.Leader)
			r.settleLeader(node, ch, true)
		case <-r.recheck:
			r.settleLeader(node, last, false)
		case <-t.C:
			r.settleLeader(node, last, false)
			r.logWaiting(node)
		case <-r.quit:
			return
		case <-node.Done():
			r.leader.Store(0)
			r.raftLead.Store(0)
			if err := node.Err(); err != nil && r.h.Fatal != nil {
				if errors.Is(err, storage.ErrFailed) {
					// The one line an operator needs. Not retried:
					// after a failed fsync the kernel may have
					// dropped the pages it could not write, so a
					// later fsync that succeeds proves nothing
					// (PostgreSQL's "fsyncgate"; etcd also exits).
					r.log.Error("disk failure: the data directory could not be written or synced, so this member stopped: it acknowledges no write it could not make durable. "+
						"Restart it once the disk is fixed: it recovers its log up to the last durable write and catches up from the leader",
						"dir", r.Storage().Dir(), "err", err)
				} else {
					r.log.Error("raft stopped", "err", err)
				}
				if errors.Is(err, raftnode.ErrLogBehind) {
					r.log.Error("this member's data directory holds less than it once acknowledged to the ensemble (restored from an old backup?): " +
						"move its zkgo directory away and start the member again; it then rejoins under a new raft identity and receives the data from the leader")
				}
				go r.h.Fatal(err)
			}
			return
		}
	}
}

// sendTouches reports, every half tick, the sessions this member's clients
// kept alive, as a log entry every member applies (so whichever member
// leads knows them). The leader's own clients need no report.
func (r *Replica) sendTouches() {
	defer r.wg.Done()
	t := time.NewTicker(max(r.opts.TickTime/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-r.quit:
			return
		}
		ids := r.sessions.TakeTouched()
		if len(ids) == 0 || r.IsLeader() {
			continue
		}
		for len(ids) > 0 {
			n := min(len(ids), statemachine.MaxTouchBatch)
			ctx, cancel := context.WithTimeout(context.Background(), r.opts.TickTime)
			r.prop.proposeNow(ctx, statemachine.TouchEntry(ids[:n]))
			cancel()
			ids = ids[n:]
		}
	}
}

// status returns raft's view and the storage's counters (nil before start).
func (r *Replica) Status() (st raftnode.Status, syncs, entries, prefilled uint64, ok bool) {
	r.view.mu.Lock()
	node, s := r.node, r.st
	r.view.mu.Unlock()
	if node == nil {
		return st, 0, 0, 0, false
	}
	syncs, entries = s.Counters()
	return node.Status(), syncs, entries, s.PrefilledBytes(), true
}

// stop stops raft and closes the storage.
func (r *Replica) Stop() {
	if r.quit != nil {
		close(r.quit)
	}
	r.wg.Wait()
	if node := r.Raft(); node != nil {
		node.Stop()
	} else if r.tr != nil {
		r.tr.Stop()
	}
	r.closeStorage()
}

// refuseJavaDataDir refuses a directory that holds Apache ZooKeeper's data
// (version-2/ with snapshot.* or log.* files) and no zkgo data: zkgo cannot
// read it, and starting empty there would look like data loss.
func refuseJavaDataDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "zkgo")); err == nil {
		return nil
	}
	ents, err := os.ReadDir(filepath.Join(dir, "version-2"))
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, "snapshot.") || strings.HasPrefix(n, "log.") {
			return fmt.Errorf("%s holds Apache ZooKeeper data (%s); import it first with zkgo import -config zoo.cfg (or point dataDir/dataLogDir at an empty directory)", dir, filepath.Join("version-2", n))
		}
	}
	return nil
}

// RaftTickInterval is the length of a raft tick for a tickTime: half of
// it, at least 10 ms and at most 100 ms. With ZooKeeper's default tickTime
// of 2 s a 1 s raft tick would make a first election (10–20 ticks) take
// 10–20 s, where ZooKeeper's takes about one.
func RaftTickInterval(tickTime time.Duration) time.Duration {
	return min(max(tickTime/2, 10*time.Millisecond), 100*time.Millisecond)
}

// snapBytes is Config.SnapBytes as raftnode.Config.SnapBytes.
func snapBytes(n int64) uint64 {
	if n < 0 {
		return math.MaxUint64
	}
	return uint64(n)
}

// proposalSession is raftnode.Config.ProposalSource: a transaction's
// session.
func proposalSession(data []byte) (uint64, bool) {
	id, ok := statemachine.EntrySession(data)
	return uint64(id), ok
}

// notifications is raftnode.Config.Notifications: sm's watch manager, or
// nil (a nil *watch.Manager must not become a non-nil interface).
func notifications(sm *statemachine.Machine) raftnode.Notifications {
	if m := sm.Notifications(); m != nil {
		return m
	}
	return nil
}
