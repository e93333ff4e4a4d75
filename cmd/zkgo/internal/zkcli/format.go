package zkcli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk"
)

// javaDateLayout is java.util.Date.toString's "EEE MMM dd HH:mm:ss zzz yyyy".
// Go prints the zone abbreviation of the tz database; for zones that have
// none it prints "+03" where Java prints "GMT+03:00".
const javaDateLayout = "Mon Jan 02 15:04:05 MST 2006"

// hex formats a long as Long.toHexString does (two's complement for
// negative values).
func hex(v int64) string { return strconv.FormatUint(uint64(v), 16) }

// formatStat renders a Stat as zkCli's StatPrinter.
func formatStat(st *zk.Stat, loc *time.Location) string {
	var b strings.Builder
	date := func(ms int64) string { return time.UnixMilli(ms).In(loc).Format(javaDateLayout) }
	fmt.Fprintf(&b, "cZxid = 0x%s\n", hex(st.Czxid))
	fmt.Fprintf(&b, "ctime = %s\n", date(st.Ctime))
	fmt.Fprintf(&b, "mZxid = 0x%s\n", hex(st.Mzxid))
	fmt.Fprintf(&b, "mtime = %s\n", date(st.Mtime))
	fmt.Fprintf(&b, "pZxid = 0x%s\n", hex(st.Pzxid))
	fmt.Fprintf(&b, "cversion = %d\n", st.Cversion)
	fmt.Fprintf(&b, "dataVersion = %d\n", st.Version)
	fmt.Fprintf(&b, "aclVersion = %d\n", st.Aversion)
	fmt.Fprintf(&b, "ephemeralOwner = 0x%s\n", hex(st.EphemeralOwner))
	fmt.Fprintf(&b, "dataLength = %d\n", st.DataLength)
	fmt.Fprintf(&b, "numChildren = %d\n", st.NumChildren)
	return b.String()
}

// permString renders permissions as ZKUtil.getPermString ("cdrwa" order).
func permString(p zk.Perm) string {
	var b strings.Builder
	for _, x := range []struct {
		bit zk.Perm
		c   byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// juteString escapes a string as jute's ToStringOutputArchive does.
func juteString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case 0:
			b.WriteString("%00")
		case '\n':
			b.WriteString("%0A")
		case '\r':
			b.WriteString("%0D")
		case ',':
			b.WriteString("%2C")
		case '}':
			b.WriteString("%7D")
		case '%':
			b.WriteString("%25")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// formatACL renders one ACL as zkCli's getAcl: the jute text of the Id
// (which ends with a newline) followed by ": perms".
func formatACL(a zk.ACL) string {
	return juteString(a.ID.Scheme) + "," + juteString(a.ID.ID) + "\n: " + permString(a.Perms) + "\n"
}

// javaList renders a list as java.util.List.toString: "[a, b]".
func javaList(items []string) string { return "[" + strings.Join(items, ", ") + "]" }

// eventTypeName is the name of Watcher.Event.EventType.
func eventTypeName(t zk.EventType) string {
	switch t {
	case proto.EventNone:
		return "None"
	case zk.EventNodeCreated:
		return "NodeCreated"
	case zk.EventNodeDeleted:
		return "NodeDeleted"
	case zk.EventNodeDataChanged:
		return "NodeDataChanged"
	case zk.EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case zk.EventDataWatchRemoved:
		return "DataWatchRemoved"
	case zk.EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case zk.EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return fmt.Sprintf("EventType(%d)", int32(t))
}

// watchedEvent renders an event as zkCli's default watcher prints it:
// "\nWATCHER::\n\nWatchedEvent state:S type:T path:P\n".
func watchedEvent(state, typ, path string) string {
	return "\nWATCHER::\n\nWatchedEvent state:" + state + " type:" + typ + " path:" + path + "\n"
}

// codeMessage is KeeperException.getCodeMessage.
func codeMessage(c proto.ErrCode) string {
	switch c {
	case proto.ErrOk:
		return "ok"
	case proto.ErrSystemError:
		return "SystemError"
	case proto.ErrRuntimeInconsistency:
		return "RuntimeInconsistency"
	case proto.ErrDataInconsistency:
		return "DataInconsistency"
	case proto.ErrConnectionLoss:
		return "ConnectionLoss"
	case proto.ErrMarshallingError:
		return "MarshallingError"
	case proto.ErrNewConfigNoQuorum:
		return "NewConfigNoQuorum"
	case proto.ErrReconfigInProgress:
		return "ReconfigInProgress"
	case proto.ErrUnimplemented:
		return "Unimplemented"
	case proto.ErrOperationTimeout:
		return "OperationTimeout"
	case proto.ErrBadArguments:
		return "BadArguments"
	case proto.ErrAPIError:
		return "APIError"
	case proto.ErrNoNode:
		return "NoNode"
	case proto.ErrNoAuth:
		return "NoAuth"
	case proto.ErrBadVersion:
		return "BadVersion"
	case proto.ErrNoChildrenForEphemerals:
		return "NoChildrenForEphemerals"
	case proto.ErrNodeExists:
		return "NodeExists"
	case proto.ErrInvalidACL:
		return "InvalidACL"
	case proto.ErrAuthFailed:
		return "AuthFailed"
	case proto.ErrNotEmpty:
		return "Directory not empty"
	case proto.ErrSessionExpired:
		return "Session expired"
	case proto.ErrInvalidCallback:
		return "Invalid callback"
	case proto.ErrSessionMoved:
		return "Session moved"
	case proto.ErrNotReadOnly:
		return "Not a read-only call"
	case proto.ErrEphemeralOnLocalSession:
		return "Ephemeral node on local session"
	case proto.ErrNoWatcher:
		return "No such watcher"
	case proto.ErrReconfigDisabled:
		return "Reconfig is disabled"
	case proto.ErrSessionClosedRequireSaslAuth:
		return "Session closed because client failed to authenticate"
	case proto.ErrQuotaExceeded:
		return "Quota has exceeded"
	case proto.ErrThrottled:
		return "Op throttled due to high load"
	}
	return fmt.Sprintf("Unknown error %d", int32(c))
}

// keeperMessage is KeeperException.getMessage: "KeeperErrorCode = X for /p".
func keeperMessage(c proto.ErrCode, path string) string {
	if path == "" {
		return "KeeperErrorCode = " + codeMessage(c)
	}
	return "KeeperErrorCode = " + codeMessage(c) + " for " + path
}

// errorCode returns the ZooKeeper code of a client error, and whether it
// has one. Context expiry while waiting for a reply or a reconnection is
// reported as a connection loss, which is what the Java client reports
// when its request times out.
func errorCode(err error) (proto.ErrCode, bool) {
	if errors.Is(err, context.DeadlineExceeded) {
		return proto.ErrConnectionLoss, true
	}
	var ze *zk.Error
	if errors.As(err, &ze) && ze.Code != proto.ErrOk {
		return ze.Code, true
	}
	// A bare sentinel (zk.ErrNoNode) carries its code too.
	if code := zk.ErrorCode(err); code != proto.ErrSystemError || errors.Is(err, zk.ErrSystemError) {
		return code, true
	}
	return 0, false
}

// cliMessage renders a failed operation on path as zkCli's
// CliWrapperException does.
func cliMessage(err error, path string) string {
	code, ok := errorCode(err)
	if !ok {
		switch {
		case errors.Is(err, zk.ErrClosing):
			return "Not connected"
		case errors.Is(err, context.Canceled):
			return "Interrupted"
		case errors.Is(err, zk.ErrInvalidPath):
			var ze *zk.Error
			if errors.As(err, &ze) && ze.Detail != "" {
				return "Invalid path " + strconv.Quote(path) + ": " + ze.Detail
			}
		}
		return err.Error()
	}
	switch code {
	case proto.ErrNoNode:
		return "Node does not exist: " + path
	case proto.ErrNoChildrenForEphemerals:
		return "Ephemerals cannot have children: " + path
	case proto.ErrNodeExists:
		return "Node already exists: " + path
	case proto.ErrNotEmpty:
		return "Node not empty: " + path
	case proto.ErrNotReadOnly:
		return "Not a read-only call: " + path
	case proto.ErrInvalidACL:
		return "Acl is not valid : " + path
	case proto.ErrNoAuth:
		return "Insufficient permission : " + path
	case proto.ErrBadArguments:
		return "Arguments are not valid : " + path
	case proto.ErrBadVersion:
		return "version No is not valid : " + path
	case proto.ErrReconfigInProgress:
		return "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)"
	case proto.ErrNewConfigNoQuorum:
		return "No quorum of new config is connected and up-to-date with the leader of last commmitted config - try invoking reconfiguration after new servers are connected and synced"
	case proto.ErrQuotaExceeded:
		return "Quota has exceeded : " + path
	}
	return keeperMessage(code, path)
}
