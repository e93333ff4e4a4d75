package clientport

import (
	"context"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// mayReconfig reports whether the ids may reconfigure: the super user, or
// write permission on /zookeeper/config, as ZooKeeper checks.
func (s *Port) mayReconfig(ids []proto.Id) bool {
	var list []proto.ACL
	s.sm.View(func(t *tree.Tree) {
		if n := t.Get(tree.ConfigPath); n != nil {
			list = n.ACL()
		}
	})
	return acl.Check(list, proto.PermWrite, ids)
}

// handleReconfig carries out a reconfig request: on a goroutine of its own
// (it waits for the change to commit and for new participants to catch
// up, for a bounded time, while the connection goes on — pings included),
// queued like a write, so that the session's later requests are answered
// after it. Its answer is the new configuration and the stat of
// /zookeeper/config.
func (c *Conn) handleReconfig(r *request, d *jute.Decoder) bool {
	req := new(proto.ReconfigRequest)
	req.Decode(d)
	if d.Err() != nil {
		c.submitRead(r, fixedCode(proto.ErrMarshallingError))
		return true
	}
	r.isWrite, r.reconfig = true, true
	c.pipeMu.Lock()
	c.inflight++
	c.queue = append(c.queue, r)
	c.pipeMu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go func() {
			select {
			case <-c.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		code := c.s.raft.Reconfig(ctx, req, func() bool { return c.s.opts.SkipACL || c.s.mayReconfig(r.auth) })
		cancel()
		c.auditReconfig(r.auth, code)
		r.body = fixedReply(func(_ *request, t *tree.Tree) (proto.ErrCode, proto.Record) {
			if code != proto.ErrOk {
				return code, nil
			}
			resp := &proto.GetDataResponse{}
			if n := t.Get(tree.ConfigPath); n != nil {
				resp.Data, resp.Stat = n.Data(), n.Stat()
			}
			return proto.ErrOk, resp
		})
		c.s.sm.View(func(t *tree.Tree) {
			c.pipeMu.Lock()
			defer c.pipeMu.Unlock()
			r.done = true
			c.drainQueueLocked(t)
		})
	}()
	return true
}
