// Package kazoolock is the exclusive lock of Python's kazoo
// (kazoo.recipe.lock.Lock), which kazoo's SetPartitioner and leases build
// on: contenders are ephemeral sequential nodes
// "<path>/<32 hex digits>__lock__<10-digit sequence>" carrying the
// contender's identifier; the contender whose sequence suffix sorts first
// holds the lock, and every other watches the contender just before it.
// Children that do not end in "__lock__" and a sequence (a lease's
// "lease_holder", for one) are not contenders.
package kazoolock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// NodeName is what kazoo puts between a contender's random prefix and its
// sequence number.
const NodeName = "__lock__"

var contender = regexp.MustCompile(`(?:__lock__)(-?\d{10})$`)

// Lock is one contender for the lock at Path. It is not safe for
// concurrent use.
type Lock struct {
	conn   *zk.Conn
	path   string
	data   []byte
	acl    []zk.ACL
	prefix string // "<hex>__lock__"
	node   string // our node's name, "" when we have none
}

// New returns a contender for the lock at path whose node carries
// identifier (kazoo's Lock(path, identifier)).
func New(conn *zk.Conn, path, identifier string, acl []zk.ACL) *Lock {
	var b [16]byte
	rand.Read(b[:])
	if acl == nil {
		acl = zk.OpenACLUnsafe
	}
	return &Lock{conn: conn, path: path, data: []byte(identifier), acl: acl, prefix: hex.EncodeToString(b[:]) + NodeName}
}

// Contenders returns the contender names among children in lock order.
func Contenders(children []string) []string {
	type c struct{ name, seq string }
	var cs []c
	for _, ch := range children {
		if m := contender.FindStringSubmatch(ch); m != nil {
			cs = append(cs, c{ch, m[1]})
		}
	}
	// kazoo sorts by the sequence text.
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].seq < cs[j].seq })
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// Acquire waits until the lock is held or ctx is done; then (or on any
// other error) it removes its node as well as it can and returns the
// error.
func (l *Lock) Acquire(ctx context.Context) error {
	err := l.acquire(ctx)
	if err != nil {
		l.cleanup()
	}
	return err
}

func (l *Lock) acquire(ctx context.Context) error {
	if err := l.create(ctx); err != nil {
		return err
	}
	for {
		children, _, err := l.conn.Children(ctx, l.path)
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return err
		}
		cs := Contenders(children)
		i := -1
		for j, c := range cs {
			if c == l.node {
				i = j
				break
			}
		}
		if i < 0 {
			// Our node is gone (the session was lost and renewed, or
			// someone deleted it): contend again.
			l.node = ""
			if err := l.create(ctx); err != nil {
				return err
			}
			continue
		}
		if i == 0 {
			return nil
		}
		_, ev, err := l.conn.ExistsW(ctx, l.path+"/"+cs[i-1])
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return err
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				return e.Err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// create makes our contender node, recognizing by its prefix one whose
// reply was lost.
func (l *Lock) create(ctx context.Context) error {
	lost := false
	for {
		if lost {
			children, _, err := l.conn.Children(ctx, l.path)
			if errors.Is(err, zk.ErrConnectionLoss) {
				continue
			}
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			for _, ch := range children {
				if strings.HasPrefix(ch, l.prefix) {
					l.node = ch
					return nil
				}
			}
		}
		p, err := l.conn.CreateAll(ctx, l.path+"/"+l.prefix, l.data, l.acl, zk.ModeEphemeralSequential)
		switch {
		case err == nil:
			l.node = p[len(l.path)+1:]
			return nil
		case errors.Is(err, zk.ErrConnectionLoss):
			lost = true
		default:
			return err
		}
	}
}

// Node returns the path of our contender node ("" without one).
func (l *Lock) Node() string {
	if l.node == "" {
		return ""
	}
	return l.path + "/" + l.node
}

// Release deletes our node.
func (l *Lock) Release(ctx context.Context) error {
	if l.node == "" {
		return nil
	}
	for {
		err := l.conn.Delete(ctx, l.path+"/"+l.node, zk.AnyVersion)
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			l.node = ""
			return nil
		}
		return err
	}
}

// cleanup deletes our node, if any, without the caller's context (which
// may be done).
func (l *Lock) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if l.node == "" {
		// A create whose reply was lost may have landed.
		children, _, err := l.conn.Children(ctx, l.path)
		if err != nil {
			return
		}
		for _, ch := range children {
			if strings.HasPrefix(ch, l.prefix) {
				l.node = ch
			}
		}
	}
	l.Release(ctx)
}

// cleanupTimeout bounds the removal of a contender node after a failed
// acquisition.
const cleanupTimeout = 5 * time.Second
