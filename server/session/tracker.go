package session

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

// Tracker tracks the liveness of sessions. The sessions themselves
// (id, timeout, password) are replicated state in the tree; the tracker only
// knows when each was last heard from and which connections serve it. When
// a session's deadline passes it proposes a closeSession transaction; the
// tree deletes the ephemerals when that transaction is applied.
//
// Callers: the handshake (track, newID), connections (touch, detach,
// forget), the state machine (applied, remoteTouch, as sessionObserver),
// the replica (refreshAll, takeTouched) and its own goroutine (run).
type Tracker struct {
	log      *slog.Logger
	tick     time.Duration // how often deadlines are checked
	isLeader func() bool   // whether this member expires sessions
	// housekeeping, if set, runs every tick (the server aborts writes
	// stuck in an ensemble).
	Housekeeping func()
	self         int64 // this member's server id, the owner in session moves
	nextID       atomic.Int64
	Expirations  atomic.Int64 // closeSessions proposed by expire
	// proposeClose proposes closing session id (the server's proposer;
	// tests replace it).
	proposeClose func(id int64)

	mu   sync.Mutex // guards live, forced and every Live's conns
	live map[int64]*Live
	// forced: the sessions Expire was called for, closed whatever their
	// deadline and whoever leads (expireForced); an entry goes once its
	// session is no longer live.
	forced map[int64]*Live
}

// Conn is a connection serving a session (a Conn).
type Conn interface {
	// close closes the connection now (the session moved elsewhere).
	Close(reason string)
	// sessionClosed: the session ended; close after the queued replies.
	SessionClosed()
	// sessionMoved: the client resumed the session on another member;
	// requests still arriving here get SessionMoved, and the
	// connection closes.
	SessionMoved()
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
	c  Conn
	cl claimState
}

// connClaims are a session's connections: almost always one, so a slice
// (a map cost a few hundred bytes per session).
type connClaims []connClaim

func (cs connClaims) find(c Conn) int {
	for i := range cs {
		if cs[i].c == c {
			return i
		}
	}
	return -1
}

// set adds c or replaces its claim.
func (cs *connClaims) set(c Conn, cl claimState) {
	if i := cs.find(c); i >= 0 {
		(*cs)[i].cl = cl
		return
	}
	*cs = append(*cs, connClaim{c: c, cl: cl})
}

// remove drops c if present.
func (cs *connClaims) remove(c Conn) {
	if i := cs.find(c); i >= 0 {
		old := *cs
		copy(old[i:], old[i+1:])
		old[len(old)-1] = connClaim{} // no stale reference
		*cs = old[:len(old)-1]
	}
}

type Live struct {
	id        int64
	timeout   atomic.Int64 // nanoseconds
	deadline  atomic.Int64 // unix nanos
	closingAt atomic.Int64 // when a closeSession was last proposed (unix nanos); 0: never
	dirty     atomic.Bool  // touched by a local client since the last touch batch
	conns     connClaims   // guarded by Tracker.mu
	claims    uint64       // claims made here (claim); guarded by Tracker.mu
}

// New returns a tracker for the member with server id serverID that
// checks deadlines every half tick. proposeClose proposes closing a
// session (a closeSession through the log); isLeader says whether this
// member expires sessions now.
func New(log *slog.Logger, tickTime time.Duration, serverID int64, proposeClose func(id int64), isLeader func() bool) *Tracker {
	t := &Tracker{log: log, tick: max(tickTime/2, 10*time.Millisecond), proposeClose: proposeClose, isLeader: isLeader, self: serverID,
		live: make(map[int64]*Live)}
	// As ZooKeeper: the server id in the top byte, a time-based counter
	// below, so ids stay unique across restarts and servers.
	base := (time.Now().UnixMilli() << 24) >> 8
	base &= 1<<56 - 1
	t.nextID.Store(base | serverID<<56)
	return t
}

func (t *Tracker) NewID() int64 { return t.nextID.Add(1) }

func NewPasswd() []byte {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return b
}

// track starts tracking a session served by c.
func (t *Tracker) Track(id int64, timeout time.Duration, c Conn) *Live {
	t.mu.Lock()
	defer t.mu.Unlock()
	ls := t.live[id]
	if ls == nil {
		ls = &Live{id: id}
		t.live[id] = ls
	}
	ls.timeout.Store(int64(timeout))
	if c != nil {
		// A session lives on one connection: a client that reconnects
		// moves it, and the old connection is closed (as ZooKeeper does).
		for _, old := range ls.conns {
			if old.c != c {
				go old.c.Close("session moved to a new connection")
			}
		}
		clear(ls.conns)
		ls.conns = append(ls.conns[:0], connClaim{c: c})
	}
	ls.deadline.Store(time.Now().Add(timeout).UnixNano())
	return ls
}

// touch extends a session's deadline; called for every packet.
func (ls *Live) Touch() {
	ls.deadline.Store(time.Now().Add(time.Duration(ls.timeout.Load())).UnixNano())
	ls.dirty.Store(true)
}

// remoteTouch refreshes sessions another member reported active.
func (t *Tracker) RemoteTouch(ids []int64) {
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
func (t *Tracker) RefreshAll() {
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
func (t *Tracker) Deadlines() map[int64]int64 {
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
func (t *Tracker) TakeTouched() []int64 {
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
func (t *Tracker) Detach(id int64, c Conn) {
	t.mu.Lock()
	if ls := t.live[id]; ls != nil {
		ls.conns.remove(c)
	}
	t.mu.Unlock()
}

func (t *Tracker) Run(done <-chan struct{}) {
	tk := time.NewTicker(t.tick)
	defer tk.Stop()
	for {
		select {
		case <-done:
			return
		case <-tk.C:
		}
		now := time.Now().UnixNano()
		if t.Housekeeping != nil {
			t.Housekeeping()
		}
		t.expireForced(now)
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
func (t *Tracker) expireDue(now int64) {
	type due struct {
		ls   *Live
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

// expireForced proposes again closing each session Expire was called
// for, every forcedRetry until it is closed, on whichever member it was
// called (a follower too: its proposal is forwarded). Expire's one
// proposal could be lost — a leader change, or a member that did not
// lead yet — and the client keeps such a session's deadline fresh, so
// expireDue would never close it.
func (t *Tracker) expireForced(now int64) {
	var forced []*Live
	t.mu.Lock()
	for id, ls := range t.forced {
		if t.live[id] != ls {
			delete(t.forced, id) // closed
			continue
		}
		forced = append(forced, ls)
	}
	t.mu.Unlock()
	for _, ls := range forced {
		if at := ls.closingAt.Load(); at == 0 || now-at >= int64(forcedRetry) {
			t.expireOne(ls, at, now)
		}
	}
}

// forcedRetry is how often expireForced proposes closing a session again.
var forcedRetry = time.Second

// expireOne proposes closing ls, unless another caller did since
// closingAt was seen.
func (t *Tracker) expireOne(ls *Live, seen, now int64) {
	if !ls.closingAt.CompareAndSwap(seen, now) {
		return
	}
	if seen == 0 {
		t.log.Info("expiring session", "session", proto.SessionIDHex(ls.id))
	} else {
		t.log.Warn("expiring session again: its closeSession was not applied", "session", proto.SessionIDHex(ls.id),
			"proposed", time.Duration(now-seen).Round(time.Millisecond).String()+" ago")
	}
	t.Expirations.Add(1)
	t.proposeClose(ls.id)
}

// closeRetry is how long a proposed closeSession may take to be applied
// before it is proposed again: the session's timeout, at least two
// seconds (an election's worth).
func (t *Tracker) closeRetry(ls *Live) time.Duration {
	return max(time.Duration(ls.timeout.Load()), 2*time.Second)
}

// Expire proposes closing the session now (unless one was proposed
// already and is not overdue), and again every forcedRetry until it is
// closed (expireForced). It is server.ExpireSession, for tests.
func (t *Tracker) Expire(id int64) {
	t.mu.Lock()
	ls := t.live[id]
	if ls != nil {
		if t.forced == nil {
			t.forced = make(map[int64]*Live)
		}
		t.forced[id] = ls
	}
	t.mu.Unlock()
	if ls == nil {
		t.Expirations.Add(1)
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
func (t *Tracker) Claim(id int64, c Conn) uint64 {
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
func (t *Tracker) Moved(id, owner int64, claim uint64) {
	var gone []Conn
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
		t.log.Info("session moved to another member; closing its connection here", "session", proto.SessionIDHex(id), "member", owner)
		c.SessionMoved()
	}
}

// applied is called by the apply loop after each transaction.
func (t *Tracker) Applied(txn *tree.Txn, res *tree.Result) {
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
				t.Track(txn.Session, time.Duration(cs.Timeout)*time.Millisecond, nil)
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
		e.c.SessionClosed()
	}
}

// restore tracks every session of the tree (after a restart), each with a
// fresh timeout: clients get one session timeout to come back.
func (t *Tracker) Restore(sm *statemachine.Machine) {
	var sessions []*tree.Session
	sm.View(func(tr *tree.Tree) { sessions = tr.Sessions() })
	for _, ss := range sessions {
		t.Track(ss.ID, time.Duration(ss.Timeout)*time.Millisecond, nil)
	}
	if len(sessions) > 0 {
		t.log.Info("restored sessions", "count", len(sessions))
	}
}

// forget drops a local (read-only) session whose connection ended.
func (t *Tracker) Forget(id int64) {
	t.mu.Lock()
	delete(t.live, id)
	t.mu.Unlock()
}
