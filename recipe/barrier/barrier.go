package barrier

import (
	"context"
	"errors"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/zk"
)

// Option configures a Barrier or DoubleBarrier. It is recipe.Option: of the
// settings every recipe shares, barriers use the ACL (recipe.WithACL); the
// others, and the options of other recipe packages, are ignored.
type Option = recipe.Option

type options struct {
	acl []zk.ACL
}

// WithACL sets the ACL of the nodes the barrier creates (default: open).
// It is recipe.WithACL.
func WithACL(acl []zk.ACL) Option { return recipe.WithACL(acl) }

func buildOptions(opts []Option) options {
	o := options{acl: recipe.Build(opts).ACL}
	if o.acl == nil {
		o.acl = zk.OpenACLUnsafe
	}
	return o
}

// Barrier is a barrier that holds every waiter until someone removes it
// (Curator's DistributedBarrier). The barrier is up while its node exists.
// Its methods are safe for concurrent use.
type Barrier struct {
	src  zk.Sessions
	path string
	opts options
}

// New returns the barrier whose node is path.
func New(src zk.Sessions, path string, opts ...Option) *Barrier {
	return &Barrier{src: src, path: path, opts: buildOptions(opts)}
}

// Path returns the barrier's node path.
func (b *Barrier) Path() string { return b.path }

// Set raises the barrier: it creates the node (and its missing parents, as
// containers). A barrier that is already up is not an error.
func (b *Barrier) Set(ctx context.Context) error {
	for {
		_, err := b.src.Current().CreateAll(ctx, b.path, nil, b.opts.acl, zk.ModePersistent, zk.AsContainers())
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue // a create that did land is found existing
		default:
			return err
		}
	}
}

// Remove lowers the barrier, releasing every waiter. A barrier that is
// not up is not an error.
func (b *Barrier) Remove(ctx context.Context) error {
	for {
		err := b.src.Current().Delete(ctx, b.path, zk.AnyVersion)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		default:
			return err
		}
	}
}

// IsSet reports whether the barrier is up now.
func (b *Barrier) IsSet(ctx context.Context) (bool, error) {
	for {
		st, err := b.src.Current().Exists(ctx, b.path)
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		return st != nil, err
	}
}

// Wait blocks until the barrier is down (its node does not exist),
// returning at once if it is not up. It returns ctx's error when ctx is
// done, and zk.ErrSessionExpired or zk.ErrClosing when the Conn can no
// longer watch.
func (b *Barrier) Wait(ctx context.Context) error {
	for {
		st, ev, err := b.src.Current().ExistsW(ctx, b.path)
		if errors.Is(err, zk.ErrConnectionLoss) {
			continue
		}
		if err != nil {
			return err
		}
		if st == nil {
			return nil
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
