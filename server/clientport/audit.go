// The audit log (Options.Audit): ZooKeeper's audit events, written by
// server/audit. As in ZooKeeper (FinalRequestProcessor, AuditHelper),
// the member a client is connected to records that client's changes once
// they are applied, with their result; other members record nothing of
// them. The ephemeral nodes a closed or expired session leaves are
// deleted, and recorded, by every member that applies the close, as
// ZooKeeper's DataTree.deleteNodes does. Every hook runs only when the
// audit log is on (s.audit != nil), and queues an event without waiting.

package clientport

import (
	"os"
	"os/user"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server/audit"
	"github.com/zkgo/zkgo/tree"
)

// OpenAudit starts the audit log (Config.Audit) and hands it to the state
// machine; the server then records its start (AuditServer).
func (s *Port) OpenAudit() error {
	if !s.opts.Audit {
		return nil
	}
	w, err := audit.Open(audit.Config{File: s.opts.AuditFile, Log: s.log, Queue: s.opts.AuditQueue})
	if err != nil {
		return err
	}
	s.auditUser = s.opts.AuditUser
	if s.auditUser == "" {
		s.auditUser = systemUser(s)
	}
	where := s.opts.AuditFile
	if where == "" {
		where = "the server log"
	}
	s.log.Info("ZooKeeper audit is enabled", "file", where)
	s.audit = w
	s.sm.SetAudit(w, s.auditUser)
	return nil
}

// systemUser is ZooKeeper's ZKAuditProvider.getZKUser: the principal the
// server logged in with (Kerberos), else the user running it.
func systemUser(s *Port) string {
	if k := s.opts.SASL.Kerberos; k != nil && k.Principal != "" && k.Principal != "*" {
		return k.Principal
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "<NA>" // Java's default of user.name
}

// AuditServer records a server event (serverStart, serverStop).
func (s *Port) AuditServer(op string, res audit.Result) {
	if s.audit != nil {
		s.audit.Log(audit.Event{User: s.auditUser, Operation: op, Result: res})
	}
}

// CloseAudit records the server's stop and writes what is queued.
func (s *Port) CloseAudit() {
	if s.audit == nil {
		return
	}
	s.AuditServer(audit.OpStop, audit.Invoked)
	s.audit.Close()
}

// auditEvent is an event of this connection's client.
func (c *Conn) auditEvent(auth []proto.Id, op string, res audit.Result) audit.Event {
	e := audit.Event{Session: audit.SessionHex(c.sessionID), User: audit.Users(auth), IP: c.remoteIP,
		Operation: op, Result: res, Time: time.Now()}
	if e.IP == "" {
		e.Empty |= audit.FieldIP
	}
	return e
}

func result(failed bool) audit.Result {
	if failed {
		return audit.Failure
	}
	return audit.Success
}

// auditWrite records a write of this connection's client that was
// applied (AuditHelper.addAuditLog). The apply goroutine, with the tree
// locked: res is valid only now.
func (c *Conn) auditWrite(r *request, res *tree.Result) {
	w := c.s.audit
	failed := res.Err != proto.ErrOk
	switch req := r.body.(type) {
	case *proto.CreateRequest: // create, create2, createContainer
		c.auditCreate(w, r.auth, req.Flags, req.Path, res, failed)
	case *proto.CreateTTLRequest:
		// ZooKeeper 3.9+ (ZOOKEEPER-4725); 3.8 records no TTL create.
		c.auditCreate(w, r.auth, req.Flags, req.Path, res, failed)
	case *proto.DeleteRequest:
		e := c.auditEvent(r.auth, audit.OpDelete, result(failed))
		e.Znode, e.Empty = req.Path, e.Empty|audit.FieldZnode
		w.Log(e)
	case *proto.SetDataRequest:
		e := c.auditEvent(r.auth, audit.OpSetData, result(failed))
		e.Znode, e.Empty = req.Path, e.Empty|audit.FieldZnode
		w.Log(e)
	case *proto.SetACLRequest:
		e := c.auditEvent(r.auth, audit.OpSetACL, result(failed))
		e.Znode, e.ACL, e.Empty = req.Path, audit.ACLString(req.ACL), e.Empty|audit.FieldZnode|audit.FieldACL
		w.Log(e)
	case *proto.MultiRequest:
		if r.op == proto.OpMulti {
			c.auditMulti(w, r, req, res)
		}
	}
}

func (c *Conn) auditCreate(w *audit.Writer, auth []proto.Id, flags proto.CreateMode, path string, res *tree.Result, failed bool) {
	mode, ok := audit.CreateModeName(flags)
	if !ok {
		return // ZooKeeper fails to make the event (CreateMode.fromFlag)
	}
	e := c.auditEvent(auth, audit.OpCreate, result(failed))
	e.Znode, e.ZnodeType, e.Empty = path, mode, e.Empty|audit.FieldZnode
	if !failed {
		e.Znode = res.Path // the sequential node's name
	}
	w.Log(e)
}

// auditMulti records a multi as AuditHelper.logMultiOperation: each
// create, delete and setData of a multi that succeeded, or one
// multiOperation failure. A create's znode_type is the mode of the
// create (not createTTL) whose requested path is the created one, so a
// sequential node has none, as in ZooKeeper.
func (c *Conn) auditMulti(w *audit.Writer, r *request, m *proto.MultiRequest, res *tree.Result) {
	for _, sub := range res.Multi {
		if sub.Op == proto.OpError {
			w.Log(c.auditEvent(r.auth, audit.OpMulti, audit.Failure))
			return
		}
	}
	if len(res.Multi) != len(m.Ops) {
		return
	}
	for i, sub := range res.Multi {
		var e audit.Event
		switch req := m.Ops[i].Req.(type) {
		case *proto.CreateRequest, *proto.CreateTTLRequest:
			e = c.auditEvent(r.auth, audit.OpCreate, audit.Success)
			e.Znode = sub.Path
			e.ZnodeType = multiCreateMode(m, sub.Path)
		case *proto.DeleteRequest:
			e = c.auditEvent(r.auth, audit.OpDelete, audit.Success)
			e.Znode = req.Path
		case *proto.SetDataRequest:
			e = c.auditEvent(r.auth, audit.OpSetData, audit.Success)
			e.Znode = req.Path
		default:
			continue
		}
		e.Empty |= audit.FieldZnode
		w.Log(e)
	}
}

// multiCreateMode is AuditHelper.getCreateModes(request).get(path).
func multiCreateMode(m *proto.MultiRequest, path string) string {
	mode := ""
	for _, op := range m.Ops {
		if req, ok := op.Req.(*proto.CreateRequest); ok && req.Path == path {
			if name, ok := audit.CreateModeName(req.Flags); ok {
				mode = name // the last one wins, as in the HashMap
			}
		}
	}
	return mode
}

// auditReconfig records a reconfig's outcome: success names
// /zookeeper/config, a failure no node (ZooKeeper's failed transaction
// has no path).
func (c *Conn) auditReconfig(auth []proto.Id, code proto.ErrCode) {
	if c.s.audit == nil {
		return
	}
	e := c.auditEvent(auth, audit.OpReconfig, result(code != proto.ErrOk))
	if code == proto.ErrOk {
		e.Znode = tree.ConfigPath
	}
	c.s.audit.Log(e)
}

// auditAuth records an authentication (zkgo's own events): the session's
// identities after it.
func (c *Conn) auditAuth(op string, failed bool) {
	if c.s.audit == nil {
		return
	}
	c.s.audit.Log(c.auditEvent(*c.auth.Load(), op, result(failed)))
}

// AbortAudit records a failed start and closes the audit log without a
// serverStop, as ZooKeeper (its shutdown hook is registered once the
// server started).
func (s *Port) AbortAudit() {
	if s.audit == nil {
		return
	}
	s.AuditServer(audit.OpStart, audit.Failure)
	s.audit.Close()
	s.audit = nil
	s.sm.SetAudit(nil, "")
}

// Audit is the audit log; nil when it is off or not open yet.
func (s *Port) Audit() *audit.Writer { return s.audit }
