// Package proto defines every record of the Apache ZooKeeper 3.8 client
// protocol (requests, responses, watcher events, the connect handshake, multi
// and the transaction records zkgo replicates), together with the typed
// constants that go with them: operation codes, error codes, event types,
// keeper states, create modes and permissions.
//
// Every record has explicit Encode and Decode methods over package jute; no
// reflection is used. Layouts follow zookeeper.jute in Apache ZooKeeper 3.8.
package proto

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=OpCode,ErrCode,EventType,KeeperState,CreateMode,WatcherType,AddWatchMode -output=types_string.go

// OpCode identifies a request type (ZooDefs.OpCode).
type OpCode int32

// Operation codes of ZooKeeper 3.8.
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSasl                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

// ErrCode is a ZooKeeper error code (KeeperException.Code) as carried in
// reply headers and multi results.
type ErrCode int32

// Error codes of ZooKeeper 3.8.
const (
	ErrOk                           ErrCode = 0
	ErrSystemError                  ErrCode = -1
	ErrRuntimeInconsistency         ErrCode = -2
	ErrDataInconsistency            ErrCode = -3
	ErrConnectionLoss               ErrCode = -4
	ErrMarshallingError             ErrCode = -5
	ErrUnimplemented                ErrCode = -6
	ErrOperationTimeout             ErrCode = -7
	ErrBadArguments                 ErrCode = -8
	ErrUnknownSession               ErrCode = -12
	ErrNewConfigNoQuorum            ErrCode = -13
	ErrReconfigInProgress           ErrCode = -14
	ErrAPIError                     ErrCode = -100
	ErrNoNode                       ErrCode = -101
	ErrNoAuth                       ErrCode = -102
	ErrBadVersion                   ErrCode = -103
	ErrNoChildrenForEphemerals      ErrCode = -108
	ErrNodeExists                   ErrCode = -110
	ErrNotEmpty                     ErrCode = -111
	ErrSessionExpired               ErrCode = -112
	ErrInvalidCallback              ErrCode = -113
	ErrInvalidACL                   ErrCode = -114
	ErrAuthFailed                   ErrCode = -115
	ErrSessionMoved                 ErrCode = -118
	ErrNotReadOnly                  ErrCode = -119
	ErrEphemeralOnLocalSession      ErrCode = -120
	ErrNoWatcher                    ErrCode = -121
	ErrRequestTimeout               ErrCode = -122
	ErrReconfigDisabled             ErrCode = -123
	ErrSessionClosedRequireSaslAuth ErrCode = -124
	ErrQuotaExceeded                ErrCode = -125
	ErrThrottled                    ErrCode = -127
)

// EventType is the type of a watcher event (Watcher.Event.EventType).
type EventType int32

// Watcher event types.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// KeeperState is the connection state carried in watcher events
// (Watcher.Event.KeeperState).
type KeeperState int32

// Keeper states.
const (
	StateUnknown           KeeperState = -1
	StateDisconnected      KeeperState = 0
	StateNoSyncConnected   KeeperState = 1
	StateSyncConnected     KeeperState = 3
	StateAuthFailed        KeeperState = 4
	StateConnectedReadOnly KeeperState = 5
	StateSaslAuthenticated KeeperState = 6
	StateExpired           KeeperState = -112
	StateClosed            KeeperState = 7
)

// CreateMode is the flags field of a create request (CreateMode.toFlag).
type CreateMode int32

// Create modes.
const (
	ModePersistent                  CreateMode = 0
	ModeEphemeral                   CreateMode = 1
	ModePersistentSequential        CreateMode = 2
	ModeEphemeralSequential         CreateMode = 3
	ModeContainer                   CreateMode = 4
	ModePersistentWithTTL           CreateMode = 5
	ModePersistentSequentialWithTTL CreateMode = 6
)

// Valid reports whether m is a create mode ZooKeeper 3.8 knows.
func (m CreateMode) Valid() bool { return m >= ModePersistent && m <= ModePersistentSequentialWithTTL }

// IsEphemeral reports whether nodes of mode m belong to a session.
func (m CreateMode) IsEphemeral() bool { return m == ModeEphemeral || m == ModeEphemeralSequential }

// IsSequential reports whether mode m appends a sequence suffix.
func (m CreateMode) IsSequential() bool {
	return m == ModePersistentSequential || m == ModeEphemeralSequential || m == ModePersistentSequentialWithTTL
}

// IsContainer reports whether m is the container mode.
func (m CreateMode) IsContainer() bool { return m == ModeContainer }

// IsTTL reports whether m is one of the TTL modes.
func (m CreateMode) IsTTL() bool {
	return m == ModePersistentWithTTL || m == ModePersistentSequentialWithTTL
}

// WatcherType selects which watches removeWatches and checkWatches act on.
type WatcherType int32

// Watcher types. WatcherChildren and WatcherData select one-shot watches
// only since ZooKeeper 3.9 (ZOOKEEPER-4471/4472), which added the two
// persistent types; before, they selected a persistent watch too.
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4 // ZooKeeper 3.9+
	WatcherPersistentRecursive WatcherType = 5 // ZooKeeper 3.9+
)

// AddWatchMode is the mode of an addWatch request.
type AddWatchMode int32

// Add-watch modes.
const (
	AddWatchPersistent          AddWatchMode = 0
	AddWatchPersistentRecursive AddWatchMode = 1
)

// Perm is a permission bit set (ZooDefs.Perms).
type Perm int32

// Permissions.
const (
	PermRead   Perm = 1 << 0
	PermWrite  Perm = 1 << 1
	PermCreate Perm = 1 << 2
	PermDelete Perm = 1 << 3
	PermAdmin  Perm = 1 << 4
	PermAll    Perm = PermRead | PermWrite | PermCreate | PermDelete | PermAdmin
)

// Special xids in reply headers.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)
