package cache

import (
	"context"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/zk"
)

// Option configures a cache. It is recipe.Option; the caches use none of
// the settings every recipe shares, and ignore the options of other recipe
// packages.
type Option = recipe.Option

type options struct {
	maxDepth    int
	redial      func(ctx context.Context) (*zk.Conn, error)
	oneShot     bool
	concurrency int
}

// DefaultConcurrency is how many reads a cache keeps in flight at once
// while it reads the subtree, unless WithConcurrency says otherwise.
const DefaultConcurrency = 256

// unlimited is the depth of a TreeCache without WithMaxDepth.
const unlimited = 1 << 30

func buildOptions(opts []Option) options {
	o := options{maxDepth: unlimited, concurrency: DefaultConcurrency}
	recipe.ApplyExtensions(recipe.Build(opts), &o)
	return o
}

// WithMaxDepth limits a TreeCache to the nodes at most depth levels below
// its root (0: the root alone, 1: the root and its children). Default:
// no limit. NodeCache and ChildrenCache ignore it.
func WithMaxDepth(depth int) Option {
	return recipe.Extend(func(o *options) {
		if depth >= 0 {
			o.maxDepth = depth
		}
	})
}

// WithRedial makes the cache survive the expiry of its session: after
// reporting Lost it calls redial for a new Conn (retrying with a growing
// pause while redial fails, until the cache is closed), reads the subtree
// on the new session and delivers the differences, then Resynced. The
// cache owns the Conns redial returns: it closes each when it replaces it
// and when it is closed. The Conn given to the constructor stays the
// caller's.
//
// Without it, a cache whose session expires stops: Lost, then Stopped with
// zk.ErrSessionExpired.
func WithRedial(redial func(ctx context.Context) (*zk.Conn, error)) Option {
	return recipe.Extend(func(o *options) { o.redial = redial })
}

// WithOneShotWatches makes the cache use one-shot watches (getData and
// getChildren watches on every cached node, as Curator's TreeCache does)
// even when the server has persistent recursive watches. The cache falls
// back to them by itself when the server answers addWatch with
// Unimplemented (ZooKeeper before 3.6). See the package documentation for
// what they cost and guarantee.
func WithOneShotWatches() Option { return recipe.Extend(func(o *options) { o.oneShot = true }) }

// WithConcurrency sets how many reads the cache keeps in flight at once
// (default DefaultConcurrency). All of them are pipelined on the Conn's
// one connection.
func WithConcurrency(n int) Option {
	return recipe.Extend(func(o *options) {
		if n > 0 {
			o.concurrency = n
		}
	})
}
