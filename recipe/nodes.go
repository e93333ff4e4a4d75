package recipe

import (
	"context"

	"github.com/zkgo/zkgo/recipe/internal/turn"
	"github.com/zkgo/zkgo/zk"
)

// This file keeps the building blocks for writing recipes that moved to
// package recipe/recipeutil, for one release. Each is the recipeutil one.

// SortKey returns what Curator sorts a lock node name by.
//
// Deprecated: Use recipeutil.SortKey.
func SortKey(name, lockName string) string { return turn.SortKey(name, lockName) }

// SortNodes sorts node names as Curator does.
//
// Deprecated: Use recipeutil.SortNodes.
func SortNodes(names []string, lockNames ...string) { turn.SortNodes(names, lockNames...) }

// CreateNode creates a protected ephemeral-sequential lock node.
//
// Deprecated: Use recipeutil.CreateNode.
func CreateNode(ctx context.Context, conn *zk.Conn, base, lockName string, data []byte, acl []zk.ACL) (string, *zk.Stat, error) {
	return turn.CreateNode(ctx, conn, base, lockName, data, acl)
}

// DeleteNode deletes our node, also when ctx is already done.
//
// Deprecated: Use recipeutil.DeleteNode.
func DeleteNode(ctx context.Context, conn *zk.Conn, path string) error {
	return turn.DeleteNode(ctx, conn, path)
}

// Decide says whether our node gets the grant.
//
// Deprecated: Use recipeutil.Decide (the same type).
type Decide = turn.Decide

// FirstN is Curator's standard decision.
//
// Deprecated: Use recipeutil.FirstN.
func FirstN(n int) Decide { return turn.FirstN(n) }

// WaitTurn waits until our node gets the grant.
//
// Deprecated: Use recipeutil.WaitTurn.
func WaitTurn(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide) error {
	return turn.WaitTurn(ctx, conn, base, lockNames, ours, decide)
}

// CheckTurn reports whether our node gets the grant now.
//
// Deprecated: Use recipeutil.CheckTurn.
func CheckTurn(ctx context.Context, conn *zk.Conn, base string, lockNames []string, ours string, decide Decide) (bool, error) {
	return turn.CheckTurn(ctx, conn, base, lockNames, ours, decide)
}

// Participant is a member of a lock or election queue, as the recipes'
// Participants methods (lock.Mutex, leader.Latch, ...) return them.
type Participant struct {
	// ID is the node's data as a string (the participant id of Curator's
	// LeaderLatch and LeaderSelector).
	ID string
	// Path is the node's path.
	Path string
	// Leader is true for the first node: the holder or leader.
	Leader bool
}

// Participants returns the members of base's queue in order.
//
// Deprecated: Use recipeutil.Participants.
func Participants(ctx context.Context, conn *zk.Conn, base string, lockNames []string, filter func(string) bool) ([]Participant, error) {
	ps, err := turn.Participants(ctx, conn, base, lockNames, filter)
	return convertParticipants(ps), err
}

func convertParticipants(ps []turn.Participant) []Participant {
	if ps == nil {
		return nil
	}
	out := make([]Participant, len(ps))
	for i, p := range ps {
		out[i] = Participant(p)
	}
	return out
}

// Stream delivers values over a channel in order without blocking the
// sender and without dropping anything.
//
// Deprecated: Use recipeutil.Stream (the same type).
type Stream[T any] = turn.Stream[T]

// NewStream returns an open stream.
//
// Deprecated: Use recipeutil.NewStream.
func NewStream[T any]() *Stream[T] { return turn.NewStream[T]() }
