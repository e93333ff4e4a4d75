package zkdata

import (
	"errors"
	"fmt"
)

// Errors, grouped by when they happen. Every error ReadDir, ReadSnapshot
// and ReadSnapshotFile return for bad input wraps one of the first group
// (test with errors.Is); a *FormatError carries the file and offset.
var (
	// ErrNoSnapshot: the directory holds no snapshot that reads to the end
	// (none at all, or every candidate failed; the failures are joined to
	// the error).
	ErrNoSnapshot = errors.New("zkdata: no valid snapshot")
	// ErrBadSnapshot: a snapshot file does not follow the format (bad
	// magic or version, a checksum seal that does not match, a bad path or
	// ACL reference, input that ends early).
	ErrBadSnapshot = errors.New("zkdata: bad snapshot")
	// ErrBadLog: a transaction log holds a record whose checksum does not
	// match, a length no writer produces, or a transaction that does not
	// decode. A torn tail (a last record cut short, or zero padding) is
	// not an error: it ends the log, as in ZooKeeper.
	ErrBadLog = errors.New("zkdata: bad transaction log")
	// ErrLimit: a length or count is over a ReadOptions limit. Errors
	// wrapping it also wrap ErrBadSnapshot or ErrBadLog.
	ErrLimit = errors.New("zkdata: over a limit")
)

// Errors from the image itself, when it is turned into a zkgo tree or
// written.
var (
	// ErrUnsupported: the image holds something zkgo's tree cannot hold
	// (a path zkgo refuses, a node under an ephemeral).
	ErrUnsupported = errors.New("zkdata: not representable")
)

// FormatError describes bad input: which file (its name inside the data
// directory, or "" for a bare stream), the byte offset where the bad part
// starts (in the uncompressed stream for a compressed snapshot), and what is
// wrong. It wraps ErrBadSnapshot or ErrBadLog, and ErrLimit when a limit
// was hit.
type FormatError struct {
	File   string
	Offset int64
	Msg    string
	kind   error // ErrBadSnapshot or ErrBadLog
	limit  bool
}

func (e *FormatError) Error() string {
	f := e.File
	if f == "" {
		f = "stream"
	}
	return fmt.Sprintf("%v: %s: offset %d: %s", e.kind, f, e.Offset, e.Msg)
}

// Unwrap returns the sentinels the error stands for.
func (e *FormatError) Unwrap() []error {
	if e.limit {
		return []error{e.kind, ErrLimit}
	}
	return []error{e.kind}
}
