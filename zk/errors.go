package zk

import (
	"errors"
	"fmt"

	"github.com/zkgo/zkgo/proto"
)

// Sentinel errors. Every error a Conn method returns for a ZooKeeper error
// code is an *Error that wraps one of these, so test with errors.Is:
//
//	if _, err := c.Get(ctx, "/a"); errors.Is(err, zk.ErrNoNode) { ... }
var (
	ErrSystemError                  = errors.New("zk: system error")
	ErrRuntimeInconsistency         = errors.New("zk: runtime inconsistency")
	ErrDataInconsistency            = errors.New("zk: data inconsistency")
	ErrConnectionLoss               = errors.New("zk: connection loss")
	ErrMarshallingError             = errors.New("zk: marshalling error")
	ErrUnimplemented                = errors.New("zk: unimplemented")
	ErrOperationTimeout             = errors.New("zk: operation timeout")
	ErrBadArguments                 = errors.New("zk: bad arguments")
	ErrUnknownSession               = errors.New("zk: unknown session")
	ErrNewConfigNoQuorum            = errors.New("zk: new config has no quorum")
	ErrReconfigInProgress           = errors.New("zk: reconfig in progress")
	ErrAPIError                     = errors.New("zk: api error")
	ErrNoNode                       = errors.New("zk: node does not exist")
	ErrNoAuth                       = errors.New("zk: not authenticated")
	ErrBadVersion                   = errors.New("zk: version conflict")
	ErrNoChildrenForEphemerals      = errors.New("zk: ephemeral nodes may not have children")
	ErrNodeExists                   = errors.New("zk: node already exists")
	ErrNotEmpty                     = errors.New("zk: node has children")
	ErrSessionExpired               = errors.New("zk: session expired")
	ErrInvalidCallback              = errors.New("zk: invalid callback")
	ErrInvalidACL                   = errors.New("zk: invalid ACL")
	ErrAuthFailed                   = errors.New("zk: authentication failed")
	ErrSessionMoved                 = errors.New("zk: session moved to another server")
	ErrNotReadOnly                  = errors.New("zk: not a read-only call")
	ErrEphemeralOnLocalSession      = errors.New("zk: ephemeral node on local session")
	ErrNoWatcher                    = errors.New("zk: no such watcher")
	ErrRequestTimeout               = errors.New("zk: request timeout")
	ErrReconfigDisabled             = errors.New("zk: reconfig disabled")
	ErrSessionClosedRequireSaslAuth = errors.New("zk: session closed, SASL authentication required")
	ErrQuotaExceeded                = errors.New("zk: quota exceeded")
	ErrThrottled                    = errors.New("zk: request throttled")

	// ErrUnknownCode is wrapped by errors for codes this package does not know.
	ErrUnknownCode = errors.New("zk: unknown error code")

	// ErrClosing is returned by operations on a Conn that Close was called on.
	ErrClosing = errors.New("zk: connection closing")
	// ErrInvalidPath is returned (wrapped) for a path that ZooKeeper would
	// refuse; the request is not sent.
	ErrInvalidPath = errors.New("zk: invalid path")
	// ErrProtocol is wrapped by the connection-loss errors caused by a reply
	// that breaks the protocol (an out-of-order xid, an undecodable body).
	ErrProtocol = errors.New("zk: protocol error")
)

// codeErrors is the one table mapping server error codes to sentinels.
var codeErrors = map[proto.ErrCode]error{
	proto.ErrSystemError:                  ErrSystemError,
	proto.ErrRuntimeInconsistency:         ErrRuntimeInconsistency,
	proto.ErrDataInconsistency:            ErrDataInconsistency,
	proto.ErrConnectionLoss:               ErrConnectionLoss,
	proto.ErrMarshallingError:             ErrMarshallingError,
	proto.ErrUnimplemented:                ErrUnimplemented,
	proto.ErrOperationTimeout:             ErrOperationTimeout,
	proto.ErrBadArguments:                 ErrBadArguments,
	proto.ErrUnknownSession:               ErrUnknownSession,
	proto.ErrNewConfigNoQuorum:            ErrNewConfigNoQuorum,
	proto.ErrReconfigInProgress:           ErrReconfigInProgress,
	proto.ErrAPIError:                     ErrAPIError,
	proto.ErrNoNode:                       ErrNoNode,
	proto.ErrNoAuth:                       ErrNoAuth,
	proto.ErrBadVersion:                   ErrBadVersion,
	proto.ErrNoChildrenForEphemerals:      ErrNoChildrenForEphemerals,
	proto.ErrNodeExists:                   ErrNodeExists,
	proto.ErrNotEmpty:                     ErrNotEmpty,
	proto.ErrSessionExpired:               ErrSessionExpired,
	proto.ErrInvalidCallback:              ErrInvalidCallback,
	proto.ErrInvalidACL:                   ErrInvalidACL,
	proto.ErrAuthFailed:                   ErrAuthFailed,
	proto.ErrSessionMoved:                 ErrSessionMoved,
	proto.ErrNotReadOnly:                  ErrNotReadOnly,
	proto.ErrEphemeralOnLocalSession:      ErrEphemeralOnLocalSession,
	proto.ErrNoWatcher:                    ErrNoWatcher,
	proto.ErrRequestTimeout:               ErrRequestTimeout,
	proto.ErrReconfigDisabled:             ErrReconfigDisabled,
	proto.ErrSessionClosedRequireSaslAuth: ErrSessionClosedRequireSaslAuth,
	proto.ErrQuotaExceeded:                ErrQuotaExceeded,
	proto.ErrThrottled:                    ErrThrottled,
}

// sentinelCodes is the reverse of codeErrors.
var sentinelCodes = func() map[error]proto.ErrCode {
	m := make(map[error]proto.ErrCode, len(codeErrors))
	for c, e := range codeErrors {
		m[e] = c
	}
	return m
}()

// CodeError returns the sentinel for a server error code: nil for ErrOk,
// ErrUnknownCode for codes not in the table.
func CodeError(code ErrCode) error {
	if code == proto.ErrOk {
		return nil
	}
	if e, ok := codeErrors[code]; ok {
		return e
	}
	return ErrUnknownCode
}

// ErrorCode returns the ZooKeeper error code of err: the Code of an *Error
// in its chain, or the code of a sentinel it wraps. It returns ErrOk for nil
// and ErrSystemError for errors that carry no code (ctx errors, ErrClosing).
func ErrorCode(err error) ErrCode {
	if err == nil {
		return proto.ErrOk
	}
	var e *Error
	if errors.As(err, &e) && e.Code != proto.ErrOk {
		return e.Code
	}
	for s, c := range sentinelCodes {
		if errors.Is(err, s) {
			return c
		}
	}
	return proto.ErrSystemError
}

// Error is the error returned for a failed operation: the server's (or the
// client's) error code, the operation and the path it was applied to.
// It wraps the sentinel of its code (errors.Is(err, ErrNoNode)).
type Error struct {
	Code ErrCode // ErrOk for client-side errors without a code (ErrClosing, ErrInvalidPath)
	Op   string  // "create", "getData", ...
	Path string  // the path as the caller gave it (without chroot), if any
	Err  error   // the sentinel; never nil
	// Detail is extra text for client-side errors (for example why a path is
	// invalid, or the underlying network error of a connection loss).
	Detail string
	// Cause is the underlying error of a client-side error (the network
	// error or protocol violation behind a connection loss), or nil.
	// errors.Is and errors.As look into it too.
	Cause error
}

func (e *Error) Error() string {
	s := "zk: " + e.Op
	if e.Path != "" {
		s += " " + e.Path
	}
	msg := e.Err.Error()
	if len(msg) > 4 && msg[:4] == "zk: " {
		msg = msg[4:]
	}
	s += ": " + msg
	if e.Err == ErrUnknownCode {
		s += fmt.Sprintf(" %d", int32(e.Code))
	}
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// As lets errors.As find a target in Cause.
func (e *Error) As(target any) bool {
	return e.Cause != nil && errors.As(e.Cause, target)
}

// Is reports whether target is e's sentinel, or an *Error with the same
// code (or the same sentinel, for code-less errors).
func (e *Error) Is(target error) bool {
	if target == e.Err {
		return true
	}
	if e.Cause != nil && errors.Is(e.Cause, target) {
		return true
	}
	if t, ok := target.(*Error); ok {
		if t.Code != proto.ErrOk || e.Code != proto.ErrOk {
			return t.Code == e.Code
		}
		return t.Err == e.Err
	}
	return false
}

// newError builds the *Error for a code.
func newError(code proto.ErrCode, op, path string) *Error {
	return &Error{Code: code, Op: op, Path: path, Err: CodeError(code)}
}

// wrapErr attaches op and path to an error coming out of the connection
// machinery: an *Error without op is completed, sentinels are wrapped,
// context errors are returned as they are.
func wrapErr(err error, op, path string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Op == "" {
			c := *e
			c.Op, c.Path = op, path
			return &c
		}
		return err
	}
	if code, ok := sentinelCodes[err]; ok {
		return newError(code, op, path)
	}
	if err == ErrClosing || err == ErrInvalidPath || err == ErrProtocol {
		return &Error{Op: op, Path: path, Err: err}
	}
	return err
}

// IsRetryable reports whether an operation that failed with err may be
// retried on the same Conn: connection loss, operation timeout, session
// moved and throttling (Curator's RetryLoop.shouldRetry, plus throttling).
// The operation may or may not have been applied.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrConnectionLoss) || errors.Is(err, ErrOperationTimeout) ||
		errors.Is(err, ErrSessionMoved) || errors.Is(err, ErrThrottled)
}
