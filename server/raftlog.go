package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/storage"
	"github.com/zkgo/zkgo/tree"
)

// txnLog orders transactions and feeds them to the apply loop. memLog keeps
// nothing; raftLog persists every transaction (fsync) before it is applied
// and answered.
type txnLog interface {
	start() error
	// propose queues txn; done (may be nil) runs once it is applied, or
	// with a nil result (on any goroutine, without the tree lock) if the
	// proposal was lost and its outcome is unknown. It returns false if
	// the log is stopped; done is then never called.
	propose(txn *tree.Txn, done applyFunc) bool
	// proposeHeld is propose that may leave txn queued until the next
	// propose or release: a connection's reader holds the writes of the
	// requests it already has buffered and releases them together. The
	// caller must call release before it waits for anything.
	proposeHeld(txn *tree.Txn, done applyFunc) bool
	release()
	stop()
}

// clusterID names a standalone zkgo group in its WAL metadata.
const clusterID = 0x7a6b676f // "zkgo"

// raftLog is the durable log: a raft group of one member (go.etcd.io/raft
// via raftnode) over etcd's WAL (storage). Entry data is an 8-byte proposal
// id followed by the encoded tree.Txn; the raft index is the zxid.
//
// Ordering: raftnode persists entries (fsync unless NoSync) before it hands
// them to Apply, so a reply — sent from the done callback inside Apply — is
// never sent for a write that is not on disk. Entries of one Ready share one
// fsync (group commit).
type raftLog struct {
	s    *Server
	dir  string
	st   *storage.Storage
	node *raftnode.Node

	leader atomic.Int64  // the raft leader's id, 0 while unknown
	quit   chan struct{} // closed by stop; ends the helper goroutines
	wg     sync.WaitGroup

	idBase uint64 // random high bits, so ids never repeat across restarts

	mu      sync.Mutex     // guards everything below
	pending []*pendingProp // proposals with a waiter, oldest first
	nextID  uint64
	stopped bool
	// Proposals waiting to be handed to raft, and whether a proposer is
	// handing them over (see propose).
	queue      [][]byte
	queueProps []*pendingProp
	submitting bool
}

func newRaftLog(s *Server, dir string) *raftLog {
	var b [4]byte
	rand.Read(b[:])
	return &raftLog{s: s, dir: dir, quit: make(chan struct{}),
		idBase: uint64(binary.BigEndian.Uint32(b[:])) << 32}
}

// start opens the storage, restores the newest snapshot and replays the
// log into the tree (through the StateMachine methods below), then starts
// raft. It returns once the member leads its group of one.
func (l *raftLog) start() error {
	opts := &l.s.opts
	if err := refuseJavaDataDir(l.dir); err != nil {
		return err
	}
	id := uint64(1)
	peers := []raftnode.Peer{{ID: 1}}
	if l.s.clustered() {
		id = uint64(opts.ServerID)
		peers = peers[:0]
		for _, p := range opts.Peers {
			peers = append(peers, raftnode.Peer{ID: uint64(p.ID), Addr: p.Addr, Learner: p.Observer})
		}
	}
	st, err := storage.Open(filepath.Join(l.dir, "zkgo"), storage.Options{
		NoSync:     opts.NoSync,
		SnapRetain: max(opts.SnapRetainCount, storage.DefaultSnapRetain),
		Logger:     l.s.log,
		Metadata:   raftnode.Metadata(id, clusterID),
	})
	if err != nil {
		return fmt.Errorf("open data directory: %w", err)
	}
	l.st = st
	var tr raftnode.Transport
	if opts.PeerTransport != nil {
		tr = opts.PeerTransport
	} else if l.s.clustered() {
		ln := opts.PeerListener
		if ln == nil {
			for _, p := range opts.Peers {
				if p.ID == opts.ServerID {
					ln, err = net.Listen("tcp", p.Addr)
				}
			}
			if err != nil {
				st.Close()
				return fmt.Errorf("listen for peers: %w", err)
			}
		}
		tr, err = raftnode.NewTCPTransport(raftnode.TCPConfig{ID: id, ClusterID: clusterID, Listener: ln, Logger: l.s.log})
		if err != nil {
			st.Close()
			return err
		}
	} else {
		tr = raftnode.NewMemNetwork().Transport(1)
	}
	node, err := raftnode.Start(raftnode.Config{
		ID:           id,
		ClusterID:    clusterID,
		Peers:        peers,
		Storage:      st,
		StateMachine: l,
		Transport:    tr,
		SnapCount:    uint64(opts.SnapCount),
		TickInterval: RaftTickInterval(opts.TickTime),
		Ticks:        opts.RaftTicks,
		Logger:       l.s.log,
	})
	if err != nil {
		st.Close()
		return err
	}
	l.node = node
	l.s.sessions.restore()
	if !l.s.clustered() {
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
		if err := node.WaitApplied(context.Background(), st.Recovered().LastIndex); err != nil {
			return fmt.Errorf("applying the recovered log: %w", err)
		}
		l.leader.Store(1)
		return nil
	}
	l.wg.Add(2)
	go l.followLeader()
	go l.sendTouches()
	return nil
}

// followLeader records leadership changes. A member that becomes leader
// gives every session a fresh timeout before it expires any.
func (l *raftLog) followLeader() {
	defer l.wg.Done()
	for {
		select {
		case ch := <-l.node.LeaderChanges():
			if ch.ProposalsLost {
				// The same leader, but a proposal forwarded to it was
				// dropped on the way: its writer would wait forever.
				l.s.abortPendingWrites(0)
				continue
			}
			if ch.IsSelf {
				l.s.sessions.refreshAll()
			}
			// A proposal in flight across a change of leader may be lost
			// (raft drops it, or overwrites it in an old leader's log)
			// without telling anyone: drop the connections that wait for
			// one, so their clients see a connection loss (outcome
			// unknown, as with ZooKeeper) instead of waiting forever.
			l.s.abortPendingWrites(0)
			l.leader.Store(int64(ch.Leader))
			if l.s.opts.ReadOnlyMode {
				// readonlymode.enabled: serve read-only sessions while
				// cut off from the quorum; back to normal with a leader.
				l.s.SetReadOnly(ch.Leader == 0)
			}
			l.s.log.Info("raft leader", "leader", ch.Leader, "term", ch.Term, "self", ch.IsSelf)
		case <-l.quit:
			return
		case <-l.node.Done():
			l.leader.Store(0)
			return
		}
	}
}

// sendTouches reports, every half tick, the sessions this member's clients
// kept alive, as a log entry every member applies (so whichever member
// leads knows them). The leader's own clients need no report.
func (l *raftLog) sendTouches() {
	defer l.wg.Done()
	t := time.NewTicker(max(l.s.opts.TickTime/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.quit:
			return
		}
		ids := l.s.sessions.takeTouched()
		if len(ids) == 0 || l.s.isLeader() {
			continue
		}
		var e jute.Encoder
		e.WriteLong(0) // proposal id 0: a touch batch
		e.WriteInt(int32(len(ids)))
		for _, id := range ids {
			e.WriteLong(id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.s.opts.TickTime)
		l.node.Propose(ctx, e.Bytes())
		cancel()
	}
}

// pendingProp is a proposal made here that waits for its entry to apply.
// seq is the low half of its proposal id.
type pendingProp struct {
	seq  uint32
	done applyFunc // nil once called
}

// maxSubmitRounds bounds how many batches a proposer hands to raft for
// others before a goroutine of its own takes over, so that one
// connection's reader is not kept from its own requests under load.
const maxSubmitRounds = 4

// propose queues txn for raft. Proposals are combined: the proposer that
// finds nobody handing proposals to raft becomes the submitter and hands
// over everything queued, its own and what other proposers queue
// meanwhile, as one raft message per round (raft appends them as adjacent
// entries, in queue order), until the queue is empty. The others return
// at once. Under load this turns many channel round trips into raft's
// goroutine into one, and a single submitter keeps the log order of this
// member's proposals equal to their order here, which takePending relies
// on to notice a proposal raft dropped.
func (l *raftLog) propose(txn *tree.Txn, done applyFunc) bool {
	return l.enqueue(txn, done, false)
}

func (l *raftLog) proposeHeld(txn *tree.Txn, done applyFunc) bool {
	return l.enqueue(txn, done, true)
}

// release hands what proposeHeld left queued to raft, unless a submitter
// is at it already.
func (l *raftLog) release() {
	l.mu.Lock()
	if l.submitting || len(l.queue) == 0 {
		l.mu.Unlock()
		return
	}
	l.submitting = true
	l.submit(maxSubmitRounds)
}

func (l *raftLog) enqueue(txn *tree.Txn, done applyFunc, hold bool) bool {
	var e jute.Encoder
	e.WriteLong(0) // the proposal id, filled in below
	if txn.Op != proto.OpSync {
		txn.Encode(&e) // a sync is a barrier: the id alone
	}
	data := e.Bytes()
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return false
	}
	l.nextID++
	seq := uint32(l.nextID)
	binary.BigEndian.PutUint64(data, l.idBase|uint64(seq))
	var p *pendingProp
	if done != nil {
		p = &pendingProp{seq: seq, done: done}
		l.pending = append(l.pending, p)
	}
	l.queue = append(l.queue, data)
	l.queueProps = append(l.queueProps, p)
	if l.submitting || hold {
		l.mu.Unlock()
		return true
	}
	l.submitting = true
	l.submit(maxSubmitRounds)
	return true
}

// submit hands queued proposals to raft, rounds times at most (0: until
// the queue is empty), then hands the rest to a new goroutine. It is
// called with l.mu held and l.submitting set, and returns with l.mu
// released.
func (l *raftLog) submit(rounds int) {
	for round := 0; len(l.queue) > 0; round++ {
		if rounds > 0 && round == rounds {
			go func() {
				l.mu.Lock()
				l.submit(0)
			}()
			l.mu.Unlock()
			return
		}
		datas, props := l.queue, l.queueProps
		l.queue, l.queueProps = nil, nil
		l.mu.Unlock()
		// A single proposal waits for raft to accept it, so a drop is
		// reported at once; a batch is stepped without waiting, and a
		// drop (rare: a leadership transfer, the uncommitted-size limit)
		// shows when a later proposal of this member applies.
		err := l.node.ProposeBatch(context.Background(), datas)
		if err != nil {
			l.s.log.Warn("proposal failed", "err", err, "proposals", len(datas))
			l.fail(props)
		}
		l.mu.Lock()
	}
	l.submitting = false
	l.mu.Unlock()
}

// fail tells the waiters of proposals that never reached the log that
// their outcome is unknown (done with a nil result).
func (l *raftLog) fail(props []*pendingProp) {
	var dones []applyFunc
	l.mu.Lock()
	for _, p := range props {
		if p != nil && p.done != nil {
			dones = append(dones, p.done)
			p.done = nil
		}
	}
	l.mu.Unlock()
	for _, done := range dones {
		done(0, nil)
	}
}

func (l *raftLog) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	close(l.quit)
	l.wg.Wait()
	if l.node != nil {
		l.node.Stop()
	}
	if l.st != nil {
		l.st.Close()
	}
}

// Apply implements raftnode.StateMachine: committed, persisted entries in
// order, on raft's goroutine.
func (l *raftLog) Apply(entries []raftpb.Entry) {
	batch := make([]proposal, 0, len(entries))
	for _, ent := range entries {
		if ent.Type != raftpb.EntryNormal || len(ent.Data) < 8 {
			continue // raft's own empty entries and configuration changes
		}
		id := binary.BigEndian.Uint64(ent.Data)
		if id == 0 {
			l.applyTouches(ent.Data[8:])
			continue
		}
		if len(ent.Data) == 8 { // a sync barrier
			batch = append(batch, proposal{done: l.takePending(id), zxid: int64(ent.Index)})
			continue
		}
		txn, err := tree.DecodeTxn(ent.Data[8:])
		if err != nil {
			// Only this server writes entries; a bad one means a bug or
			// corruption that the WAL's CRC did not catch. Stop rather
			// than diverge.
			panic(fmt.Sprintf("server: undecodable log entry %d: %v", ent.Index, err))
		}
		batch = append(batch, proposal{txn: txn, done: l.takePending(id), zxid: int64(ent.Index)})
	}
	if len(batch) > 0 {
		l.s.applyBatch(batch)
	}
}

// takePending removes and returns the waiter of a proposal made here (nil
// for entries proposed elsewhere or before a restart). This member's
// proposals enter the log in the order they were made (one submitter at a
// time, one raft message per batch), so waiters older than id whose
// entries never applied were dropped by raft, or lost with a leader: they
// are told the outcome is unknown.
func (l *raftLog) takePending(id uint64) applyFunc {
	if id&^0xffffffff != l.idBase {
		return nil
	}
	seq := uint32(id)
	var done applyFunc
	var lost []applyFunc
	l.mu.Lock()
	n := 0
	for ; n < len(l.pending); n++ {
		p := l.pending[n]
		d := int32(p.seq - seq) // wraps with the 32-bit sequence
		if d > 0 {
			break // already failed; the entry applies late
		}
		if d == 0 {
			done, p.done = p.done, nil
			n++
			break
		}
		if p.done != nil {
			lost = append(lost, p.done)
			p.done = nil
		}
	}
	if n > 0 {
		clear(l.pending[:n])
		l.pending = l.pending[n:]
		if len(l.pending) == 0 {
			l.pending = l.pending[:0:0]
		}
	}
	l.mu.Unlock()
	for _, f := range lost {
		f(0, nil)
	}
	return done
}

// applyTouches applies a touch batch: sessions another member kept alive.
func (l *raftLog) applyTouches(b []byte) {
	d := jute.NewDecoder(b)
	n := d.ReadInt()
	if n < 0 || int(n) > len(b)/8 {
		return
	}
	ids := make([]int64, 0, n)
	for i := int32(0); i < n; i++ {
		ids = append(ids, d.ReadLong())
	}
	if d.Err() == nil {
		l.s.sessions.remoteTouch(ids)
	}
}

// Snapshot implements raftnode.StateMachine: the tree as of now (the apply
// goroutine calls it between applies), streamed into the snapshot file
// while applying goes on; tree.Snapshot.Write reads the tree under the read
// lock one node at a time and Apply keeps the pre-images of what it changes
// meanwhile.
func (l *raftLog) Snapshot() (func(io.Writer) error, error) {
	l.s.treeMu.Lock()
	sn, err := l.s.tree.BeginSnapshot()
	l.s.treeMu.Unlock()
	if err != nil {
		return nil, err
	}
	return func(w io.Writer) error { return sn.Write(w, l.s.treeMu.RLocker()) }, nil
}

// Restore implements raftnode.StateMachine: empty data is the initial,
// empty tree.
func (l *raftLog) Restore(data []byte, index uint64) error {
	t := tree.New()
	if len(data) > 0 {
		var err error
		t, err = tree.ReadSnapshot(bytes.NewReader(data), tree.ReadOptions{MaxBuffer: l.s.opts.MaxBuffer})
		if err != nil {
			return fmt.Errorf("restore snapshot at index %d: %w", index, err)
		}
	}
	l.s.treeMu.Lock()
	l.s.setTree(t)
	l.s.treeMu.Unlock()
	return nil
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
			return fmt.Errorf("%s holds Apache ZooKeeper data (%s); zkgo cannot import it yet: point dataDir/dataLogDir at an empty directory", dir, filepath.Join("version-2", n))
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
