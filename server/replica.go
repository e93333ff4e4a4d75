package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/storage"
)

// clusterID names a standalone zkgo group in its WAL metadata.
const clusterID = 0x7a6b676f // "zkgo"

// replica is the cluster glue: this server's member of the raft group
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
type replica struct {
	opts     *Options
	log      *slog.Logger
	dir      string // the data directory; "" in memory
	sm       *stateMachine
	prop     *proposer
	sessions *sessionTracker
	// leaderChanged is told every change of leader (the Server).
	leaderChanged func(raftnode.LeaderChange)

	st   *storage.Storage
	node *raftnode.Node

	leader atomic.Int64  // the raft leader's id, 0 while unknown
	quit   chan struct{} // closed by stop; ends the helper goroutines
	wg     sync.WaitGroup
}

// clustered reports whether the member belongs to an ensemble.
func (r *replica) clustered() bool { return len(r.opts.Peers) > 1 }

// start opens the storage, restores the newest snapshot and replays the
// log into the state machine, then starts raft. Standalone, it returns
// once the member leads its group of one and has applied its whole log.
func (r *replica) start() error {
	opts := r.opts
	r.quit = make(chan struct{})
	id := uint64(1)
	peers := []raftnode.Peer{{ID: 1}}
	if r.clustered() {
		id = uint64(opts.ServerID)
		peers = peers[:0]
		for _, p := range opts.Peers {
			peers = append(peers, raftnode.Peer{ID: uint64(p.ID), Addr: p.Addr, Learner: p.Observer})
		}
	}
	sopts := storage.Options{
		NoSync:     opts.NoSync,
		SnapRetain: max(opts.SnapRetainCount, storage.DefaultSnapRetain),
		Logger:     r.log,
		Metadata:   raftnode.Metadata(id, clusterID),
	}
	if r.dir == "" {
		r.st = storage.OpenMemory(sopts)
	} else {
		if err := refuseJavaDataDir(r.dir); err != nil {
			return err
		}
		st, err := storage.Open(filepath.Join(r.dir, "zkgo"), sopts)
		if err != nil {
			return fmt.Errorf("open data directory: %w", err)
		}
		r.st = st
	}
	var ensemble uint64
	if r.clustered() && opts.PeerTransport == nil {
		var err error
		if ensemble, err = ensembleIdentity(filepath.Join(r.dir, "zkgo"), opts.Peers); err != nil {
			r.st.Close()
			return err
		}
	}
	tr, err := r.transport(id, ensemble)
	if err != nil {
		r.st.Close()
		return err
	}
	node, err := raftnode.Start(raftnode.Config{
		ID:           id,
		ClusterID:    clusterID,
		Peers:        peers,
		Storage:      r.st,
		StateMachine: r.sm,
		Transport:    tr,
		SnapCount:    uint64(opts.SnapCount),
		TickInterval: RaftTickInterval(opts.TickTime),
		Ticks:        opts.RaftTicks,
		Logger:       r.log,
	})
	if err != nil {
		r.st.Close()
		return err
	}
	r.node = node
	r.prop.start(node)
	r.sessions.restore(r.sm)
	if !r.clustered() {
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
		if err := node.WaitApplied(context.Background(), r.st.Recovered().LastIndex); err != nil {
			return fmt.Errorf("applying the recovered log: %w", err)
		}
		r.leader.Store(1)
		return nil
	}
	r.wg.Add(2)
	go r.followLeader()
	go r.sendTouches()
	return nil
}

// transport returns the member's peer transport: the configured one, TCP
// on its peer address in an ensemble, or a network of one.
func (r *replica) transport(id, ensemble uint64) (raftnode.Transport, error) {
	opts := r.opts
	if opts.PeerTransport != nil {
		return opts.PeerTransport, nil
	}
	if !r.clustered() {
		return raftnode.NewMemNetwork().Transport(1), nil
	}
	ln := opts.PeerListener
	if ln == nil {
		var err error
		for _, p := range opts.Peers {
			if p.ID == opts.ServerID {
				ln, err = net.Listen("tcp", p.Addr)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("listen for peers: %w", err)
		}
	}
	// The handshake's cluster id is the ensemble's identity (ensemble.go);
	// the WAL keeps the constant clusterID it was created with.
	return raftnode.NewTCPTransport(raftnode.TCPConfig{ID: id, ClusterID: ensemble, Listener: ln, Logger: r.log,
		ServerTLS: opts.PeerServerTLS, ClientTLS: opts.PeerClientTLS})
}

// isLeader reports whether this member decides session expiry: always
// when standalone, when it leads the raft group otherwise.
func (r *replica) isLeader() bool {
	return !r.clustered() || r.leader.Load() == r.opts.ServerID
}

// hasQuorum reports whether the member is part of a working quorum (it
// knows a leader); a member that is not refuses new sessions.
func (r *replica) hasQuorum() bool {
	return !r.clustered() || r.leader.Load() != 0
}

// followLeader records leadership changes and tells the server.
func (r *replica) followLeader() {
	defer r.wg.Done()
	for {
		select {
		case ch := <-r.node.LeaderChanges():
			if !ch.ProposalsLost {
				r.leader.Store(int64(ch.Leader))
			}
			r.leaderChanged(ch)
		case <-r.quit:
			return
		case <-r.node.Done():
			r.leader.Store(0)
			return
		}
	}
}

// sendTouches reports, every half tick, the sessions this member's clients
// kept alive, as a log entry every member applies (so whichever member
// leads knows them). The leader's own clients need no report.
func (r *replica) sendTouches() {
	defer r.wg.Done()
	t := time.NewTicker(max(r.opts.TickTime/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-r.quit:
			return
		}
		ids := r.sessions.takeTouched()
		if len(ids) == 0 || r.isLeader() {
			continue
		}
		for len(ids) > 0 {
			n := min(len(ids), maxTouchBatch)
			ctx, cancel := context.WithTimeout(context.Background(), r.opts.TickTime)
			r.prop.proposeNow(ctx, touchEntry(ids[:n]))
			cancel()
			ids = ids[n:]
		}
	}
}

// status returns raft's view and the storage's counters (nil before start).
func (r *replica) status() (st raftnode.Status, syncs, entries, prefilled uint64, ok bool) {
	if r.node == nil {
		return st, 0, 0, 0, false
	}
	syncs, entries = r.st.Counters()
	return r.node.Status(), syncs, entries, r.st.PrefilledBytes(), true
}

// stop stops raft and closes the storage.
func (r *replica) stop() {
	if r.quit != nil {
		close(r.quit)
	}
	r.wg.Wait()
	if r.node != nil {
		r.node.Stop()
	}
	if r.st != nil {
		r.st.Close()
	}
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
