package recipe

import "github.com/zkgo/zkgo/zk"

// Options are the settings the recipe packages share. Every recipe
// package's Option (lock.Option, leader.Option, queue.Option, ...) is this
// package's Option, so one list of options can configure recipes of
// several packages:
//
//	opts := []recipe.Option{recipe.WithACL(acl), recipe.WithPolicy(recipe.Session)}
//	m := lock.NewMutex(conn, "/app/lock", opts...)
//	l := leader.NewLatch(conn, "/app/leader", id, opts...)
//
// A recipe ignores the settings it has no use for (a barrier has no
// Policy). The packages keep their own constructors of these settings
// (lock.WithACL is recipe.WithACL) and add settings of their own with
// Extend.
type Options struct {
	// ACL is the ACL of the nodes a recipe creates (nil: zk.OpenACLUnsafe).
	ACL []zk.ACL
	// Policy decides when something held (a lock, leadership, a taken
	// queue item) counts as lost (default Strict). Used by recipe/lock,
	// recipe/leader and recipe/queue.
	Policy Policy
	// Retry governs how an operation that met a concurrent change is
	// tried again (nil: the recipe's default). Used by recipe/shared's
	// AtomicValue and AtomicLong.
	Retry zk.RetryPolicy

	ext []any // the Extend functions, in order
}

// Option sets one or more Options.
type Option func(*Options)

// WithACL sets the ACL of the nodes a recipe creates (default: open).
func WithACL(acl []zk.ACL) Option { return func(o *Options) { o.ACL = acl } }

// WithPolicy sets the error policy that decides when something held counts
// as lost (default Strict).
func WithPolicy(p Policy) Option { return func(o *Options) { o.Policy = p } }

// WithRetry sets the retry policy of operations that met a concurrent
// change (default: the recipe's own).
func WithRetry(p zk.RetryPolicy) Option { return func(o *Options) { o.Retry = p } }

// Extend returns an Option that carries a setting of one recipe package
// only: set changes that package's own settings type T (usually an
// unexported struct). It is how the packages define their own options,
// for example lock.WithData:
//
//	type settings struct{ data []byte }
//
//	func WithData(data []byte) Option {
//		return recipe.Extend(func(s *settings) { s.data = data })
//	}
//
// and how they read them back (ApplyExtensions). A recipe of another
// package, whose settings type is another, ignores it.
func Extend[T any](set func(*T)) Option {
	return func(o *Options) { o.ext = append(o.ext, set) }
}

// Build applies opts in order and returns the result. Nil options are
// skipped.
func Build(opts []Option) Options {
	var o Options
	for _, fn := range opts {
		if fn != nil {
			fn(&o)
		}
	}
	return o
}

// ApplyExtensions calls, in the order they were given, the functions of
// the options made by Extend for settings type T, on dst.
func ApplyExtensions[T any](o Options, dst *T) {
	for _, x := range o.ext {
		if set, ok := x.(func(*T)); ok {
			set(dst)
		}
	}
}
