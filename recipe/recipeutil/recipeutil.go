// Package recipeutil holds the building blocks of zkgo's lock and election
// recipes, for people who write recipes of their own: Curator's node
// naming and ordering (SortKey, SortNodes, CreateNode), waiting for a turn
// in a queue of sequential nodes (Decide, FirstN, WaitTurn, CheckTurn),
// cleaning up (DeleteNode), listing a queue (Participants), holding what
// was won (Hold, which returns a recipe.Grant) and delivering events
// (Stream). People who use the recipes do not need it.
//
// These were in package recipe before; the names there are deprecated and
// go in the next release (see CHANGES.md).
//
// A minimal mutex built from them:
//
//	path, st, err := recipeutil.CreateNode(ctx, conn, base, "lock-", nil, nil)
//	if err != nil {
//		return nil, err
//	}
//	name := path[strings.LastIndex(path, "/")+1:]
//	if err := recipeutil.WaitTurn(ctx, conn, base, []string{"lock-"}, name, recipeutil.FirstN(1)); err != nil {
//		recipeutil.DeleteNode(ctx, conn, path)
//		return nil, err
//	}
//	return recipeutil.Hold(ctx, conn, path, st.Czxid, recipeutil.HoldOptions{})
package recipeutil

import (
	"context"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/internal/link"
	"github.com/zkgo/zkgo/recipe/internal/turn"
	"github.com/zkgo/zkgo/zk"
)

// SortKey returns what Curator sorts a lock node name by
// (StandardLockInternalsDriver.standardFixForSorting): the part after the
// last occurrence of lockName, or the whole name if it does not occur. For
// "_c_<uuid>-lock-0000000007" and "lock-" that is "0000000007".
func SortKey(name, lockName string) string { return turn.SortKey(name, lockName) }

// SortNodes sorts node names as Curator does: stably, by the key left after
// applying SortKey with each lock name in turn (the read-write lock passes
// both "__READ__" and "__WRIT__").
func SortNodes(names []string, lockNames ...string) { turn.SortNodes(names, lockNames...) }

// CreateNode creates the protected ephemeral-sequential node
// base/_c_<uuid>-<lockName><seq> with data, creating base and its missing
// ancestors as containers first if needed (Curator's
// creatingParentContainersIfNeeded().withProtection()). It returns the
// node's path and Stat. A nil acl means zk.OpenACLUnsafe.
func CreateNode(ctx context.Context, conn *zk.Conn, base, lockName string, data []byte, acl []zk.ACL) (string, *zk.Stat, error) {
	return turn.CreateNode(ctx, conn, base, lockName, data, acl)
}

// DeleteNode deletes our node, also when ctx is already done (a cancelled
// acquire must still clean up): it retries across connection losses for up
// to the session timeout, and if the outcome is still unknown then, goes on
// in the background (zk.Conn.DeleteGuaranteed, Curator's guaranteed
// delete) until the node is gone or the session ends. A node left behind
// by a live session would block every later waiter of its lock for good.
// A node that is already gone is not an error.
func DeleteNode(ctx context.Context, conn *zk.Conn, path string) error {
	return turn.DeleteNode(ctx, conn, path)
}

// Decide looks at the sorted children of a lock's base node and says
// whether our node (ours, a name) gets the grant; if not, it names the
// node to wait for (watch). It returns recipe.ErrNodeMissing if ours is not
// among them. It is the function type
//
//	func(sorted []string, ours string) (ok bool, watch string, err error)
//
// and recipe.Decide is the same type.
type Decide = turn.Decide

// FirstN is Curator's standard decision: the first n nodes hold the grant;
// any other node waits for the node n places before it. With n = 1 each
// waiter watches only its immediate predecessor, so a release wakes one
// waiter (no herd effect).
func FirstN(n int) Decide { return turn.FirstN(n) }

// WaitTurn lists base's children, sorts them (SortNodes with lockNames) and
// asks decide, until it says ours gets the grant; in between it waits for
// the node decide named to change or go (a getData watch, as Curator uses).
// It returns ctx's error when ctx is done, and the session's error (or
// recipe.ErrNodeMissing) when our node can no longer get the grant. The
// caller deletes its node if WaitTurn fails.
func WaitTurn(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide) error {
	return turn.WaitTurn(ctx, conn, base, lockNames, ours, decide)
}

// CheckTurn is WaitTurn without waiting: it reports whether ours gets the
// grant now.
func CheckTurn(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide) (bool, error) {
	return turn.CheckTurn(ctx, conn, base, lockNames, ours, decide)
}

// Participants returns the members of base's queue in order (SortNodes with
// lockNames), reading each node's data as its id. Nodes that vanish while
// being read are skipped. filter, if set, keeps only the names it accepts.
// A missing base is an empty queue.
func Participants(ctx context.Context, conn *zk.Conn, base string, lockNames []string, filter func(string) bool) ([]recipe.Participant, error) {
	ps, err := turn.Participants(ctx, conn, base, lockNames, filter)
	if ps == nil {
		return nil, err
	}
	out := make([]recipe.Participant, len(ps))
	for i, p := range ps {
		out[i] = recipe.Participant(p)
	}
	return out, err
}

// HoldOptions configure Hold.
type HoldOptions struct {
	// Policy decides which connection states end the grant.
	Policy recipe.Policy
	// OnData, if set, is called (on the grant's own goroutine) with the
	// node's data when it changes; the lock recipes use it for Curator's
	// revocation request.
	OnData func(data []byte)
}

var hold = link.Hold.(func(context.Context, *zk.Conn, string, int64, recipe.Policy, func([]byte)) (*recipe.Grant, error))

// Hold starts watching the node at path (created by this Conn's session,
// with creation zxid czxid) and returns a Grant for it. The Grant is lost as
// described in package recipe ("Losing a grant"). The caller must call
// Release when it gives the grant back. Hold reads the node once (setting
// a watch on it); if the node is already gone it returns
// recipe.ErrNodeDeleted.
func Hold(ctx context.Context, conn *zk.Conn, path string, czxid int64, opts HoldOptions) (*recipe.Grant, error) {
	return hold(ctx, conn, path, czxid, opts.Policy, opts.OnData)
}

// Stream delivers values over a channel in order without ever blocking the
// sender and without dropping anything: values wait in an unbounded queue
// while the receiver is slow. Recipes use it for their event channels.
//
// Its methods: C returns the receiving channel, which is closed after
// Close once every value before it has been received; Send queues a value
// (values sent after Close are dropped); Close closes the channel after
// the queued values (a receiver that stops receiving before that keeps one
// goroutine blocked, so receive until the channel is closed).
// recipe.Stream is the same type.
type Stream[T any] = turn.Stream[T]

// NewStream returns an open stream.
func NewStream[T any]() *Stream[T] { return turn.NewStream[T]() }
