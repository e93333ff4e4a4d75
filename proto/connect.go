package proto

import (
	"strconv"

	"github.com/zkgo/zkgo/jute"
)

// The connect handshake is the first frame in each direction. Its records
// are not preceded by a RequestHeader or ReplyHeader.
//
// zookeeper.jute declares ConnectRequest and ConnectResponse without the
// readOnly flag; ZooKeeper appends it as a separate boolean after the record.
// Clients older than 3.4 neither send it nor understand it, so the server
// reads it only if bytes remain and, when the client did not send it, does
// not send it back. Both records here model the flag as an optional trailing
// byte: HasReadOnly records whether it is (or is to be) present.

// PasswdLen is the length of the session password servers issue.
const PasswdLen = 16

// ConnectRequest is the first frame a client sends: a request for a new
// session (SessionID 0) or to resume an existing one.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64 // the last zxid the client has seen; a server behind it refuses the client
	TimeOut         int32 // requested session timeout, ms
	SessionID       int64 // 0 for a new session
	Passwd          []byte
	// ReadOnly asks for a session that may be served by a read-only server.
	ReadOnly bool
	// HasReadOnly reports whether the trailing readOnly byte was present on
	// decode. Encode writes the byte when HasReadOnly or ReadOnly is set,
	// so set HasReadOnly to send the modern (3.4+) form with ReadOnly false.
	HasReadOnly bool
}

// Encode implements Record.
func (r *ConnectRequest) Encode(e *jute.Encoder) {
	e.WriteInt(r.ProtocolVersion)
	e.WriteLong(r.LastZxidSeen)
	e.WriteInt(r.TimeOut)
	e.WriteLong(r.SessionID)
	e.WriteBuffer(r.Passwd)
	if r.HasReadOnly || r.ReadOnly {
		e.WriteBool(r.ReadOnly)
	}
}

// Decode implements Record. The readOnly byte is read only if input remains
// after the password; bytes after it are left for the caller (see
// jute.Decoder.Finish).
func (r *ConnectRequest) Decode(d *jute.Decoder) {
	r.ProtocolVersion = d.ReadInt()
	r.LastZxidSeen = d.ReadLong()
	r.TimeOut = d.ReadInt()
	r.SessionID = d.ReadLong()
	r.Passwd = d.ReadBuffer()
	r.ReadOnly, r.HasReadOnly = readOptionalBool(d)
}

// ConnectResponse is the server's answer to a ConnectRequest. A TimeOut of 0
// (with SessionID 0) tells the client its session has expired.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32 // negotiated session timeout, ms
	SessionID       int64
	Passwd          []byte
	// ReadOnly reports that the server is in read-only mode.
	ReadOnly bool
	// HasReadOnly reports whether the trailing readOnly byte was present on
	// decode. Encode writes the byte when HasReadOnly or ReadOnly is set; a
	// server sets HasReadOnly exactly when the client's ConnectRequest had it.
	HasReadOnly bool
}

// Encode implements Record.
func (r *ConnectResponse) Encode(e *jute.Encoder) {
	e.WriteInt(r.ProtocolVersion)
	e.WriteInt(r.TimeOut)
	e.WriteLong(r.SessionID)
	e.WriteBuffer(r.Passwd)
	if r.HasReadOnly || r.ReadOnly {
		e.WriteBool(r.ReadOnly)
	}
}

// Decode implements Record. As for ConnectRequest, the readOnly byte is
// optional.
func (r *ConnectResponse) Decode(d *jute.Decoder) {
	r.ProtocolVersion = d.ReadInt()
	r.TimeOut = d.ReadInt()
	r.SessionID = d.ReadLong()
	r.Passwd = d.ReadBuffer()
	r.ReadOnly, r.HasReadOnly = readOptionalBool(d)
}

// readOptionalBool reads a trailing boolean if the decoder is error-free and
// input remains; present reports whether it did.
func readOptionalBool(d *jute.Decoder) (v, present bool) {
	if d.Err() != nil || d.Remaining() == 0 {
		return false, false
	}
	return d.ReadBool(), true
}

// SessionIDHex formats a session id as ZooKeeper prints it everywhere
// (ServerCnxn.getSessionIdHex): "0x" and the id in lower-case hex without
// leading zeros, as an unsigned number.
func SessionIDHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }
