package cache

import (
	"errors"

	"github.com/zkgo/zkgo/zk"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=EventType

// EventType says what an Event reports.
type EventType int

// Event types. Created, Changed and Deleted report a node; the others
// report the cache itself.
const (
	// Created: a node appeared (Data and Stat are its state; Zxid is
	// Stat.Mzxid, which is Stat.Czxid unless it changed again before the
	// cache read it). The initial snapshot is delivered as Created events
	// too, parents before children, before Initialized.
	Created EventType = iota + 1
	// Changed: a node's data changed (Data and Stat are the new state,
	// Zxid is Stat.Mzxid). Changes of the child list alone (numChildren,
	// cversion, pzxid) update the cached Stat silently, as in Curator.
	Changed
	// Deleted: a node is gone (Data and Stat are its last cached state).
	// Zxid bounds the deletion from above: it is the pzxid of the parent
	// as read after the deletion, the zxid of the deletion unless the
	// parent's children changed again before that read (and, for a node
	// deleted and created again, the new node's czxid).
	Deleted
	// Initialized: the initial snapshot is complete. Zxid is the zxid of
	// the snapshot: the cached subtree equals the server's at that zxid.
	Initialized
	// Suspended: the connection was lost. Until Resynced (or Lost) the
	// cache does not follow the server: its content is what it was when
	// the connection broke.
	Suspended
	// Resynced: after a reconnection (or, with WithRedial, a new session)
	// the cache read the subtree again; the differences were delivered,
	// in zxid order, as Created, Changed and Deleted events just before
	// it. Zxid is the zxid of the new snapshot, as for Initialized.
	Resynced
	// Lost: the session expired (Err). The content is stale from now on.
	// With WithRedial the cache rebuilds on a new session (Resynced
	// follows); without it Stopped follows.
	Lost
	// Error: a node could not be read (Path, Err: zk.ErrNoAuth for
	// example). The node is left out of the cache until a later change
	// of it can be read.
	Error
	// Stopped: the cache stopped for good (Err says why); it is the last
	// event, the channel is closed after it, and the cache serves nothing
	// from then on. Close does not send it.
	Stopped
)

// Event is a change of the cached subtree or of the cache's state.
type Event struct {
	Type EventType
	// Path is the node's path (node events and Error).
	Path string
	// Data and Stat are the node's state: the new one for Created and
	// Changed, the last cached one for Deleted. Data is shared with the
	// cache: do not modify it.
	Data []byte
	Stat zk.Stat
	// Zxid orders the events: see each type. From Initialized on, the
	// Zxid of node events never decreases (with persistent watches; see
	// the package documentation for one-shot watches).
	Zxid int64
	// Err is set for Lost, Error and Stopped.
	Err error
}

// Entry is a cached node.
type Entry struct {
	Path string
	// Data is shared with the cache: do not modify it.
	Data []byte
	Stat zk.Stat
}

// Errors of the caches.
var (
	// ErrClosed: the cache was closed (Err after Close; Start on a closed
	// cache).
	ErrClosed = errors.New("cache: closed")
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("cache: already started")
)
