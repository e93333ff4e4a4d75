package zk

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"

	"github.com/zkgo/zkgo/proto"
)

// This file makes the basics of the ZooKeeper data model reachable from
// package zk alone: what the Java client keeps in ZooDefs (Ids, Perms) and
// CreateMode, and the records that appear in this package's API. The types
// are aliases of package proto's, so values of either name are
// interchangeable and code written against proto keeps compiling.

// Types of the ZooKeeper data model.
type (
	// ACL grants Perms to an identity (org.apache.zookeeper.data.ACL).
	ACL = proto.ACL
	// Id is an identity: a scheme and an id within it
	// (org.apache.zookeeper.data.Id).
	Id = proto.Id
	// Stat is a znode's metadata (org.apache.zookeeper.data.Stat).
	Stat = proto.Stat
	// Perm is a permission bit set (ZooDefs.Perms).
	Perm = proto.Perm
	// CreateMode is the mode of a created node (CreateMode).
	CreateMode = proto.CreateMode
	// AddWatchMode is the mode of AddWatch (AddWatchMode).
	AddWatchMode = proto.AddWatchMode
	// WatcherType selects the watches RemoveWatches and CheckWatches act on
	// (Watcher.WatcherType).
	WatcherType = proto.WatcherType
	// ClientInfo is one identity of a session, as WhoAmI reports it.
	ClientInfo = proto.ClientInfo
	// ErrCode is a ZooKeeper error code (KeeperException.Code), as in
	// Error.Code and ErrorCode. Test errors with errors.Is and the
	// sentinels (ErrNoNode, ...) rather than with codes.
	ErrCode = proto.ErrCode
	// OpCode identifies an operation, as in OpResult.Type and
	// ReadResult.Type.
	OpCode = proto.OpCode
)

// Create modes (CreateMode).
const (
	ModePersistent                  = proto.ModePersistent
	ModeEphemeral                   = proto.ModeEphemeral
	ModePersistentSequential        = proto.ModePersistentSequential
	ModeEphemeralSequential         = proto.ModeEphemeralSequential
	ModeContainer                   = proto.ModeContainer
	ModePersistentWithTTL           = proto.ModePersistentWithTTL           // with WithTTL
	ModePersistentSequentialWithTTL = proto.ModePersistentSequentialWithTTL // with WithTTL
)

// Permissions (ZooDefs.Perms).
const (
	PermRead   = proto.PermRead
	PermWrite  = proto.PermWrite
	PermCreate = proto.PermCreate
	PermDelete = proto.PermDelete
	PermAdmin  = proto.PermAdmin
	PermAll    = proto.PermAll
)

// Modes of AddWatch.
const (
	// AddWatchPersistent watches data and child changes of the node itself.
	AddWatchPersistent = proto.AddWatchPersistent
	// AddWatchPersistentRecursive watches data changes of the node and of
	// every descendant.
	AddWatchPersistentRecursive = proto.AddWatchPersistentRecursive
)

// Watcher types of RemoveWatches and CheckWatches.
const (
	WatcherChildren = proto.WatcherChildren
	WatcherData     = proto.WatcherData
	WatcherAny      = proto.WatcherAny
)

// Operations reported in OpResult.Type and ReadResult.Type.
const (
	OpCreate      = proto.OpCreate
	OpDelete      = proto.OpDelete
	OpSetData     = proto.OpSetData
	OpCheck       = proto.OpCheck
	OpGetData     = proto.OpGetData
	OpGetChildren = proto.OpGetChildren
)

// Authentication schemes, for ACL ids, WithAuth and AddAuth.
const (
	SchemeWorld  = "world"  // one id, "anyone"
	SchemeAuth   = "auth"   // in an ACL: every id the creating session is authenticated as
	SchemeDigest = "digest" // "user:password" in AddAuth, DigestID(user, password) in an ACL
	SchemeIP     = "ip"     // an address or network ("10.0.0.0/8") in an ACL
	SchemeSASL   = "sasl"   // the SASL user (WithSASL)
	SchemeX509   = "x509"   // the client certificate's name (TLS)
)

// Well-known ids and ACL lists (ZooDefs.Ids). They are shared: do not
// modify their elements.
var (
	// AnyoneIDUnsafe is the identity of everyone (world:anyone).
	AnyoneIDUnsafe = Id{Scheme: SchemeWorld, ID: "anyone"}
	// AuthIDs, in an ACL, stands for the creator's authenticated ids
	// (auth:"").
	AuthIDs = Id{Scheme: SchemeAuth, ID: ""}

	// OpenACLUnsafe grants every permission to everyone.
	OpenACLUnsafe = []ACL{{Perms: PermAll, ID: AnyoneIDUnsafe}}
	// CreatorAllACL grants every permission to the creator's authenticated
	// ids; the session must have authenticated (AddAuth, WithAuth,
	// WithSASL), or the server answers ErrInvalidACL.
	CreatorAllACL = []ACL{{Perms: PermAll, ID: AuthIDs}}
	// ReadACLUnsafe grants read to everyone.
	ReadACLUnsafe = []ACL{{Perms: PermRead, ID: AnyoneIDUnsafe}}
)

// WorldACL returns an ACL list granting perms to everyone.
func WorldACL(perms Perm) []ACL {
	return []ACL{{Perms: perms, ID: AnyoneIDUnsafe}}
}

// AuthACL returns an ACL list granting perms to the creator's authenticated
// ids (see CreatorAllACL).
func AuthACL(perms Perm) []ACL {
	return []ACL{{Perms: perms, ID: AuthIDs}}
}

// DigestACL returns an ACL list granting perms to the digest user with the
// given password: a session gets them after AddAuth(ctx, SchemeDigest,
// []byte(user+":"+password)) (or WithAuth).
func DigestACL(perms Perm, user, password string) []ACL {
	return []ACL{{Perms: perms, ID: Id{Scheme: SchemeDigest, ID: DigestID(user, password)}}}
}

// DigestID returns the id of the "digest" scheme for user and password:
// "user:" followed by the base64 of SHA-1("user:password"), as ZooKeeper's
// DigestAuthenticationProvider.generateDigest computes it. The user should
// not contain ':' (ZooKeeper takes everything before the first ':' as the
// user name).
func DigestID(user, password string) string {
	idPassword := user + ":" + password
	name, _, _ := strings.Cut(idPassword, ":")
	sum := sha1.Sum([]byte(idPassword))
	return name + ":" + base64.StdEncoding.EncodeToString(sum[:])
}
