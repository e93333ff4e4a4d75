package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/storage"
	"github.com/zkgo/zkgo/tree"
)

// txnLog orders transactions and feeds them to the apply loop. memLog keeps
// nothing; raftLog persists every transaction (fsync) before it is applied
// and answered.
type txnLog interface {
	start() error
	// propose queues txn; done (may be nil) runs once it is applied. It
	// returns false if the log is stopped; done is then never called.
	propose(txn *tree.Txn, done applyFunc) bool
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
	net  *raftnode.MemNetwork

	idBase uint64 // random high bits, so ids never repeat across restarts

	mu      sync.Mutex // guards pending, nextID, stopped
	pending map[uint64]applyFunc
	nextID  uint64
	stopped bool
}

func newRaftLog(s *Server, dir string) *raftLog {
	var b [4]byte
	rand.Read(b[:])
	return &raftLog{s: s, dir: dir, pending: make(map[uint64]applyFunc),
		idBase: uint64(binary.BigEndian.Uint32(b[:])) << 32}
}

// start opens the storage, restores the newest snapshot and replays the
// log into the tree (through the StateMachine methods below), then starts
// raft. It returns once the member leads its group of one.
func (l *raftLog) start() error {
	st, err := storage.Open(filepath.Join(l.dir, "zkgo"), storage.Options{
		NoSync:   l.s.opts.NoSync,
		Logger:   l.s.log,
		Metadata: raftnode.Metadata(1, clusterID),
	})
	if err != nil {
		return fmt.Errorf("open data directory: %w", err)
	}
	l.st = st
	l.net = raftnode.NewMemNetwork()
	node, err := raftnode.Start(raftnode.Config{
		ID:           1,
		ClusterID:    clusterID,
		Peers:        []raftnode.Peer{{ID: 1}},
		Storage:      st,
		StateMachine: l,
		Transport:    l.net.Transport(1),
		SnapCount:    uint64(l.s.opts.SnapCount),
		Logger:       l.s.log,
	})
	if err != nil {
		st.Close()
		return err
	}
	l.node = node
	// Wait until this member leads (immediately for a group of one), so
	// proposals are not dropped.
	for node.Leader() != 1 {
		select {
		case <-node.LeaderChanges():
		case <-node.Done():
			return fmt.Errorf("raft stopped: %w", node.Err())
		}
	}
	l.s.sessions.restore()
	return nil
}

func (l *raftLog) propose(txn *tree.Txn, done applyFunc) bool {
	var e jute.Encoder
	e.WriteLong(0) // the proposal id, filled in below
	txn.Encode(&e)
	data := e.Bytes()
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return false
	}
	l.nextID++
	id := l.idBase | l.nextID&0xffffffff
	if done != nil {
		l.pending[id] = done
	}
	l.mu.Unlock()
	binary.BigEndian.PutUint64(data, id)
	if err := l.node.Propose(context.Background(), data); err != nil {
		l.mu.Lock()
		delete(l.pending, id)
		l.mu.Unlock()
		l.s.log.Warn("proposal failed", "err", err)
		return false
	}
	return true
}

func (l *raftLog) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
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
		txn, err := tree.DecodeTxn(ent.Data[8:])
		if err != nil {
			// Only this server writes entries; a bad one means a bug or
			// corruption that the WAL's CRC did not catch. Stop rather
			// than diverge.
			panic(fmt.Sprintf("server: undecodable log entry %d: %v", ent.Index, err))
		}
		l.mu.Lock()
		done := l.pending[id]
		delete(l.pending, id)
		l.mu.Unlock()
		batch = append(batch, proposal{txn: txn, done: done, zxid: int64(ent.Index)})
	}
	if len(batch) > 0 {
		l.s.applyBatch(batch)
	}
}

// Snapshot implements raftnode.StateMachine.
func (l *raftLog) Snapshot() ([]byte, error) {
	var buf bytes.Buffer
	l.s.treeMu.RLock()
	err := l.s.tree.WriteSnapshot(&buf)
	l.s.treeMu.RUnlock()
	return buf.Bytes(), err
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
