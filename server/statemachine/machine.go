package statemachine

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/audit"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

// Machine is the only owner of the tree and its lock. raft hands it
// committed, persisted entries in log order (raftnode.StateMachine, on
// the apply goroutine); it decodes them, applies each transaction to the
// tree at its zxid (the raft index), fires watches, tells the proposal's
// Waiter (which queues the client's reply) and tells the session tracker.
// Everything else reads the tree under the read lock, through View, or
// changes it through the methods below (never directly).
type Machine struct {
	// Hooks are set before raft starts (before the first Apply or
	// Restore) and not changed after, except Audit (SetAudit).
	Hooks

	log     *slog.Logger
	watches *watch.Manager
	setup   func(*tree.Tree) // options of every tree it installs
	maxBuf  int              // jute.maxbuffer, the bound of a snapshot's records
	// failed stops applying after an entry could not be decoded (see
	// Apply); OnFail is told once.
	failed atomic.Bool

	// audit, if set, records the ephemeral nodes closed sessions leave,
	// as the user auditUser. The apply goroutine reads it under mu.
	audit     *audit.Writer
	auditUser string

	mu   sync.RWMutex // guards tree and audit; Apply, Restore and the config updates are the only writers of tree
	tree *tree.Tree

	checkedMu sync.Mutex      // guards checked
	checked   checkedSnapshot // the last snapshot CheckSnapshot loaded
	// hasChecked is set while checked holds a tree (Apply's quick look).
	hasChecked atomic.Bool

	// Apply goroutine only: the batch being applied, reused.
	items []applyItem
	batch Batch
}

// Hooks are what a Machine tells the rest of the member, and asks it.
type Hooks struct {
	// Waiters finds who waits for a proposal (the proposer). Required.
	Waiters WaiterSource
	// Sessions is told what the log does to sessions (the session
	// tracker). Required.
	Sessions SessionObserver
	// OnFail is told, once and on a goroutine of its own, that an entry
	// could not be decoded and applying stopped for good.
	OnFail func(error)
	// OnFormation, if set, is told (on the apply goroutine) the
	// ensemble's formation when its entry is applied, and the entry's
	// index (the replica).
	OnFormation func(f, index uint64)
	// Formation, if set, is the formation Snapshot writes ahead of the
	// tree (the replica's; see SnapshotFormationMagic).
	Formation func() uint64
	// OnRestore, if set, is told (on the apply goroutine) that the state
	// was replaced by a snapshot's, with the formation the snapshot
	// carries (0: none).
	OnRestore func(formation uint64)
	// Metrics, if set, is told of every applied transaction.
	Metrics Metrics
}

// Metrics records what applying measures (the server's metrics; the
// apply goroutine calls it with the tree locked).
type Metrics interface {
	// Applied: a transaction made at txnTime (Unix ms) was applied at
	// now (Unix ms).
	Applied(now, txnTime int64)
}

// WaiterSource finds the Waiter of a proposal id (the proposer; the
// apply goroutine calls it).
type WaiterSource interface {
	// Take removes and returns the waiter of proposal id, nil if nobody
	// here waits for it.
	Take(id uint64) Waiter
}

// A Waiter is told the outcome of a write or sync proposed on its behalf
// (a client's request, a reconfig barrier):
//
//   - Applied, by the Machine on the apply goroutine with the tree
//     write-locked, once the entry is applied at zxid (res is empty for a
//     sync barrier). It must not block or take the tree lock; b lets it
//     defer waking its connection's writer to the end of the batch, and
//     gives it the tree (b.Tree) to answer reads queued behind the write.
//   - Lost, by the proposer or the Machine on any goroutine without the
//     tree lock, when the proposal was dropped (by raft, or with a
//     leader) and its outcome is unknown.
type Waiter interface {
	Applied(zxid int64, res *tree.Result, b *Batch)
	Lost()
}

// ApplyStamper is a Waiter that wants to know when applying its entry
// began (the server's per-stage latencies).
type ApplyStamper interface {
	StampApply(at time.Time)
}

// SessionObserver is told, on the apply goroutine with the tree locked,
// what the log does to sessions (the session tracker).
type SessionObserver interface {
	// Applied is called after every transaction.
	Applied(txn *tree.Txn, res *tree.Result)
	// RemoteTouch: sessions another member's clients kept alive.
	RemoteTouch(ids []int64)
	// Moved: a client resumed session id on member owner (its claim
	// number claim there).
	Moved(id, owner int64, claim uint64)
}

// Batch collects what must happen once at the end of a batch of
// applied entries: waking each connection's writer once for all its
// replies, so they leave in one write.
type Batch struct {
	wake  []BatchWaker
	later []func()
	tree  *tree.Tree
}

// BatchWaker is woken at the end of the batch it joined (a connection).
type BatchWaker interface{ EndBatch() }

// Join asks for w.EndBatch at the end of the batch.
func (b *Batch) Join(w BatchWaker) { b.wake = append(b.wake, w) }

// Later asks for fn at the end of the batch, after every EndBatch, with
// the tree still locked: work that should not delay the batch's wake-ups
// (a connection's reads queued behind its write).
func (b *Batch) Later(fn func()) { b.later = append(b.later, fn) }

// Tree is the tree being applied to, write-locked for as long as the
// batch lasts: Waiter.Applied may read it (and only then).
func (b *Batch) Tree() *tree.Tree { return b.tree }

// deferFanOut is the number of watchers from which an event's
// notifications, queued at once, are woken only after the batch's replies
// (watch.Manager.TriggerDeferred). Waking them first started a writer
// goroutine per watcher ahead of the writer's own reply: with 10,000
// watchers of one node its setData was answered after ~100 ms, once most
// of them had run. A lock's or a queue's deletion wakes one or two.
const deferFanOut = 64

type applyItem struct {
	zxid int64 // for a move: its log index
	txn  *tree.Txn
	move *sessionMove // neither txn nor move: a sync barrier
	w    Waiter
}

// sessionMove is a session move entry being applied.
type sessionMove struct {
	id, owner int64
	claim     uint64
}

// New returns a Machine holding an empty tree. setup is applied to every
// tree it installs (the initial one, each restored one); maxBuf bounds a
// snapshot's records (jute.maxbuffer). Set its Hooks before raft starts.
func New(log *slog.Logger, watches *watch.Manager, setup func(*tree.Tree), maxBuf int) *Machine {
	sm := &Machine{log: log, watches: watches, setup: setup, maxBuf: maxBuf}
	sm.tree = tree.New()
	setup(sm.tree)
	return sm
}

// View calls fn with the tree under the read lock. fn must not keep the
// tree, nor wait for a write.
func (sm *Machine) View(fn func(t *tree.Tree)) {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	fn(sm.tree)
}

// Failed reports whether applying stopped at an entry that could not be
// decoded (OnFail was, or is being, told).
func (sm *Machine) Failed() bool { return sm.failed.Load() }

// LastZxid returns the zxid of the last applied transaction.
func (sm *Machine) LastZxid() int64 {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	return sm.tree.LastZxid()
}

// Notifications returns the watch manager as raftnode.Config.Notifications
// (which clients were just told of a change), or nil without one.
func (sm *Machine) Notifications() *watch.Manager { return sm.watches }

// SetAudit sets (or, with nil, clears) the audit log the Machine records
// the ephemeral nodes of closed sessions in, as user.
func (sm *Machine) SetAudit(w *audit.Writer, user string) {
	sm.mu.Lock()
	sm.audit, sm.auditUser = w, user
	sm.mu.Unlock()
}

// SetConfigData sets /zookeeper/config's data and version outside the log
// (a member's own view of its membership; tree.SetConfigDataAt).
func (sm *Machine) SetConfigData(data []byte, version int64) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.tree.SetConfigDataAt(data, version)
}

// ReconfigData records a committed membership in /zookeeper/config and
// returns the watch events it fires (tree.ReconfigData).
func (sm *Machine) ReconfigData(data []byte, version, mtime int64) []tree.Event {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.tree.ReconfigData(data, version, mtime)
}

// Apply implements raftnode.StateMachine: committed, persisted entries in
// order, on the apply goroutine. An entry that cannot be decoded (a bug,
// corruption the WAL's CRC did not catch, or a newer zkgo's format) stops
// applying for good, so this member never diverges, and onFail stops the
// server; it never panics.
func (sm *Machine) Apply(ents []raftpb.Entry) {
	if sm.failed.Load() {
		return
	}
	if sm.hasChecked.Load() && len(ents) > 0 {
		sm.dropChecked(ents[len(ents)-1].Index)
	}
	items := sm.items[:0]
	got := time.Now() // stageApply begins for the writes in ents
	for i := range ents {
		ent := &ents[i]
		if ent.Type != raftpb.EntryNormal || len(ent.Data) == 0 {
			continue // raft's own empty entries and configuration changes
		}
		e, err := DecodeEntry(ent.Data)
		if err != nil {
			// Apply what came before, then stop.
			sm.applyItems(items)
			sm.fail(fmt.Errorf("raft log entry %d: %w", ent.Index, err))
			return
		}
		switch e.Kind {
		case EntryTouches:
			sm.Sessions.RemoteTouch(e.Sessions)
		case EntryMove:
			// In log order with the transactions around it: the move
			// is the session's newest claim from here on.
			var w Waiter
			if e.ID != 0 {
				w = sm.Waiters.Take(e.ID)
			}
			items = append(items, applyItem{zxid: int64(ent.Index), w: w,
				move: &sessionMove{id: e.Sessions[0], owner: e.Owner, claim: e.Claim}})
		case EntryFormation:
			if sm.OnFormation != nil {
				// What came before first: onFormation may set
				// /zookeeper/config's version (formation.go).
				sm.applyItems(items)
				clear(items)
				items = items[:0]
				sm.OnFormation(e.Formation, ent.Index)
			}
		case EntrySync:
			items = append(items, applyItem{zxid: int64(ent.Index), w: stampApply(sm.Waiters.Take(e.ID), got)})
		case EntryTxn:
			items = append(items, applyItem{zxid: int64(ent.Index), txn: e.Txn, w: stampApply(sm.Waiters.Take(e.ID), got)})
		}
	}
	sm.applyItems(items)
	clear(items)
	sm.items = items[:0]
}

func (sm *Machine) fail(err error) {
	if sm.failed.Swap(true) {
		return
	}
	sm.log.Error("cannot apply the raft log; this member stops applying and shuts down", "err", err)
	if sm.OnFail != nil {
		go sm.OnFail(err)
	}
}

// applyItems applies a batch under one acquisition of the tree lock. It is
// the only place the tree is modified (besides Restore).
func (sm *Machine) applyItems(items []applyItem) {
	if len(items) == 0 {
		return
	}
	var now int64
	if sm.Metrics != nil {
		now = time.Now().UnixMilli()
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	b := &sm.batch
	var late []watch.HeldWatcher // woken at the end (deferFanOut)
	b.tree = sm.tree
	defer func() { b.tree = nil }()
	for i := range items {
		it := &items[i]
		if m := it.move; m != nil {
			// A client resumed session m.id on member m.owner: from now
			// on the session refuses what its older connections
			// proposed (tree.Txn.Claim), and those still open on other
			// members are told (sessionMoved). The Waiter, the resumed
			// connection, learns its claim: the move's index.
			sm.tree.ClaimSession(m.id, it.zxid)
			sm.Sessions.Moved(m.id, m.owner, m.claim)
			if it.w != nil {
				it.w.Applied(it.zxid, &tree.Result{}, b)
			}
			continue
		}
		if it.txn == nil {
			// A sync barrier: nothing to apply. Its reply carries the
			// last transaction's zxid, not the barrier's log index: a
			// client must never have seen a zxid the tree lacks (it
			// could not resume its session then).
			if it.w != nil {
				it.w.Applied(sm.tree.LastZxid(), &tree.Result{}, b)
			}
			continue
		}
		res := sm.tree.Apply(it.zxid, it.txn)
		if sm.Metrics != nil {
			sm.Metrics.Applied(now, it.txn.Time)
		}
		sm.expectSuccessor(it.txn, &res)
		// Watches fire before the reply is queued and before the lock is
		// released, so no reply that observes the change can precede the
		// notification. The watchers of a large fan-out are woken last,
		// after the batch's replies and its reads (deferFanOut).
		late = append(late, sm.watches.TriggerDeferred(res.Events, deferFanOut)...)
		if sm.audit != nil && it.txn.Op == proto.OpCloseSession {
			sm.auditEphemerals(it.txn, &res)
		}
		// The requester's reply is queued before the session's connections
		// are told to close, so a closeSession reply is never lost.
		if it.w != nil {
			it.w.Applied(it.zxid, &res, b)
		}
		sm.Sessions.Applied(it.txn, &res)
	}
	for i, w := range b.wake {
		w.EndBatch()
		b.wake[i] = nil
	}
	b.wake = b.wake[:0]
	for i, fn := range b.later {
		fn()
		b.later[i] = nil
	}
	b.later = b.later[:0]
	for _, w := range late {
		w.Wake()
	}
}

// Snapshot implements raftnode.StateMachine: the tree as of now (the apply
// goroutine calls it between applies), streamed into the snapshot file
// while applying goes on; tree.Snapshot.Write reads the tree under the read
// lock one node at a time and Apply keeps the pre-images of what it changes
// meanwhile.
func (sm *Machine) Snapshot() (func(io.Writer) error, error) {
	var f uint64
	if sm.Formation != nil {
		f = sm.Formation()
	}
	sm.mu.Lock()
	sn, err := sm.tree.BeginSnapshot()
	sm.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return func(w io.Writer) error {
		if w != nil && f >= 2 {
			var hdr [SnapshotFormationLen]byte
			copy(hdr[:], SnapshotFormationMagic)
			binary.BigEndian.PutUint64(hdr[len(SnapshotFormationMagic):], f)
			if _, err := w.Write(hdr[:]); err != nil {
				sn.Write(nil, nil) // release the capture
				return err
			}
		}
		return sn.Write(w, sm.mu.RLocker())
	}, nil
}

// ReadSnapshot reads a state machine snapshot (Snapshot's format:
// the optional formation prefix, then the tree's snapshot) to its end. No
// data at all is the initial, empty tree.
func ReadSnapshot(br *bufio.Reader, maxBuf int) (*tree.Tree, error) {
	t, _, err := ReadSnapshotFormation(br, maxBuf)
	return t, err
}

// ReadSnapshotFormation is ReadSnapshot that also returns the
// formation the snapshot carries (0: none).
func ReadSnapshotFormation(br *bufio.Reader, maxBuf int) (*tree.Tree, uint64, error) {
	var formation uint64
	if p, err := br.Peek(SnapshotFormationLen); err == nil && string(p[:len(SnapshotFormationMagic)]) == SnapshotFormationMagic {
		formation = binary.BigEndian.Uint64(p[len(SnapshotFormationMagic):])
		if formation < 2 {
			return nil, 0, fmt.Errorf("%w: formation %d in its prefix", tree.ErrBadSnapshot, formation)
		}
		if _, err := br.Discard(SnapshotFormationLen); err != nil {
			return nil, 0, err
		}
	}
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return tree.New(), formation, nil
	} else if err != nil {
		return nil, 0, err
	}
	t, err := tree.ReadSnapshot(br, tree.ReadOptions{MaxBuffer: maxBuf})
	if err != nil {
		return nil, 0, err
	}
	// The reader checks the file's CRC at its end: read on to it.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, 0, err
	}
	return t, formation, nil
}

// A snapshot of a member whose ensemble has chosen its formation starts
// with the formation: SnapshotFormationMagic, then the formation as a
// big-endian uint64, then the tree's snapshot (tree.ReadSnapshot's
// format). A member whose formation is still pending — it missed the
// formation's entry because the leader sent it a snapshot instead —
// takes the formation from the snapshot (the sender is a member it let
// in, so of its own ensemble); without it, it had to learn the
// formation from a majority of the voters, which a rolling restart can
// leave it without. Snapshots without the prefix (standalone servers,
// ensembles still forming, older data directories) read as before. The
// snapshot file's CRC covers the prefix.
const (
	SnapshotFormationMagic = "ZKGOFORM"
	SnapshotFormationLen   = len(SnapshotFormationMagic) + 8
)

// Restore implements raftnode.StateMachine: no data (nil r, or an empty
// stream) is the initial, empty tree.
// CheckSnapshot implements raftnode.SnapshotChecker: a snapshot a peer
// streamed is loaded whole — every record decoded and the tree checked
// (tree.ReadSnapshot) — before raft takes it, and kept for the Restore at
// index that follows.
func (sm *Machine) CheckSnapshot(r io.Reader, index uint64) error {
	t, formation, err := ReadSnapshotFormation(bufio.NewReaderSize(r, 1<<16), sm.maxBuf)
	if err != nil {
		return fmt.Errorf("snapshot at index %d: %w", index, err)
	}
	sm.checkedMu.Lock()
	sm.checked = checkedSnapshot{tree: t, formation: formation, index: index}
	sm.hasChecked.Store(true)
	sm.checkedMu.Unlock()
	return nil
}

// dropChecked lets go of the checked snapshot once entries up to applied
// were applied past it: raft did not take it (the log caught this member
// up first).
func (sm *Machine) dropChecked(applied uint64) {
	sm.checkedMu.Lock()
	defer sm.checkedMu.Unlock()
	if applied >= sm.checked.index {
		sm.checked = checkedSnapshot{}
		sm.hasChecked.Store(false)
	}
}

// checkedSnapshot is a snapshot CheckSnapshot loaded.
type checkedSnapshot struct {
	tree      *tree.Tree
	formation uint64
	index     uint64
}

func (sm *Machine) Restore(r io.Reader, index uint64) error {
	t := tree.New()
	var formation uint64
	sm.checkedMu.Lock()
	c := sm.checked
	sm.checked = checkedSnapshot{}
	sm.hasChecked.Store(false)
	sm.checkedMu.Unlock()
	switch {
	case r != nil && c.tree != nil && c.index == index:
		t, formation = c.tree, c.formation // loaded by CheckSnapshot
	case r != nil:
		var err error
		t, formation, err = ReadSnapshotFormation(bufio.NewReaderSize(r, 1<<16), sm.maxBuf)
		if err != nil {
			return fmt.Errorf("restore snapshot at index %d: %w", index, err)
		}
	}
	sm.setup(t)
	sm.mu.Lock()
	sm.tree = t
	sm.mu.Unlock()
	if sm.OnRestore != nil {
		sm.OnRestore(formation)
	}
	return nil
}

// stampApply tells w, if it wants to know, when applying its entry began.
func stampApply(w Waiter, at time.Time) Waiter {
	if s, ok := w.(ApplyStamper); ok {
		s.StampApply(at)
	}
	return w
}

// auditEphemerals records the ephemeral nodes a closeSession deleted
// (DataTree.deleteNodes): every member, with the server's user. The
// apply goroutine, with mu held.
func (sm *Machine) auditEphemerals(txn *tree.Txn, res *tree.Result) {
	session := ""
	for _, ev := range res.Events {
		if ev.Type != proto.EventNodeDeleted {
			continue
		}
		if session == "" {
			session = audit.SessionHex(txn.Session)
		}
		sm.audit.Log(audit.Event{Session: session, User: sm.auditUser, Operation: audit.OpEphemeralDelete,
			Znode: ev.Path, Empty: audit.FieldZnode, Result: audit.Success})
	}
}
