// Package turn implements the building blocks of the lock and election
// recipes (Curator's node naming, ordering and waiting for a turn) for
// package recipe/recipeutil, which documents them, and for the deprecated
// forms left in package recipe.
package turn

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zkgo/zkgo/internal/zklink"
	"github.com/zkgo/zkgo/zk"
)

// SortKey returns what Curator sorts a lock node name by
// (StandardLockInternalsDriver.standardFixForSorting): the part after the
// last occurrence of lockName, or the whole name if it does not occur. For
// "_c_<uuid>-lock-0000000007" and "lock-" that is "0000000007".
func SortKey(name, lockName string) string {
	if i := strings.LastIndex(name, lockName); i >= 0 {
		return name[i+len(lockName):]
	}
	return name
}

// SortNodes sorts node names as Curator does: stably, by the key left after
// applying SortKey with each lock name in turn (the read-write lock passes
// both "__READ__" and "__WRIT__").
func SortNodes(names []string, lockNames ...string) {
	key := func(n string) string {
		for _, l := range lockNames {
			n = SortKey(n, l)
		}
		return n
	}
	slices.SortStableFunc(names, func(a, b string) int { return strings.Compare(key(a), key(b)) })
}

// CreateNode creates the protected ephemeral-sequential node
// base/_c_<uuid>-<lockName><seq> with data, creating base and its missing
// ancestors as containers first if needed (Curator's
// creatingParentContainersIfNeeded().withProtection()). It returns the
// node's path and Stat.
func CreateNode(ctx context.Context, conn *zk.Conn, base, lockName string, data []byte, acl []zk.ACL) (string, *zk.Stat, error) {
	if acl == nil {
		acl = zk.OpenACLUnsafe
	}
	p := base + "/" + lockName
	path, st, err := conn.CreateProtected(ctx, p, data, acl, zk.ModeEphemeralSequential)
	if errors.Is(err, zk.ErrNoNode) {
		if err := conn.EnsurePath(ctx, base, zk.OpenACLUnsafe, zk.AsContainers()); err != nil {
			return "", nil, err
		}
		path, st, err = conn.CreateProtected(ctx, p, data, acl, zk.ModeEphemeralSequential)
	}
	return path, st, err
}

// DeleteNode deletes our node, also when ctx is already done (a cancelled
// acquire must still clean up): it retries across connection losses for up
// to the session timeout, and if the outcome is still unknown then, goes on
// in the background (zk.Conn.DeleteGuaranteed, Curator's guaranteed
// delete) until the node is gone or the session ends. A node left behind
// by a live session would block every later waiter of its lock for good:
// a reconnection can take longer than the session timeout while the
// session lives on (a new leader gives every session a fresh timeout).
// A node that is already gone is not an error.
func DeleteNode(ctx context.Context, conn *zk.Conn, path string) error {
	to := conn.SessionTimeout()
	if to <= 0 {
		to = 10 * time.Second
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBound(to))
	defer cancel()
	for {
		err := conn.Delete(dctx, path, -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if dctx.Err() != nil && (zk.IsRetryable(err) || errors.Is(err, dctx.Err())) {
			// dctx is done: DeleteGuaranteed's first try fails at once
			// and the delete goes on in the background.
			conn.DeleteGuaranteed(dctx, path, -1)
			return err
		}
		// A connection loss, or SessionMoved (the session was resumed on
		// another server, which refused the delete; Curator's RetryLoop
		// retries it too): try again on the next connection.
		if !zk.IsRetryable(err) {
			return err
		}
	}
}

// cleanupBound is how long DeleteNode waits for its delete before handing
// it to the background (tests shorten it).
var cleanupBound = func(sessionTimeout time.Duration) time.Duration { return sessionTimeout }

// ErrNodeMissing: our own sequential node vanished while we waited (the
// session ended, or someone deleted it). Package recipe exports it.
var ErrNodeMissing = errors.New("recipe: our node is gone")

// Decide looks at the sorted children of a lock's base node and says
// whether our node (ours, a name) gets the grant; if not, it names the
// node to wait for. It returns ErrNodeMissing if ours is not among them.
type Decide = func(sorted []string, ours string) (ok bool, watch string, err error)

// FirstN is Curator's standard decision: the first n nodes hold the grant;
// any other node waits for the node n places before it. With n = 1 each
// waiter watches only its immediate predecessor, so a release wakes one
// waiter (no herd effect).
func FirstN(n int) Decide {
	return func(sorted []string, ours string) (bool, string, error) {
		i := slices.Index(sorted, ours)
		if i < 0 {
			return false, "", ErrNodeMissing
		}
		if i < n {
			return true, "", nil
		}
		return false, sorted[i-n], nil
	}
}

// WaitTurn lists base's children, sorts them (SortNodes with lockNames) and
// asks decide, until it says ours gets the grant; in between it waits for
// the node decide named to change or go (a getData watch, as Curator uses).
// It returns ctx's error when ctx is done, and the session's error (or
// ErrNodeMissing) when our node can no longer get the grant. The caller
// deletes its node if WaitTurn fails.
func WaitTurn(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide) error {
	return waitTurn(ctx, conn, base, lockNames, ours, decide, true, false, nil)
}

// CreateNodeListed is CreateNode that also returns base's children as
// the server had them just after the create (a GetChildren2 sent on the
// same connection right behind the create, answered in the same round
// trip), or nil if that list did not come with it: a contender sees the
// queue it joined without another round trip.
func CreateNodeListed(ctx context.Context, conn *zk.Conn, base, lockName string, data []byte, acl []zk.ACL) (string, *zk.Stat, []string, error) {
	if acl == nil {
		acl = zk.OpenACLUnsafe
	}
	p := base + "/" + lockName
	path, st, children, err := createListed(conn, ctx, p, data, acl, zk.ModeEphemeralSequential)
	if errors.Is(err, zk.ErrNoNode) {
		if err := conn.EnsurePath(ctx, base, zk.OpenACLUnsafe, zk.AsContainers()); err != nil {
			return "", nil, nil, err
		}
		path, st, children, err = createListed(conn, ctx, p, data, acl, zk.ModeEphemeralSequential)
	}
	return path, st, children, err
}

var createListed = zklink.CreateProtectedListed.(func(*zk.Conn, context.Context, string, []byte, []zk.ACL, zk.CreateMode) (string, *zk.Stat, []string, error))

// WaitTurnMonotone is WaitTurn for a decide that is monotone: a node it
// gives the grant to in a list still gets it when nodes before it are
// removed or nodes after it added (FirstN, the read-write lock's). When
// the node it waits for is deleted, WaitTurnMonotone asks decide about
// the list it had, without that node, before it lists the children
// again: the other nodes it listed are gone since or still there, and
// every node created since sorts after ours (sequence numbers grow), so
// if that list gives us the grant the real one does too. A lock's next
// holder — whose predecessor was the holder — so takes the lock as the
// deletion's event arrives, a getChildren round trip sooner than
// Curator's, which always lists again. listed, if not nil, is base's
// children read after ours was created (CreateNodeListed): the first
// decision is taken on it instead of a new list.
func WaitTurnMonotone(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide, listed []string) error {
	return waitTurn(ctx, conn, base, lockNames, ours, decide, true, true, listed)
}

// CheckTurn is WaitTurn without waiting: it reports whether ours gets the
// grant now.
func CheckTurn(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide) (bool, error) {
	return CheckTurnListed(ctx, conn, base, lockNames, ours, decide, nil)
}

// CheckTurnListed is CheckTurn deciding on listed, base's children read
// after ours was created, if it is not nil.
func CheckTurnListed(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide, listed []string) (bool, error) {
	err := waitTurn(ctx, conn, base, lockNames, ours, decide, false, false, listed)
	if errors.Is(err, errNotYet) {
		return false, nil
	}
	return err == nil, err
}

var errNotYet = errors.New("not yet")

func waitTurn(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide, wait, monotone bool, listed []string) error {
	for {
		children, err := listed, error(nil)
		listed = nil
		if children == nil {
			children, _, err = conn.Children(ctx, base)
		}
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return ErrNodeMissing
			}
			if zk.IsRetryable(err) && ctx.Err() == nil {
				continue // the session may live: ask again once reconnected
			}
			return err
		}
		SortNodes(children, lockNames...)
		ok, watch, err := decide(children, ours)
		if err != nil || ok {
			return err
		}
		if !wait {
			return errNotYet
		}
		_, _, ev, err := conn.GetW(ctx, base+"/"+watch)
		if errors.Is(err, zk.ErrNoNode) || (zk.IsRetryable(err) && ctx.Err() == nil) {
			continue // already gone, or the connection broke: look again
		}
		if err != nil {
			return err
		}
		select {
		case e := <-ev:
			if e.Type == zk.EventNotWatching {
				return e.Err
			}
			if monotone && e.Type == zk.EventNodeDeleted {
				rest := slices.DeleteFunc(children, func(n string) bool { return n == watch })
				if ok, _, err := decide(rest, ours); err == nil && ok {
					return nil
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Participant is a member of a lock or election queue.
type Participant struct {
	// ID is the node's data as a string (the participant id of Curator's
	// LeaderLatch and LeaderSelector).
	ID string
	// Path is the node's path.
	Path string
	// Leader is true for the first node: the holder or leader.
	Leader bool
}

// Participants returns the members of base's queue in order, reading each
// node's data as its id. Nodes that vanish while being read are skipped.
// filter, if set, keeps only the names it accepts.
func Participants(ctx context.Context, conn *zk.Conn, base string, lockNames []string, filter func(string) bool) ([]Participant, error) {
	children, _, err := conn.Children(ctx, base)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	SortNodes(children, lockNames...)
	var out []Participant
	for _, name := range children {
		if filter != nil && !filter(name) {
			continue
		}
		data, _, err := conn.Get(ctx, base+"/"+name)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Participant{ID: string(data), Path: base + "/" + name, Leader: len(out) == 0})
	}
	return out, nil
}
