package server

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

	"github.com/zkgo/zkgo/internal/audit"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/watch"
)

// stateMachine is the only owner of the tree and its lock. raft hands it
// committed, persisted entries in log order (raftnode.StateMachine, on
// the apply goroutine); it decodes them, applies each transaction to the
// tree at its zxid (the raft index), fires watches, tells the proposal's
// waiter (which queues the client's reply) and tells the session tracker.
// Everything else reads the tree under the read lock (view).
type stateMachine struct {
	log      *slog.Logger
	watches  *watch.Manager
	waiters  waiterSource
	sessions sessionObserver
	setup    func(*tree.Tree) // options of every tree it installs
	maxBuf   int              // jute.maxbuffer, the bound of a snapshot's records
	// failed stops applying after an entry could not be decoded (see
	// Apply); onFail is told once.
	failed atomic.Bool
	onFail func(error)
	// onFormation, if set, is told (on the apply goroutine) the
	// ensemble's formation when its entry is applied, and the entry's
	// index (the replica).
	// formation, if set, is the formation Snapshot writes ahead of the
	// tree (the replica's; see snapshotFormationMagic). onRestore, if
	// set, is told (on the apply goroutine) that the state was replaced
	// by a snapshot's, with the formation the snapshot carries (0: none).
	onFormation func(f, index uint64)
	formation   func() uint64
	onRestore   func(formation uint64)

	met *metricsServer // propagation_latency; nil without metrics

	// audit, if set, records the ephemeral nodes closed sessions leave
	// (audit.go), as the server's user auditUser.
	audit     *audit.Writer
	auditUser string

	mu   sync.RWMutex // guards tree; Apply and Restore are the only writers
	tree *tree.Tree

	checkedMu sync.Mutex      // guards checked
	checked   checkedSnapshot // the last snapshot CheckSnapshot loaded
	// hasChecked is set while checked holds a tree (Apply's quick look).
	hasChecked atomic.Bool

	// Apply goroutine only: the batch being applied, reused.
	items []applyItem
	batch applyBatch
}

// waiterSource finds the waiter of a proposal id (the proposer).
type waiterSource interface {
	take(id uint64) waiter
}

// sessionObserver is told, on the apply goroutine with the tree locked,
// what the log does to sessions (the session tracker).
type sessionObserver interface {
	// applied is called after every transaction.
	applied(txn *tree.Txn, res *tree.Result)
	// remoteTouch: sessions another member's clients kept alive.
	remoteTouch(ids []int64)
	// moved: a client resumed session id on member owner (its claim
	// number claim there).
	moved(id, owner int64, claim uint64)
}

// applyBatch collects what must happen once at the end of a batch of
// applied entries: waking each connection's writer once for all its
// replies, so they leave in one write.
type applyBatch struct {
	wake []batchWaker
}

// batchWaker is woken at the end of the batch it joined (a connection).
type batchWaker interface{ endBatch() }

// join asks for w.endBatch at the end of the batch.
func (b *applyBatch) join(w batchWaker) { b.wake = append(b.wake, w) }

type applyItem struct {
	zxid int64 // for a move: its log index
	txn  *tree.Txn
	move *sessionMove // neither txn nor move: a sync barrier
	w    waiter
}

// sessionMove is a session move entry being applied.
type sessionMove struct {
	id, owner int64
	claim     uint64
}

func newStateMachine(log *slog.Logger, watches *watch.Manager, setup func(*tree.Tree), maxBuf int) *stateMachine {
	sm := &stateMachine{log: log, watches: watches, setup: setup, maxBuf: maxBuf}
	sm.tree = tree.New()
	setup(sm.tree)
	return sm
}

// view calls fn with the tree under the read lock.
func (sm *stateMachine) view(fn func(t *tree.Tree)) {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	fn(sm.tree)
}

// lastZxid returns the zxid of the last applied transaction.
func (sm *stateMachine) lastZxid() int64 {
	sm.mu.RLock()
	defer sm.mu.RUnlock()
	return sm.tree.LastZxid()
}

// Apply implements raftnode.StateMachine: committed, persisted entries in
// order, on the apply goroutine. An entry that cannot be decoded (a bug,
// corruption the WAL's CRC did not catch, or a newer zkgo's format) stops
// applying for good, so this member never diverges, and onFail stops the
// server; it never panics.
func (sm *stateMachine) Apply(ents []raftpb.Entry) {
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
		e, err := decodeEntry(ent.Data)
		if err != nil {
			// Apply what came before, then stop.
			sm.applyItems(items)
			sm.fail(fmt.Errorf("raft log entry %d: %w", ent.Index, err))
			return
		}
		switch e.kind {
		case entryTouches:
			sm.sessions.remoteTouch(e.sessions)
		case entryMove:
			// In log order with the transactions around it: the move
			// is the session's newest claim from here on.
			var w waiter
			if e.id != 0 {
				w = sm.waiters.take(e.id)
			}
			items = append(items, applyItem{zxid: int64(ent.Index), w: w,
				move: &sessionMove{id: e.sessions[0], owner: e.owner, claim: e.claim}})
		case entryFormation:
			if sm.onFormation != nil {
				// What came before first: onFormation may set
				// /zookeeper/config's version (formation.go).
				sm.applyItems(items)
				clear(items)
				items = items[:0]
				sm.onFormation(e.formation, ent.Index)
			}
		case entrySync:
			items = append(items, applyItem{zxid: int64(ent.Index), w: stampApply(sm.waiters.take(e.id), got)})
		case entryTxn:
			items = append(items, applyItem{zxid: int64(ent.Index), txn: e.txn, w: stampApply(sm.waiters.take(e.id), got)})
		}
	}
	sm.applyItems(items)
	clear(items)
	sm.items = items[:0]
}

func (sm *stateMachine) fail(err error) {
	if sm.failed.Swap(true) {
		return
	}
	sm.log.Error("cannot apply the raft log; this member stops applying and shuts down", "err", err)
	if sm.onFail != nil {
		go sm.onFail(err)
	}
}

// applyItems applies a batch under one acquisition of the tree lock. It is
// the only place the tree is modified (besides Restore).
func (sm *stateMachine) applyItems(items []applyItem) {
	if len(items) == 0 {
		return
	}
	var now int64
	if sm.met != nil {
		now = time.Now().UnixMilli()
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	b := &sm.batch
	for i := range items {
		it := &items[i]
		if m := it.move; m != nil {
			// A client resumed session m.id on member m.owner: from now
			// on the session refuses what its older connections
			// proposed (tree.Txn.Claim), and those still open on other
			// members are told (sessionMoved). The waiter, the resumed
			// connection, learns its claim: the move's index.
			sm.tree.ClaimSession(m.id, it.zxid)
			sm.sessions.moved(m.id, m.owner, m.claim)
			if it.w != nil {
				it.w.applied(it.zxid, &tree.Result{}, b)
			}
			continue
		}
		if it.txn == nil {
			// A sync barrier: nothing to apply. Its reply carries the
			// last transaction's zxid, not the barrier's log index: a
			// client must never have seen a zxid the tree lacks (it
			// could not resume its session then).
			if it.w != nil {
				it.w.applied(sm.tree.LastZxid(), &tree.Result{}, b)
			}
			continue
		}
		res := sm.tree.Apply(it.zxid, it.txn)
		sm.met.applied(now, it.txn.Time)
		// Watches fire before the reply is queued and before the lock is
		// released, so no reply that observes the change can precede the
		// notification.
		sm.watches.Trigger(res.Events)
		if sm.audit != nil && it.txn.Op == proto.OpCloseSession {
			sm.auditEphemerals(it.txn, &res)
		}
		// The requester's reply is queued before the session's connections
		// are told to close, so a closeSession reply is never lost.
		if it.w != nil {
			it.w.applied(it.zxid, &res, b)
		}
		sm.sessions.applied(it.txn, &res)
	}
	for i, w := range b.wake {
		w.endBatch()
		b.wake[i] = nil
	}
	b.wake = b.wake[:0]
}

// Snapshot implements raftnode.StateMachine: the tree as of now (the apply
// goroutine calls it between applies), streamed into the snapshot file
// while applying goes on; tree.Snapshot.Write reads the tree under the read
// lock one node at a time and Apply keeps the pre-images of what it changes
// meanwhile.
func (sm *stateMachine) Snapshot() (func(io.Writer) error, error) {
	var f uint64
	if sm.formation != nil {
		f = sm.formation()
	}
	sm.mu.Lock()
	sn, err := sm.tree.BeginSnapshot()
	sm.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return func(w io.Writer) error {
		if w != nil && f >= 2 {
			var hdr [snapshotFormationLen]byte
			copy(hdr[:], snapshotFormationMagic)
			binary.BigEndian.PutUint64(hdr[len(snapshotFormationMagic):], f)
			if _, err := w.Write(hdr[:]); err != nil {
				sn.Write(nil, nil) // release the capture
				return err
			}
		}
		return sn.Write(w, sm.mu.RLocker())
	}, nil
}

// readStateSnapshot reads a state machine snapshot (Snapshot's format:
// the optional formation prefix, then the tree's snapshot) to its end. No
// data at all is the initial, empty tree.
func readStateSnapshot(br *bufio.Reader, maxBuf int) (*tree.Tree, error) {
	t, _, err := readStateSnapshotFormation(br, maxBuf)
	return t, err
}

// readStateSnapshotFormation is readStateSnapshot that also returns the
// formation the snapshot carries (0: none).
func readStateSnapshotFormation(br *bufio.Reader, maxBuf int) (*tree.Tree, uint64, error) {
	var formation uint64
	if p, err := br.Peek(snapshotFormationLen); err == nil && string(p[:len(snapshotFormationMagic)]) == snapshotFormationMagic {
		formation = binary.BigEndian.Uint64(p[len(snapshotFormationMagic):])
		if formation < 2 {
			return nil, 0, fmt.Errorf("%w: formation %d in its prefix", tree.ErrBadSnapshot, formation)
		}
		if _, err := br.Discard(snapshotFormationLen); err != nil {
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
// with the formation: snapshotFormationMagic, then the formation as a
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
	snapshotFormationMagic = "ZKGOFORM"
	snapshotFormationLen   = len(snapshotFormationMagic) + 8
)

// Restore implements raftnode.StateMachine: no data (nil r, or an empty
// stream) is the initial, empty tree.
// CheckSnapshot implements raftnode.SnapshotChecker: a snapshot a peer
// streamed is loaded whole — every record decoded and the tree checked
// (tree.ReadSnapshot) — before raft takes it, and kept for the Restore at
// index that follows.
func (sm *stateMachine) CheckSnapshot(r io.Reader, index uint64) error {
	t, formation, err := readStateSnapshotFormation(bufio.NewReaderSize(r, 1<<16), sm.maxBuf)
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
func (sm *stateMachine) dropChecked(applied uint64) {
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

func (sm *stateMachine) Restore(r io.Reader, index uint64) error {
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
		t, formation, err = readStateSnapshotFormation(bufio.NewReaderSize(r, 1<<16), sm.maxBuf)
		if err != nil {
			return fmt.Errorf("restore snapshot at index %d: %w", index, err)
		}
	}
	sm.setup(t)
	sm.mu.Lock()
	sm.tree = t
	sm.mu.Unlock()
	if sm.onRestore != nil {
		sm.onRestore(formation)
	}
	return nil
}
