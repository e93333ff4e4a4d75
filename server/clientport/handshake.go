// The connect handshake: a new session is a createSession transaction
// through the log; a resumed one is checked against the replicated
// session table; a read-only member makes local sessions.

package clientport

import (
	"crypto/subtle"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/session"
	"github.com/zkgo/zkgo/server/statemachine"
	"github.com/zkgo/zkgo/tree"
)

// handshake processes the ConnectRequest. It returns false when the
// connection must close.
func (c *Conn) handshake(body []byte) bool {
	var req proto.ConnectRequest
	d := jute.NewDecoder(body)
	req.Decode(d)
	if d.Err() != nil {
		c.s.log.Warn("closing connection: malformed ConnectRequest", "remote", c.raw.RemoteAddr().String(), "err", d.Err())
		return false
	}
	c.sendRO = req.HasReadOnly
	s := c.s
	if !s.hasQuorum() && !s.readOnly.Load() && !c.awaitLeader() {
		s.log.Info("refusing session request: not part of a working quorum", "remote", c.raw.RemoteAddr().String())
		return false
	}
	if s.readOnly.Load() && !req.ReadOnly {
		s.log.Info("refusing session request for a client that does not allow read-only mode", "remote", c.raw.RemoteAddr().String())
		return false
	}
	last := s.sm.LastZxid()
	if req.LastZxidSeen > last {
		s.log.Warn("refusing session request: client has seen a newer zxid",
			"remote", c.raw.RemoteAddr().String(), "clientZxid", proto.SessionIDHex(req.LastZxidSeen), "serverZxid", proto.SessionIDHex(last))
		return false
	}
	to := time.Duration(req.TimeOut) * time.Millisecond
	if to < s.opts.MinSessionTimeout {
		to = s.opts.MinSessionTimeout
	}
	if to > s.opts.MaxSessionTimeout {
		to = s.opts.MaxSessionTimeout
	}
	if req.SessionID == 0 && s.readOnly.Load() && s.clustered() {
		// Cut off from the quorum, a read-only member cannot log a new
		// session: it makes a local one, as ZooKeeper's read-only server
		// does. The client asks for a new session once it reaches a
		// read-write member.
		id := s.sessions.NewID()
		pw := session.NewPasswd()
		c.sessionID, c.timeout, c.localSession = id, to, true
		c.live = s.sessions.Track(id, to, c)
		c.handshaken.Store(true)
		c.connectReply(to, id, pw, 0)
		return true
	}
	if req.SessionID == 0 {
		id := s.sessions.NewID()
		pw := session.NewPasswd()
		txn := &tree.Txn{
			Op: proto.OpCreateSession, Session: id, Time: time.Now().UnixMilli(),
			Req: &tree.CreateSessionReq{Timeout: int32(to / time.Millisecond), Passwd: pw},
		}
		// Track before proposing so the session cannot expire unseen. The
		// createSession goes through the pipeline like a write, so requests
		// pipelined behind the handshake wait for it.
		c.sessionID, c.timeout = id, to
		c.live = s.sessions.Track(id, to, c)
		c.handshaken.Store(true)
		r := &request{c: c, op: proto.OpCreateSession, isWrite: true, body: txn.Req, noSlot: true, start: time.Now()}
		c.claimReady = make(chan struct{})
		c.pipeMu.Lock()
		c.inflight++
		c.queue = append(c.queue, r)
		c.pipeMu.Unlock()
		return s.prop.Propose(statemachine.TxnEntry(txn), r, false)
	}
	// Resuming a session.
	var valid bool
	var sess *tree.Session
	lookup := func() {
		s.sm.View(func(t *tree.Tree) {
			if sess = t.Session(req.SessionID); sess != nil {
				valid = subtle.ConstantTimeCompare(sess.Passwd, req.Passwd) == 1
				if valid {
					to = time.Duration(sess.Timeout) * time.Millisecond
				}
			}
		})
	}
	lookup()
	if sess == nil && s.clustered() && !s.readOnly.Load() {
		// A member that lags may not have applied the session's
		// creation yet: before it tells the client its session expired,
		// it catches up with what the ensemble had committed (a
		// ReadIndex round), as a ZooKeeper follower asks its leader to
		// revalidate a session it does not know.
		if err := s.catchUp(); err == nil {
			lookup()
		}
	}
	if !valid {
		s.log.Info("invalid session or password; telling the client its session expired", "session", proto.SessionIDHex(req.SessionID))
		c.connectReply(0, 0, make([]byte, 16), 0)
		c.closeAfterFlush()
		return true
	}
	if s.clustered() && !s.readOnly.Load() && c.peerGone != nil && c.peerGone() {
		// A connect request whose client left before it was served (it
		// waited in a paused member's accept queue): resuming the
		// session here would move it away from the connection its
		// client uses now, and close that one.
		s.stats.AbandonedConnects.Add(1)
		s.log.Info("the client closed its connection before its session was resumed here; not moving the session",
			"session", proto.SessionIDHex(req.SessionID), "remote", c.raw.RemoteAddr().String())
		return false
	}
	c.sessionID, c.timeout = req.SessionID, to
	c.live = s.sessions.Track(req.SessionID, to, c)
	c.handshaken.Store(true)
	if s.clustered() && !s.readOnly.Load() {
		if n := s.sessions.Claim(req.SessionID, c); n != 0 {
			// Tell the other members, through the log, that the
			// session lives here now: a connection of it they still
			// hold is closed (SessionMoved), and what the session's
			// older connections proposed that the log orders after the
			// move is refused (tree.Txn.Claim) — ZooKeeper's leader
			// refuses requests from a server that no longer owns the
			// session. The connect reply waits for the move to be
			// applied here, like a createSession: the client then
			// reads a state holding everything ordered before the move
			// (a create its old connection proposed, say), and its
			// writes carry the move as their claim. A lost move closes
			// the connection; the client tries again.
			r := &request{c: c, op: proto.OpCreateSession, isWrite: true, noSlot: true, start: time.Now(),
				body: &tree.CreateSessionReq{Timeout: int32(to / time.Millisecond), Passwd: sess.Passwd}}
			c.claimReady = make(chan struct{})
			c.pipeMu.Lock()
			c.inflight++
			c.queue = append(c.queue, r)
			c.pipeMu.Unlock()
			s.stats.Revalidations.Add(1)
			return s.prop.Propose(statemachine.MoveEntry(req.SessionID, s.opts.ServerID, n), r, false)
		}
	}
	c.connectReply(to, req.SessionID, sess.Passwd, 0)
	return true
}

func (c *Conn) connectReply(to time.Duration, id int64, pw []byte, zxid int64) {
	rsp := proto.ConnectResponse{
		ProtocolVersion: 0,
		TimeOut:         int32(to / time.Millisecond),
		SessionID:       id,
		Passwd:          pw,
		ReadOnly:        c.s.readOnly.Load(),
		HasReadOnly:     c.sendRO,
	}
	c.outMu.Lock()
	if !c.outClosed {
		if c.out.Len() == 0 {
			c.outSince = time.Now()
		}
		proto.AppendFrame(&c.out, nil, &rsp)
	}
	c.outMu.Unlock()
	c.kick()
}
