package zk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/zkgo/zkgo/internal/zklink"
	"github.com/zkgo/zkgo/proto"
)

// PathOption adjusts EnsurePath and CreateAll.
type PathOption func(*pathOpts)

type pathOpts struct {
	containers bool
}

// AsContainers creates missing parents as container nodes (which the
// server deletes once their last child is gone), like Curator's
// creatingParentContainersIfNeeded.
func AsContainers() PathOption { return func(o *pathOpts) { o.containers = true } }

// EnsurePath creates path and its missing ancestors (with empty data and
// acl); existing nodes are left alone.
func (c *Conn) EnsurePath(ctx context.Context, path string, acl []ACL, opts ...PathOption) error {
	if _, err := c.checkPath("ensurePath", path, false); err != nil {
		return err
	}
	var o pathOpts
	for _, fn := range opts {
		fn(&o)
	}
	if path == "/" {
		return nil
	}
	if st, err := c.Exists(ctx, path); err != nil || st != nil {
		return err
	}
	mode := ModePersistent
	if o.containers {
		mode = ModeContainer
	}
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, err := c.Create(ctx, path[:i], nil, acl, mode)
		if err != nil && !errors.Is(err, ErrNodeExists) {
			return err
		}
	}
	return nil
}

// CreateAll creates a node like Create, creating its missing ancestors
// first (as persistent nodes, or containers with AsContainers, with empty
// data and the same acl).
func (c *Conn) CreateAll(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, opts ...PathOption) (string, error) {
	for attempt := 0; ; attempt++ {
		p, err := c.Create(ctx, path, data, acl, mode)
		if err == nil || !errors.Is(err, ErrNoNode) || attempt == 3 {
			return p, err
		}
		// A parent is missing (or a container parent was reaped meanwhile).
		if err := c.EnsurePath(ctx, parentOf(path), acl, opts...); err != nil {
			return "", err
		}
	}
}

// DeleteAll deletes path and all its descendants. A missing node is not an
// error. Nodes created concurrently under path are deleted too, up to a
// few retries.
func (c *Conn) DeleteAll(ctx context.Context, path string) error {
	if _, err := c.checkPath("deleteAll", path, false); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		children, _, err := c.Children(ctx, path)
		if errors.Is(err, ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, ch := range children {
			if err := c.DeleteAll(ctx, joinPath(path, ch)); err != nil {
				return err
			}
		}
		if path == "/" {
			return nil
		}
		err = c.Delete(ctx, path, AnyVersion)
		if err == nil || errors.Is(err, ErrNoNode) {
			return nil
		}
		if !errors.Is(err, ErrNotEmpty) || attempt == 5 {
			return err
		}
	}
}

// ProtectedPrefix is the prefix of the names CreateProtectedEphemeralSequential
// creates, followed by a UUID and "-" (Curator's protection).
const ProtectedPrefix = "_c_"

// CreateProtectedEphemeralSequential creates an ephemeral sequential node
// whose name is prefixed with "_c_<uuid>-" (Curator's withProtection), so
// that a create whose reply was lost with the connection can be found: on
// ErrConnectionLoss it lists the parent (after reconnecting) and returns the
// node carrying its prefix, or creates again if there is none. The parent
// must exist.
func (c *Conn) CreateProtectedEphemeralSequential(ctx context.Context, path string, data []byte, acl []ACL) (string, error) {
	p, _, err := c.CreateProtected(ctx, path, data, acl, ModeEphemeralSequential)
	return p, err
}

// CreateProtected is Create2 with Curator's protection for any mode: the
// node's name gets the prefix "_c_<uuid>-", and a create whose reply was
// lost with the connection is found by that prefix (and its Stat read)
// instead of being created twice or orphaned. The parent must exist.
func (c *Conn) CreateProtected(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, opts ...CreateOption) (string, *Stat, error) {
	p, st, _, err := c.createProtected(ctx, path, data, acl, mode, opts, false)
	return p, st, err
}

func init() {
	zklink.CreateProtectedListed = func(c *Conn, ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode) (string, *Stat, []string, error) {
		return c.createProtected(ctx, path, data, acl, mode, nil, true)
	}
}

// createProtected is CreateProtected; with list, its first create is
// followed at once, on the same connection and without waiting for the
// create's reply, by a GetChildren2 of the parent. The server answers a
// session's requests in order, so the list, which comes with the
// create's reply, holds the new node: a lock's or a latch's contender
// sees the queue it joined without another round trip. children is nil
// when the list did not come with the create (an error, a retried
// create): list again.
func (c *Conn) createProtected(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, opts []CreateOption, list bool) (string, *Stat, []string, error) {
	if _, err := c.checkPath("create", path, mode.IsSequential()); err != nil {
		return "", nil, nil, err
	}
	id, err := newUUID()
	if err != nil {
		return "", nil, nil, err
	}
	parent := parentOf(path)
	name := path[strings.LastIndexByte(path, '/')+1:]
	prefix := ProtectedPrefix + id + "-"
	full := joinPath(parent, prefix+name)
	for {
		var p string
		var st *Stat
		var children []string
		if list {
			list = false // only the first create: a retry looks first
			p, st, children, err = c.create2Listed(ctx, full, data, acl, mode, opts)
		} else {
			p, st, err = c.Create2(ctx, full, data, acl, mode, opts...)
		}
		if err == nil {
			return p, st, children, nil
		}
		if ctx.Err() != nil {
			// Cancelled while the request may have been in flight: the
			// node may exist. Find it by its prefix and delete it
			// (Curator's findAndDeleteProtectedNodeInBackground, done
			// before returning).
			c.deleteProtected(ctx, parent, prefix)
			return "", nil, nil, err
		}
		if !IsRetryable(err) {
			return "", nil, nil, err
		}
		// The create may have been applied (a connection loss; not after
		// SessionMoved, a refusal, but looking costs little): look for it.
		for {
			children, _, lerr := c.Children(ctx, parent)
			if lerr == nil {
				found := ""
				for _, ch := range children {
					if strings.HasPrefix(ch, prefix) {
						found = joinPath(parent, ch)
						break
					}
				}
				if found == "" {
					break // not created: create again
				}
				st, serr := c.Exists(ctx, found)
				if serr == nil && st != nil {
					return found, st, nil, nil
				}
				if serr == nil || errors.Is(serr, ErrNoNode) {
					break // gone again (session ended?): create again
				}
				lerr = serr
			}
			if !IsRetryable(lerr) {
				return "", nil, nil, lerr
			}
		}
	}
}

// create2Listed is Create2 followed on the same connection, without
// waiting, by a GetChildren2 of the parent (createProtected). children
// is nil if the list failed while the create succeeded.
func (c *Conn) create2Listed(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, opts []CreateOption) (string, *Stat, []string, error) {
	op, body, err := c.createRequest("create2", path, data, acl, mode, true, opts)
	if err != nil {
		return "", nil, nil, err
	}
	sp, err := c.checkPath("getChildren", parentOf(path), false)
	if err != nil {
		return "", nil, nil, err
	}
	var cresp proto.Create2Response
	lresp := new(proto.GetChildren2Response)
	create := &request{xid: c.nextXid(), op: op, body: body, resp: &cresp, done: make(chan struct{})}
	ls := &request{xid: c.nextXid(), op: proto.OpGetChildren2, body: &proto.GetChildren2Request{Path: sp}, resp: lresp, done: make(chan struct{})}
	if err := c.send(ctx, create, ls); err != nil {
		return "", nil, nil, wrapErr(err, "create2", path)
	}
	if err := c.wait(ctx, create); err != nil {
		ls.abandoned.Store(true)
		return "", nil, nil, wrapErr(err, "create2", path)
	}
	var children []string
	if c.wait(ctx, ls) == nil {
		children = nonNil(lresp.Children)
	}
	return c.stripRoot(cresp.Path), &cresp.Stat, children, nil
}

// deleteProtected deletes the children of parent that start with prefix,
// retrying across connection losses for up to the session timeout, even
// though ctx is done; if it could not look then, it goes on in the
// background until the session ends (Curator's
// findAndDeleteProtectedNodeInBackground): a protected node left behind
// by a live session would block a lock's later waiters for good.
func (c *Conn) deleteProtected(ctx context.Context, parent, prefix string) {
	to := c.SessionTimeout()
	if to <= 0 {
		to = c.cfg.sessionTimeout
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), to)
	defer cancel()
	if !c.deleteProtectedUntil(dctx, parent, prefix) {
		go c.deleteProtectedUntil(c.ctx, parent, prefix)
	}
}

// deleteProtectedUntil looks for parent's children with prefix and deletes
// them (guaranteed deletes) until it could list parent, ctx ends or the
// session does; it reports whether it listed parent.
func (c *Conn) deleteProtectedUntil(ctx context.Context, parent, prefix string) bool {
	pause := 10 * time.Millisecond
	for ctx.Err() == nil {
		children, _, err := c.Children(ctx, parent)
		if err != nil {
			if IsRetryable(err) {
				t := time.NewTimer(pause)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
				pause = min(2*pause, time.Second)
				continue
			}
			return !errors.Is(err, ctx.Err())
		}
		for _, ch := range children {
			if strings.HasPrefix(ch, prefix) {
				p := joinPath(parent, ch)
				if err := c.Delete(ctx, p, AnyVersion); err != nil && unknownOutcome(ctx, err) {
					c.startGuaranteed(p, AnyVersion, nil)
				}
			}
		}
		return true
	}
	return false
}

// newUUID returns a random (version 4) UUID in its canonical form.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:]), nil
}

// FourLetterWord sends a four-letter-word command ("ruok", "mntr", "srvr",
// "stat", ...) to the server at addr and returns its answer. ctx bounds the
// whole exchange (default 10s when ctx has no deadline).
func FourLetterWord(ctx context.Context, addr, cmd string) (string, error) {
	if len(cmd) != 4 {
		return "", errors.New("zk: a four-letter word has four letters")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	var d net.Dialer
	return fourLetterWord(ctx, d.DialContext, addr, cmd, 16<<20)
}

// fourLetterWord sends cmd over a connection made by dial and returns the
// answer, read up to limit bytes. ctx must have a deadline.
func fourLetterWord(ctx context.Context, dial DialFunc, addr, cmd string, limit int64) (string, error) {
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	dl, _ := ctx.Deadline()
	nc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := io.WriteString(nc, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(nc, limit))
	if err != nil {
		return string(b), err
	}
	return string(b), nil
}
