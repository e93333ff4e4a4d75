package torture

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/tools/torture/check"
	"github.com/zkgo/zkgo/zk"
)

// fifo: one session over the raw protocol (tests/framework/rawzk) pipelines
// batches of requests (exists, setData, create2 on a few znodes only it
// writes) and records each request's xid, its reply's place in the reply
// order and the reply header's zxid — what a client library hides.
// Checked with the sessions checker: replies come in the order the
// requests were sent (FIFO), zxids never go back, no read is older than
// what the session saw. On a broken connection it resumes the session on
// the next member (with its last seen zxid), or starts a new one if it
// expired.
type fifo struct{}

func (w *fifo) name() string { return "fifo" }
func (w *fifo) clients() int { return 1 }

const fifoRoot = root + "/fifo"

func (w *fifo) start(ctx context.Context, e *env, first int, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.loop(ctx, e, first)
	}()
}

// fifoSession is the raw session's state across its connections.
type fifoSession struct {
	c      *rawzk.Conn
	id     int64
	passwd []byte
	seen   int64 // the largest reply zxid so far
	xid    int32 // the last xid sent, increasing over every connection
	done   int64 // replies received
	next   int   // the address to try next
}

// connect resumes the session (or starts a new one) on one of addrs.
func (s *fifoSession) connect(ctx context.Context, addrs []string, timeout time.Duration) error {
	for ctx.Err() == nil {
		addr := addrs[s.next%len(addrs)]
		s.next++
		c, err := rawzk.Dial(addr, rawzk.Options{Timeout: timeout, SessionID: s.id, Passwd: s.passwd, LastZxid: s.seen})
		if errors.Is(err, rawzk.ErrSessionExpired) {
			s.id, s.passwd = 0, nil
			continue
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		s.c, s.id, s.passwd = c, c.Session.SessionID, c.Session.Passwd
		return nil
	}
	return ctx.Err()
}

func (w *fifo) loop(ctx context.Context, e *env, client int) {
	name := fmt.Sprintf("c%d-raw", client)
	rng := e.rng(client)
	addrs := strings.Split(e.clientVia[client], ",")
	s := &fifoSession{next: rng.IntN(len(addrs))}
	defer func() {
		if s.c != nil {
			s.c.Close()
		}
	}()
	type pending struct {
		op   check.SessionOp
		resp proto.Record
	}
	for batchNo := 0; ctx.Err() == nil; batchNo++ {
		if s.c == nil {
			if s.connect(ctx, addrs, e.timeout) != nil {
				return
			}
		}
		// A batch of requests, all sent before any reply is read.
		batch := make([]pending, 2+rng.IntN(7))
		broken := false
		for i := range batch {
			p := &batch[i]
			path := fmt.Sprintf("%s/k%d", fifoRoot, rng.IntN(3))
			s.xid++
			p.op = check.SessionOp{Client: name, Session: s.id, Path: path, Seen: s.seen, Xid: s.xid, Call: e.rec.Now()}
			var op proto.OpCode
			var req proto.Record
			switch r := rng.IntN(10); {
			case r < 5:
				p.op.Kind, op, req, p.resp = check.OpRead, proto.OpExists, &proto.ExistsRequest{Path: path}, &proto.ExistsResponse{}
			case r < 9:
				p.op.Kind, op, req, p.resp = check.OpSetData, proto.OpSetData, &proto.SetDataRequest{Path: path, Data: []byte(name), Version: -1}, &proto.SetDataResponse{}
			default:
				p.op.Kind, op, req, p.resp = check.OpCreate, proto.OpCreate2, &proto.CreateRequest{Path: path, ACL: zk.OpenACLUnsafe, Flags: proto.ModePersistent}, &proto.Create2Response{}
			}
			if !broken && s.c.SendXid(s.xid, op, req) != nil {
				broken = true
			}
		}
		for i := range batch {
			p := &batch[i]
			if !broken {
				s.c.NetConn().SetReadDeadline(time.Now().Add(2 * e.timeout / 3))
				h, err := s.c.Recv(p.resp)
				switch {
				case err != nil:
					broken = true
				case h.Xid != p.op.Xid:
					// Out of order: the body was decoded as another
					// request's; keep only what the header says.
					s.done++
					p.op.Done, p.op.Zxid = s.done, h.Zxid
					p.op.Xid = h.Xid
					p.op.Outcome = check.Unknown
				default:
					s.done++
					p.op.Done, p.op.Zxid = s.done, h.Zxid
					fifoOutcome(&p.op, h.Err, p.resp)
				}
				if err == nil && h.Zxid > s.seen {
					s.seen = h.Zxid
				}
			}
			p.op.Return = e.rec.Now()
			e.ops.done(p.op.Outcome != check.Unknown)
		}
		if e.broken["fifo"] && batchNo%50 == 49 && batch[0].op.Done != 0 && batch[1].op.Done != 0 {
			// Forged: the first two replies recorded as come in the
			// other order (Config.Break "fifo").
			batch[0].op.Done, batch[1].op.Done = batch[1].op.Done, batch[0].op.Done
		}
		for i := range batch {
			e.rec.AddSessionOp(batch[i].op)
		}
		// Some hundreds of requests a second: a history of bounded size.
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(5+rng.IntN(10)) * time.Millisecond):
		}
		if broken {
			s.c.Close()
			s.c = nil
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// fifoOutcome fills op's outcome from a reply's error code and body.
func fifoOutcome(op *check.SessionOp, code proto.ErrCode, resp proto.Record) {
	switch {
	case code == proto.ErrOk:
		op.Outcome = check.OK
		switch r := resp.(type) {
		case *proto.ExistsResponse:
			op.Exists, op.Mzxid = true, r.Stat.Mzxid
		case *proto.SetDataResponse:
			op.Mzxid = r.Stat.Mzxid
		case *proto.Create2Response:
			op.Mzxid = r.Stat.Mzxid
		}
	case code == proto.ErrNoNode && op.Kind == check.OpRead:
		op.Outcome = check.OK // answered: no node
	case code == proto.ErrNoNode, code == proto.ErrNodeExists, code == proto.ErrBadVersion:
		op.Outcome = check.Failed
	default:
		op.Outcome = check.Unknown
	}
}

func (w *fifo) check(ctx context.Context, e *env) []check.Result {
	// The sessions workload's checker covers these records too.
	return nil
}
