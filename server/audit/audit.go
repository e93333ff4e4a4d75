// Package audit writes Apache ZooKeeper's audit log (3.6+,
// org.apache.zookeeper.audit): one line per event, the fields of
// AuditEvent in ZooKeeper's order (session, user, ip, operation, znode,
// znode_type, acl, then result) as key=value pairs separated by tabs,
// fields without a value left out, exactly as AuditEvent.toString writes
// them. In a file, each line carries the prefix of the RFAAUDIT appender of
// ZooKeeper's logback.xml ("%d{ISO8601} %p %c{2}: %m%n"), so that tools
// reading ZooKeeper's audit files read zkgo's.
//
// A Writer never blocks its callers: events go through a bounded queue to
// one goroutine that formats and writes them; when the queue is full the
// event is dropped, counted (Dropped) and reported in the server's log.
// Like logback's file appender it writes without fsync, and it rotates the
// file as ZooKeeper's appender does (10 MB, ten old files).
package audit

import (
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/proto"
)

// Operations, as ZooKeeper's AuditConstants names them.
const (
	OpStart    = "serverStart"
	OpStop     = "serverStop"
	OpCreate   = "create"
	OpDelete   = "delete"
	OpSetData  = "setData"
	OpSetACL   = "setAcl"
	OpMulti    = "multiOperation"
	OpReconfig = "reconfig"
	// OpEphemeralDelete: an ephemeral node deleted because its session
	// closed or expired (logged by every member that applies the close).
	OpEphemeralDelete = "ephemeralZNodeDeletionOnSessionCloseOrExpire"
)

// zkgo's own operations (ZooKeeper writes no audit line for an
// authentication).
const (
	// OpAddAuth: an auth packet (zkCli.sh's addauth, ZooKeeper.addAuthInfo).
	OpAddAuth = "addAuth"
	// OpSASLAuth: a SASL exchange (DIGEST-MD5 or GSSAPI) that ended.
	OpSASLAuth = "saslAuth"
)

// Result is an event's outcome (AuditEvent.Result).
type Result uint8

// The results.
const (
	Success Result = iota
	Failure
	Invoked // serverStop: logged before the server has stopped
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Invoked:
		return "invoked"
	}
	return "result(" + strconv.Itoa(int(r)) + ")"
}

// Field names a field of an event, for Event.Empty.
type Field uint8

// The fields that may be present while empty.
const (
	FieldIP Field = 1 << iota
	FieldZnode
	FieldACL
)

// Event is one audit event. A field is left out of the line when it is
// empty, unless Empty lists it: ZooKeeper leaves out null fields, not
// empty strings (an empty ACL list is "acl=").
type Event struct {
	Session   string // SessionHex of the client's session; "" for server events
	User      string // Users of the session's identities
	IP        string // the client's address
	Operation string
	Znode     string
	ZnodeType string // CreateModeName of a create's flags
	ACL       string // ACLString of a setAcl's list
	Empty     Field
	Result    Result
	// Time is when the event happened (the line's timestamp); zero: when
	// the Writer takes it.
	Time time.Time
}

// AppendTo appends the event as AuditEvent.toString writes it.
func (e *Event) AppendTo(b []byte) []byte {
	n := len(b)
	add := func(key, v string, f Field) {
		if v == "" && (f == 0 || e.Empty&f == 0) {
			return
		}
		if len(b) > n {
			b = append(b, '\t')
		}
		b = append(b, key...)
		b = append(b, '=')
		b = append(b, v...)
	}
	add("session", e.Session, 0)
	add("user", e.User, 0)
	add("ip", e.IP, FieldIP)
	add("operation", e.Operation, 0)
	add("znode", e.Znode, FieldZnode)
	add("znode_type", e.ZnodeType, 0)
	add("acl", e.ACL, FieldACL)
	if len(b) > n {
		b = append(b, '\t')
	}
	b = append(b, "result="...)
	return append(b, e.Result.String()...)
}

// String is the event's line without prefix.
func (e *Event) String() string { return string(e.AppendTo(nil)) }

// SessionHex is ServerCnxn.getSessionIdHex: "0x" and the id in lower-case
// hex without leading zeros, as an unsigned number.
func SessionHex(id int64) string { return proto.SessionIDHex(id) }

// Users is ZooKeeper's AuthUtil.getUsers of a session's identities: each
// provider's user name (a digest identity's name without its hash, the id
// of ip, sasl and x509 identities; none for super), blank ones left out,
// joined by commas; "" when none is left.
func Users(ids []proto.Id) string {
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return userName(ids[0])
	}
	var sb strings.Builder
	for _, id := range ids {
		u := userName(id)
		if u == "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(u)
	}
	return sb.String()
}

func userName(id proto.Id) string {
	var u string
	switch id.Scheme {
	case "super", "world", "auth":
		// No authentication provider of ZooKeeper has these schemes.
		return ""
	case "digest":
		u, _, _ = strings.Cut(id.ID, ":")
	default:
		u = id.ID
	}
	if strings.TrimLeft(u, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ") == "" {
		return "" // Java's trim().isEmpty()
	}
	return u
}

// CreateModeName is CreateMode.fromFlag(flags).toString().toLowerCase();
// ok is false for flags that are no create mode (ZooKeeper then writes no
// audit line).
func CreateModeName(flags proto.CreateMode) (name string, ok bool) {
	switch flags {
	case proto.ModePersistent:
		return "persistent", true
	case proto.ModeEphemeral:
		return "ephemeral", true
	case proto.ModePersistentSequential:
		return "persistent_sequential", true
	case proto.ModeEphemeralSequential:
		return "ephemeral_sequential", true
	case proto.ModeContainer:
		return "container", true
	case proto.ModePersistentWithTTL:
		return "persistent_with_ttl", true
	case proto.ModePersistentSequentialWithTTL:
		return "persistent_sequential_with_ttl", true
	}
	return "", false
}

// ACLString is ZKUtil.aclToString: scheme:id:perms of each entry, perms
// in the order cdrwa, the entries written one after another without a
// separator (as ZooKeeper does).
func ACLString(acls []proto.ACL) string {
	var b []byte
	for _, a := range acls {
		b = append(b, a.ID.Scheme...)
		b = append(b, ':')
		b = append(b, a.ID.ID...)
		b = append(b, ':')
		for _, p := range []struct {
			bit proto.Perm
			c   byte
		}{{proto.PermCreate, 'c'}, {proto.PermDelete, 'd'}, {proto.PermRead, 'r'}, {proto.PermWrite, 'w'}, {proto.PermAdmin, 'a'}} {
			if a.Perms&p.bit != 0 {
				b = append(b, p.c)
			}
		}
	}
	return string(b)
}
