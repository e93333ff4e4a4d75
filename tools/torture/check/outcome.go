package check

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=Outcome,Change,EndKind,OpKind -output=enums_string.go

import (
	"errors"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkgo/zkgo/zk"
)

// Outcome is how a request ended, as its client saw it.
type Outcome uint8

const (
	// Unknown: no definite answer came back (connection loss, a timeout,
	// a closed client, a cancelled context, or the operation was never
	// recorded as ended). It may or may not have taken effect, and may
	// still take effect after its client gave up. The zero value, so an
	// outcome never filled in is unknown.
	Unknown Outcome = iota
	// OK: the ensemble answered success; the operation took effect.
	OK
	// Failed: the ensemble answered with a definite refusal (NoNode,
	// NodeExists, BadVersion, NotEmpty, NoChildrenForEphemerals); nothing
	// changed.
	Failed
)

// definite are the refusals that say a request was processed and changed
// nothing. Everything else — connection loss, timeouts, a closed client,
// session expired or moved, throttling, a cancelled context — is Unknown:
// some of those are definite too, but taking a definite refusal for an
// unknown only weakens a check, while the reverse would make it wrong.
var definite = []error{
	zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion, zk.ErrNotEmpty, zk.ErrNoChildrenForEphemerals,
	gozk.ErrNoNode, gozk.ErrNodeExists, gozk.ErrBadVersion, gozk.ErrNotEmpty, gozk.ErrNoChildrenForEphemerals,
}

// OutcomeOf maps the error of a request made with this repository's zk
// client or with go-zookeeper to an Outcome: nil is OK, a definite refusal
// is Failed, anything else is Unknown.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OK
	}
	for _, d := range definite {
		if errors.Is(err, d) {
			return Failed
		}
	}
	return Unknown
}

// Change is the kind of change a write makes, and the type of the watch
// event that reports it. The values are ZooKeeper's wire event types, so
// both clients' event types convert directly: Change(ev.Type).
type Change int32

const (
	// Created: create; NodeCreated.
	Created Change = 1
	// Deleted: delete; NodeDeleted.
	Deleted Change = 2
	// DataChanged: setData; NodeDataChanged.
	DataChanged Change = 3
	// ChildrenChanged: a child created or deleted; NodeChildrenChanged,
	// delivered to a (non-recursive) persistent watch on the parent.
	ChildrenChanged Change = 4
)

// valid reports whether c is one of the four changes.
func (c Change) valid() bool { return c >= Created && c <= ChildrenChanged }
