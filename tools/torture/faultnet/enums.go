package faultnet

//go:generate go run golang.org/x/tools/cmd/stringer@v0.30.0 -type=streamMode,unitKind,closeReason -output=enums_string.go

// streamMode is how one direction of a proxied connection cuts its bytes
// into units (split.go).
type streamMode int32

const (
	// modeUndecided: the dialer's first bytes are held until they either
	// form a raft hello or cannot start one.
	modeUndecided streamMode = iota
	// modeFrames: a raft message stream; every unit is one whole frame
	// (4-byte big-endian length and payload).
	modeFrames
	// modeOpaque: anything else; every unit is one read chunk, and frame
	// faults do not apply.
	modeOpaque
)

// unitKind is what one unit on a direction's delivery queue stands for.
type unitKind int32

const (
	// unitChunk is bytes of an opaque stream (or a stream's tail that
	// never formed a whole frame).
	unitChunk unitKind = iota
	// unitFrame is one whole raft frame, header included.
	unitFrame
	// unitEOF is the source's orderly end (FIN): it becomes a half-close
	// of the destination.
	unitEOF
	// unitReset is the source's failure (a reset or any read error other
	// than EOF): it becomes a reset of the whole connection.
	unitReset
)

// closeReason says why the proxy closed a connection (for logs).
type closeReason int32

const (
	// closeEOF: both directions ended in order.
	closeEOF closeReason = iota
	// closePeerReset: one side reset its connection, or a read or write
	// failed; the reset is passed on.
	closePeerReset
	// closeHealed: bytes were discarded by a partition that has been
	// healed; the stream has a gap and must not go on.
	closeHealed
	// closeResetConns: ResetConns named the connection's nodes.
	closeResetConns
	// closeNet: the Net was closed.
	closeNet
	// closeTargetDown: the listening member could not be dialed.
	closeTargetDown
)
