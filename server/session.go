package server

import (
	"crypto/rand"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/tree"
)

// sessionTracker tracks the liveness of sessions. The sessions themselves
// (id, timeout, password) are replicated state in the tree; the tracker only
// knows when each was last heard from and which connections serve it. When
// a session's deadline passes it proposes a closeSession transaction; the
// tree deletes the ephemerals when that transaction is applied.
//
// Callers: the handshake (track, newID), connections (touch, detach,
// forget), the state machine (applied, remoteTouch, as sessionObserver),
// the replica (refreshAll, takeTouched) and its own goroutine (run).
type sessionTracker struct {
	log      *slog.Logger
	tick     time.Duration // how often deadlines are checked
	prop     *proposer     // proposes closeSession for expired sessions
	isLeader func() bool   // whether this member expires sessions
	// housekeeping, if set, runs every tick (the server aborts writes
	// stuck in an ensemble).
	housekeeping func()
	self         int64 // this member's server id, the owner in session moves
	nextID       atomic.Int64
	expirations  atomic.Int64 // closeSessions proposed by expire
	// proposeClose proposes closing session id (the proposer; tests
	// replace it).
	proposeClose func(id int64)

	mu   sync.Mutex // guards live and every liveSession's conns
	live map[int64]*liveSession
}

// sessionConn is a connection serving a session (a Conn).
type sessionConn interface {
	// close closes the connection now (the session moved elsewhere).
	close(reason string)
	// sessionClosed: the session ended; close after the queued replies.
	sessionClosed()
	// sessionMoved: the client resumed the session on another member;
	// requests still arriving here get SessionMoved, and the
	// connection closes.
	sessionMoved()
}

// claimState is what a member knows of a connection's claim on its
// session (see claim): the claim's number, and whether the log has
// ordered it (its move entry, or the session's creation, was applied).
type claimState struct {
	seq     uint64
	applied bool
}

// connClaim is one connection of a session and its claim.
type connClaim struct {
	c  sessionConn
	cl claimState
}

// connClaims are a session's connections: almost always one, so a slice
// (a map cost a few hundred bytes per session).
type connClaims []connClaim

func (cs connClaims) find(c sessionConn) int {
	for i := range cs {
		if cs[i].c == c {
			return i
		}
	}
	return -1
}

// set adds c or replaces its claim.
func (cs *connClaims) set(c sessionConn, cl claimState) {
	if i := cs.find(c); i >= 0 {
		(*cs)[i].cl = cl
		return
	}
	*cs = append(*cs, connClaim{c: c, cl: cl})
}

// remove drops c if present.
func (cs *connClaims) remove(c sessionConn) {
	if i := cs.find(c); i >= 0 {
		old := *cs
		copy(old[i:], old[i+1:])
		old[len(old)-1] = connClaim{} // no stale reference
		*cs = old[:len(old)-1]
	}
}

type liveSession struct {
	id        int64
	timeout   atomic.Int64 // nanoseconds
	deadline  atomic.Int64 // unix nanos
	closingAt atomic.Int64 // when a closeSession was last proposed (unix nanos); 0: never
	dirty     atomic.Bool  // touched by a local client since the last touch batch
	conns     connClaims   // guarded by sessionTracker.mu
	claims    uint64       // claims made here (claim); guarded by sessionTracker.mu
}

func newSessionTracker(log *slog.Logger, tickTime time.Duration, serverID int64, prop *proposer, isLeader func() bool) *sessionTracker {
	t := &sessionTracker{log: log, tick: max(tickTime/2, 10*time.Millisecond), prop: prop, isLeader: isLeader, self: serverID,
		live: make(map[int64]*liveSession)}
	t.proposeClose = func(id int64) {
		t.prop.propose(statemachine.TxnEntry(&tree.Txn{Op: proto.OpCloseSession, Session: id, Time: time.Now().UnixMilli()}), nil, false)
	}
	// As ZooKeeper: the server id in the top byte, a time-based counter
	// below, so ids stay unique across restarts and servers.
	base := (time.Now().UnixMilli() << 24) >> 8
	base &= 1<<56 - 1
	t.nextID.Store(base | serverID<<56)
	return t
}

func (t *sessionTracker) newID() int64 { return t.nextID.Add(1) }

func newPasswd() []byte {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return b
}

// track starts tracking a session served by c.
func (t *sessionTracker) track(id int64, timeout time.Duration, c sessionConn) *liveSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	ls := t.live[id]
	if ls == nil {
		ls = &liveSession{id: id}
		t.live[id] = ls
	}
	ls.timeout.Store(int64(timeout))
	if c != nil {
		// A session lives on one connection: a client that reconnects
		// moves it, and the old connection is closed (as ZooKeeper does).
		for _, old := range ls.conns {
			if old.c != c {
				go old.c.close("session moved to a new connection")
			}
		}
		clear(ls.conns)
		ls.conns = append(ls.conns[:0], connClaim{c: c})
	}
	ls.deadline.Store(time.Now().Add(timeout).UnixNano())
	return ls
}

// touch extends a session's deadline; called for every packet.
func (ls *liveSession) touch() {
	ls.deadline.Store(time.Now().Add(time.Duration(ls.timeout.Load())).UnixNano())
	ls.dirty.Store(true)
}

// remoteTouch refreshes sessions another member reported active.
func (t *sessionTracker) RemoteTouch(ids []int64) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if ls := t.live[id]; ls != nil {
			ls.deadline.Store(now.Add(time.Duration(ls.timeout.Load())).UnixNano())
		}
	}
}

// refreshAll gives every session a fresh timeout; a new leader does this
// before it expires anything, since it has not seen the touches the old
// leader received.
func (t *sessionTracker) refreshAll() {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ls := range t.live {
		ls.deadline.Store(now.Add(time.Duration(ls.timeout.Load())).UnixNano())
		ls.closingAt.Store(0) // this leader decides afresh
	}
}

// deadlines returns the deadline (unix ns) of every session tracked
// here, for dump.
func (t *sessionTracker) deadlines() map[int64]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int64]int64, len(t.live))
	for id, ls := range t.live {
		out[id] = ls.deadline.Load()
	}
	return out
}

// takeTouched returns the sessions touched by local clients since the last
// call.
func (t *sessionTracker) takeTouched() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []int64
	for id, ls := range t.live {
		if ls.dirty.Swap(false) {
			ids = append(ids, id)
		}
	}
	return ids
}

// detach removes a closed connection from its session. The session's
// deadline stays as the client's last request set it: as in ZooKeeper, a
// session expires one timeout after its client was last heard from,
// whether or not its connection closed since (before, a close restarted
// the timeout, and a client that fell silent and then lost its socket
// kept its ephemerals — a lock, a leader's node — up to one timeout
// longer than on ZooKeeper).
func (t *sessionTracker) detach(id int64, c sessionConn) {
	t.mu.Lock()
	if ls := t.live[id]; ls != nil {
		ls.conns.remove(c)
	}
	t.mu.Unlock()
}

func (t *sessionTracker) run(done <-chan struct{}) {
	tk := time.NewTicker(t.tick)
	defer tk.Stop()
	for {
		select {
		case <-done:
			return
		case <-tk.C:
		}
		now := time.Now().UnixNano()
		if t.housekeeping != nil {
			t.housekeeping()
		}
		if !t.isLeader() {
			continue // only the leader expires sessions
		}
		t.expireDue(now)
	}
}

// expireDue proposes closing every session whose deadline passed before
// now (unix nanos), and again every closeRetry for one still live after
// that: a closeSession proposal can be lost (the leader changes before it
// commits, raft drops it), and a session nobody closes would keep its
// ephemerals — a lock holder's node — for good.
func (t *sessionTracker) expireDue(now int64) {
	type due struct {
		ls   *liveSession
		seen int64 // closingAt when looked at
	}
	var expired []due
	t.mu.Lock()
	for _, ls := range t.live {
		if ls.deadline.Load() >= now {
			continue
		}
		if at := ls.closingAt.Load(); at == 0 || now-at >= int64(t.closeRetry(ls)) {
			expired = append(expired, due{ls, at})
		}
	}
	t.mu.Unlock()
	for _, d := range expired {
		t.expireOne(d.ls, d.seen, now)
	}
}

// expireOne proposes closing ls, unless another caller did since
// closingAt was seen.
func (t *sessionTracker) expireOne(ls *liveSession, seen, now int64) {
	if !ls.closingAt.CompareAndSwap(seen, now) {
		return
	}
	if seen == 0 {
		t.log.Info("expiring session", "session", hexID(ls.id))
	} else {
		t.log.Warn("expiring session again: its closeSession was not applied", "session", hexID(ls.id),
			"proposed", time.Duration(now-seen).Round(time.Millisecond).String()+" ago")
	}
	t.expirations.Add(1)
	t.proposeClose(ls.id)
}

// closeRetry is how long a proposed closeSession may take to be applied
// before it is proposed again: the session's timeout, at least two
// seconds (an election's worth).
func (t *sessionTracker) closeRetry(ls *liveSession) time.Duration {
	return max(time.Duration(ls.timeout.Load()), 2*time.Second)
}

// expire proposes closing the session now (unless one was proposed
// already and is not overdue).
func (t *sessionTracker) expire(id int64) {
	t.mu.Lock()
	ls := t.live[id]
	t.mu.Unlock()
	if ls == nil {
		t.expirations.Add(1)
		t.proposeClose(id)
		return
	}
	now := time.Now().UnixNano()
	if at := ls.closingAt.Load(); at == 0 || now-at >= int64(t.closeRetry(ls)) {
		t.expireOne(ls, at, now)
	}
}

// claim numbers a resumed session's new connection c here; the caller
// proposes a move entry with the number, so that the members order the
// claims on the session in the log (moved).
func (t *sessionTracker) claim(id int64, c sessionConn) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ls := t.live[id]
	if ls == nil {
		return 0
	}
	if ls.conns.find(c) < 0 {
		return 0
	}
	ls.claims++
	ls.conns.set(c, claimState{seq: ls.claims})
	return ls.claims
}

// moved applies a session move: a client resumed session id on member
// owner. The later claim in the log wins: a connection here whose own
// claim (its move, or the session's creation) the log ordered before this
// one belongs to a client that has moved on, and is told so; one whose
// claim is still to come keeps the session.
func (t *sessionTracker) Moved(id, owner int64, claim uint64) {
	var gone []sessionConn
	t.mu.Lock()
	if ls := t.live[id]; ls != nil {
		kept := ls.conns[:0]
		for _, e := range ls.conns {
			switch {
			case owner == t.self && e.cl.seq == claim:
				e.cl.applied = true
			case owner != t.self && e.cl.applied:
				gone = append(gone, e.c)
				continue
			}
			kept = append(kept, e)
		}
		clear(ls.conns[len(kept):])
		ls.conns = kept
	}
	t.mu.Unlock()
	for _, c := range gone {
		t.log.Info("session moved to another member; closing its connection here", "session", hexID(id), "member", owner)
		c.sessionMoved()
	}
}

// applied is called by the apply loop after each transaction.
func (t *sessionTracker) Applied(txn *tree.Txn, res *tree.Result) {
	if txn.Op == proto.OpCreateSession {
		// A connection that created the session here holds the first
		// claim on it.
		t.mu.Lock()
		if ls := t.live[txn.Session]; ls != nil {
			for i := range ls.conns {
				ls.conns[i].cl.applied = true
			}
		}
		t.mu.Unlock()
		// Every member tracks every session (also those replayed from
		// the log at start), so whichever leads can expire it.
		if cs, ok := txn.Req.(*tree.CreateSessionReq); ok {
			t.mu.Lock()
			_, known := t.live[txn.Session]
			t.mu.Unlock()
			if !known {
				t.track(txn.Session, time.Duration(cs.Timeout)*time.Millisecond, nil)
			}
		}
		return
	}
	if txn.Op != proto.OpCloseSession || res.Err != proto.ErrOk {
		return // (a closeSession of an older claim is refused: SessionMoved)
	}
	t.mu.Lock()
	ls := t.live[txn.Session]
	delete(t.live, txn.Session)
	t.mu.Unlock()
	if ls == nil {
		return
	}
	for _, e := range ls.conns {
		e.c.sessionClosed()
	}
}

// restore tracks every session of the tree (after a restart), each with a
// fresh timeout: clients get one session timeout to come back.
func (t *sessionTracker) restore(sm *statemachine.Machine) {
	var sessions []*tree.Session
	sm.View(func(tr *tree.Tree) { sessions = tr.Sessions() })
	for _, ss := range sessions {
		t.track(ss.ID, time.Duration(ss.Timeout)*time.Millisecond, nil)
	}
	if len(sessions) > 0 {
		t.log.Info("restored sessions", "count", len(sessions))
	}
}

// forget drops a local (read-only) session whose connection ended.
func (t *sessionTracker) forget(id int64) {
	t.mu.Lock()
	delete(t.live, id)
	t.mu.Unlock()
}
