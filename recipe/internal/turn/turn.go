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
	// Each name's key is worked out once, not at every comparison: a
	// lock's waiters sort the whole queue at every step they move up.
	type keyed struct{ key, name string }
	ks := make([]keyed, len(names))
	for i, n := range names {
		k := n
		for _, l := range lockNames {
			k = SortKey(k, l)
		}
		ks[i] = keyed{k, n}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range ks {
		names[i] = ks[i].name
	}
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
			children, err = list(ctx, conn, base, lockNames)
		} else {
			SortNodes(children, lockNames...)
		}
		if err != nil {
			if errors.Is(err, errRetry) {
				continue // the session may live: ask again once reconnected
			}
			return err
		}
		ok, watch, err := decide(children, ours)
		if err != nil || ok {
			return err
		}
		if !wait {
			return errNotYet
		}
		var ahead chan (<-chan zk.Event)
		if monotone {
			if next := aheadOf(decide, children, watch, ours); next != "" {
				// The look-ahead's watch is set beside the
				// predecessor's, not a round trip after it: both
				// reads leave in one write.
				ahead = make(chan (<-chan zk.Event), 1)
				go func() { ahead <- watchAhead(ctx, conn, base, next) }()
			}
		}
		_, _, ev, err := conn.GetW(ctx, base+"/"+watch)
		if errors.Is(err, zk.ErrNoNode) || (zk.IsRetryable(err) && ctx.Err() == nil) {
			continue // already gone, or the connection broke: look again
		}
		if err != nil {
			return err
		}
		if monotone {
			var granted bool
			var aheadEv <-chan zk.Event
			if ahead != nil {
				aheadEv = <-ahead
			}
			granted, listed, err = waitAhead(ctx, conn, base, lockNames, ours, decide, children, watch, ev, aheadEv)
			if err != nil || granted {
				return err
			}
			continue
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

// errRetry: list's read failed in a way that may pass (the connection
// broke while the session may live).
var errRetry = errors.New("retry")

// list reads base's children, sorted. A missing base is ErrNodeMissing;
// a retryable failure while ctx lives is errRetry.
func list(ctx context.Context, conn *zk.Conn, base string, lockNames []string) ([]string, error) {
	children, _, err := conn.Children(ctx, base)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, ErrNodeMissing
		}
		if zk.IsRetryable(err) && ctx.Err() == nil {
			return nil, errRetry
		}
		return nil, err
	}
	SortNodes(children, lockNames...)
	return children, nil
}

// waitAhead waits, for a monotone decide, until watch (a node in
// children, the sorted list decide named it from; ev is its data watch)
// changes or goes. It reports granted when its deletion gives ours the
// grant; otherwise it returns the list to decide on next (nil: list
// again).
//
// When watch's deletion alone would not give the grant (a lock waiter
// deeper in the queue than second), it also watches the node decide
// would name once watch is gone — for a lock, the node before watch —
// and lists the children again when that one goes. The list is then
// read while watch's owner holds, off the handoff's path: when watch
// goes in turn, the list already puts ours first and the grant needs no
// round trip, as for the first waiter. Each release so wakes two waiters
// (the next holder, and the one after it to list), but the list that
// every waiter reads once per turn it moves up is off the path from one
// holder to the next.
func waitAhead(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide, children []string, watch string, ev, ahead <-chan zk.Event) (granted bool, next []string, err error) {
	// ahead is the watch on the node decide would name once watch is
	// gone (aheadOf, watchAhead); nil when watch's deletion alone gives the grant
	// (or the look ahead was given up after a failed read: watch's
	// deletion then lists again, as without it).
	for {
		select {
		case e := <-ev:
			switch {
			case e.Type == zk.EventNotWatching:
				return false, nil, e.Err
			case e.Type == zk.EventNodeDeleted:
				// The other nodes listed are gone since or still
				// there, and every node created since sorts after
				// ours: if the list without watch gives the grant,
				// the real one does too.
				rest := slices.DeleteFunc(children, func(n string) bool { return n == watch })
				if ok, _, err := decide(rest, ours); err == nil && ok {
					return true, nil, nil
				}
			}
			return false, nil, nil
		case e := <-ahead:
			if e.Type == zk.EventNotWatching {
				return false, nil, e.Err
			}
			// The node ahead changed or went: list again, while watch
			// is still waited for.
			fresh, err := list(ctx, conn, base, lockNames)
			if errors.Is(err, errRetry) {
				ahead = nil // watch's deletion lists again
				continue
			}
			if err != nil {
				return false, nil, err
			}
			if ok, _, err := decide(fresh, ours); err != nil || ok {
				return ok, nil, err // ours is gone, or its turn came
			}
			if !slices.Contains(fresh, watch) {
				return false, fresh, nil // gone meanwhile: decide on fresh
			}
			children = fresh
			ahead = nil
			if next := aheadOf(decide, children, watch, ours); next != "" {
				ahead = watchAhead(ctx, conn, base, next)
			}
		case <-ctx.Done():
			return false, nil, ctx.Err()
		}
	}
}

// aheadOf returns the node decide names in children without watch: the
// one to watch ahead of watch. It is "" when children without watch
// gives ours the grant (watch's deletion alone does).
func aheadOf(decide Decide, children []string, watch, ours string) string {
	rest := slices.DeleteFunc(slices.Clone(children), func(n string) bool { return n == watch })
	ok, next, err := decide(rest, ours)
	if err != nil || ok {
		return ""
	}
	return next
}

// watchAhead sets a data watch on base/next and returns its channel, or
// nil if the watch could not be set. For a node already gone the channel
// already holds its deletion, so the caller lists again.
func watchAhead(ctx context.Context, conn *zk.Conn, base, next string) <-chan zk.Event {
	_, _, ch, err := conn.GetW(ctx, base+"/"+next)
	if errors.Is(err, zk.ErrNoNode) {
		gone := make(chan zk.Event, 1)
		gone <- zk.Event{Type: zk.EventNodeDeleted, Path: base + "/" + next}
		return gone
	}
	if err != nil {
		return nil
	}
	return ch
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
