package proto

import "github.com/zkgo/zkgo/jute"

// This file holds the request headers and request bodies a client sends
// after the connect handshake. Layouts follow zookeeper.jute (ZooKeeper 3.8),
// field for field. Decoders do not validate enum fields (create modes, watcher
// types, ...): ZooKeeper rejects bad values when it processes the request, with
// a proper error code, not while unmarshalling it.

// RequestHeader precedes every request body (RequestHeader in
// zookeeper.jute). Xid is the client's sequence number, or one of the special
// Xid* values.
type RequestHeader struct {
	Xid  int32
	Type OpCode
}

// RequestHeaderSize is the encoded size of a RequestHeader.
const RequestHeaderSize = 4 + 4

// Encode implements Record.
func (r *RequestHeader) Encode(e *jute.Encoder) {
	e.WriteInt(r.Xid)
	e.WriteInt(int32(r.Type))
}

// Decode implements Record.
func (r *RequestHeader) Decode(d *jute.Decoder) {
	r.Xid = d.ReadInt()
	r.Type = OpCode(d.ReadInt())
}

// AuthPacket is the body of an OpAuth request (addAuthInfo). Type is unused
// by ZooKeeper and always 0.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Encode implements Record.
func (r *AuthPacket) Encode(e *jute.Encoder) {
	e.WriteInt(r.Type)
	e.WriteString(r.Scheme)
	e.WriteBuffer(r.Auth)
}

// Decode implements Record.
func (r *AuthPacket) Decode(d *jute.Decoder) {
	r.Type = d.ReadInt()
	r.Scheme = d.ReadString()
	r.Auth = d.ReadBuffer()
}

// SetWatches is the body of an OpSetWatches request, sent by a client after
// reconnecting to re-register its watches. RelativeZxid is the last zxid the
// client has seen; the server fires watches for changes made after it.
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode implements Record.
func (r *SetWatches) Encode(e *jute.Encoder) {
	e.WriteLong(r.RelativeZxid)
	EncodeStrings(e, r.DataWatches)
	EncodeStrings(e, r.ExistWatches)
	EncodeStrings(e, r.ChildWatches)
}

// Decode implements Record.
func (r *SetWatches) Decode(d *jute.Decoder) {
	r.RelativeZxid = d.ReadLong()
	r.DataWatches = DecodeStrings(d)
	r.ExistWatches = DecodeStrings(d)
	r.ChildWatches = DecodeStrings(d)
}

// SetWatches2 is the body of an OpSetWatches2 request: SetWatches plus the
// persistent and persistent-recursive watches added by addWatch.
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode implements Record.
func (r *SetWatches2) Encode(e *jute.Encoder) {
	e.WriteLong(r.RelativeZxid)
	EncodeStrings(e, r.DataWatches)
	EncodeStrings(e, r.ExistWatches)
	EncodeStrings(e, r.ChildWatches)
	EncodeStrings(e, r.PersistentWatches)
	EncodeStrings(e, r.PersistentRecursiveWatches)
}

// Decode implements Record.
func (r *SetWatches2) Decode(d *jute.Decoder) {
	r.RelativeZxid = d.ReadLong()
	r.DataWatches = DecodeStrings(d)
	r.ExistWatches = DecodeStrings(d)
	r.ChildWatches = DecodeStrings(d)
	r.PersistentWatches = DecodeStrings(d)
	r.PersistentRecursiveWatches = DecodeStrings(d)
}

// CreateRequest is the body of OpCreate, OpCreate2 and OpCreateContainer
// requests, and of the same sub-operations of a multi.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags CreateMode
}

// Encode implements Record.
func (r *CreateRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.WriteInt(int32(r.Flags))
}

// Decode implements Record.
func (r *CreateRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.ACL = DecodeACLs(d)
	r.Flags = CreateMode(d.ReadInt())
}

// CreateTTLRequest is the body of an OpCreateTTL request (and multi
// sub-operation): a create with a time-to-live in milliseconds.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags CreateMode
	TTL   int64
}

// Encode implements Record.
func (r *CreateTTLRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.WriteInt(int32(r.Flags))
	e.WriteLong(r.TTL)
}

// Decode implements Record.
func (r *CreateTTLRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.ACL = DecodeACLs(d)
	r.Flags = CreateMode(d.ReadInt())
	r.TTL = d.ReadLong()
}

// DeleteRequest is the body of an OpDelete request. Version -1 matches any
// version.
type DeleteRequest struct {
	Path    string
	Version int32
}

// Encode implements Record.
func (r *DeleteRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Version)
}

// Decode implements Record.
func (r *DeleteRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Version = d.ReadInt()
}

// ExistsRequest is the body of an OpExists request.
type ExistsRequest struct {
	Path  string
	Watch bool
}

// Encode implements Record.
func (r *ExistsRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode implements Record.
func (r *ExistsRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
}

// GetDataRequest is the body of an OpGetData request.
type GetDataRequest struct {
	Path  string
	Watch bool
}

// Encode implements Record.
func (r *GetDataRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode implements Record.
func (r *GetDataRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
}

// SetDataRequest is the body of an OpSetData request. Version -1 matches any
// version.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode implements Record.
func (r *SetDataRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteBuffer(r.Data)
	e.WriteInt(r.Version)
}

// Decode implements Record.
func (r *SetDataRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Data = d.ReadBuffer()
	r.Version = d.ReadInt()
}

// GetACLRequest is the body of an OpGetACL request.
type GetACLRequest struct {
	Path string
}

// Encode implements Record.
func (r *GetACLRequest) Encode(e *jute.Encoder) { e.WriteString(r.Path) }

// Decode implements Record.
func (r *GetACLRequest) Decode(d *jute.Decoder) { r.Path = d.ReadString() }

// SetACLRequest is the body of an OpSetACL request. Version is the expected
// ACL version (aversion), -1 for any.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// Encode implements Record.
func (r *SetACLRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	EncodeACLs(e, r.ACL)
	e.WriteInt(r.Version)
}

// Decode implements Record.
func (r *SetACLRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.ACL = DecodeACLs(d)
	r.Version = d.ReadInt()
}

// GetChildrenRequest is the body of an OpGetChildren request.
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// Encode implements Record.
func (r *GetChildrenRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode implements Record.
func (r *GetChildrenRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
}

// GetChildren2Request is the body of an OpGetChildren2 request (children plus
// the parent's Stat).
type GetChildren2Request struct {
	Path  string
	Watch bool
}

// Encode implements Record.
func (r *GetChildren2Request) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteBool(r.Watch)
}

// Decode implements Record.
func (r *GetChildren2Request) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Watch = d.ReadBool()
}

// SyncRequest is the body of an OpSync request.
type SyncRequest struct {
	Path string
}

// Encode implements Record.
func (r *SyncRequest) Encode(e *jute.Encoder) { e.WriteString(r.Path) }

// Decode implements Record.
func (r *SyncRequest) Decode(d *jute.Decoder) { r.Path = d.ReadString() }

// CheckVersionRequest is the body of an OpCheck multi sub-operation: the
// multi fails unless Path's version is Version (-1 matches any version).
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Encode implements Record.
func (r *CheckVersionRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(r.Version)
}

// Decode implements Record.
func (r *CheckVersionRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Version = d.ReadInt()
}

// ReconfigRequest is the body of an OpReconfig request. JoiningServers and
// LeavingServers are comma-separated server lists for an incremental
// reconfiguration; NewMembers is the full member list of a non-incremental
// one. CurConfigID is the expected current config version, -1 for any.
//
// ZooKeeper distinguishes a null string (field not given) from a present one
// here. zkgo represents "not given" as the empty string: an empty string is
// encoded as null (length -1), and null decodes as "". ZooKeeper itself
// rejects an empty-but-present server list, so nothing meaningful is lost.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

// Encode implements Record.
func (r *ReconfigRequest) Encode(e *jute.Encoder) {
	writeOptString(e, r.JoiningServers)
	writeOptString(e, r.LeavingServers)
	writeOptString(e, r.NewMembers)
	e.WriteLong(r.CurConfigID)
}

// Decode implements Record.
func (r *ReconfigRequest) Decode(d *jute.Decoder) {
	r.JoiningServers = d.ReadString()
	r.LeavingServers = d.ReadString()
	r.NewMembers = d.ReadString()
	r.CurConfigID = d.ReadLong()
}

// writeOptString writes "" as a null string and anything else as a string.
func writeOptString(e *jute.Encoder, s string) {
	if s == "" {
		e.WriteInt(-1)
		return
	}
	e.WriteString(s)
}

// CheckWatchesRequest is the body of an OpCheckWatches request.
type CheckWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode implements Record.
func (r *CheckWatchesRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(int32(r.Type))
}

// Decode implements Record.
func (r *CheckWatchesRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Type = WatcherType(d.ReadInt())
}

// RemoveWatchesRequest is the body of an OpRemoveWatches request.
type RemoveWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode implements Record.
func (r *RemoveWatchesRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(int32(r.Type))
}

// Decode implements Record.
func (r *RemoveWatchesRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Type = WatcherType(d.ReadInt())
}

// AddWatchRequest is the body of an OpAddWatch request.
type AddWatchRequest struct {
	Path string
	Mode AddWatchMode
}

// Encode implements Record.
func (r *AddWatchRequest) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	e.WriteInt(int32(r.Mode))
}

// Decode implements Record.
func (r *AddWatchRequest) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Mode = AddWatchMode(d.ReadInt())
}

// GetEphemeralsRequest is the body of an OpGetEphemerals request. An empty
// or "/" prefix selects all of the session's ephemeral nodes.
type GetEphemeralsRequest struct {
	PrefixPath string
}

// Encode implements Record.
func (r *GetEphemeralsRequest) Encode(e *jute.Encoder) { e.WriteString(r.PrefixPath) }

// Decode implements Record.
func (r *GetEphemeralsRequest) Decode(d *jute.Decoder) { r.PrefixPath = d.ReadString() }

// GetAllChildrenNumberRequest is the body of an OpGetAllChildrenNumber
// request.
type GetAllChildrenNumberRequest struct {
	Path string
}

// Encode implements Record.
func (r *GetAllChildrenNumberRequest) Encode(e *jute.Encoder) { e.WriteString(r.Path) }

// Decode implements Record.
func (r *GetAllChildrenNumberRequest) Decode(d *jute.Decoder) { r.Path = d.ReadString() }

// GetSASLRequest is the body of an OpSasl request: the client's next SASL
// token. (Despite the name, it is what clients send; the server answers with
// SetSASLResponse.)
type GetSASLRequest struct {
	Token []byte
}

// Encode implements Record.
func (r *GetSASLRequest) Encode(e *jute.Encoder) { e.WriteBuffer(r.Token) }

// Decode implements Record.
func (r *GetSASLRequest) Decode(d *jute.Decoder) { r.Token = d.ReadBuffer() }

// SetSASLRequest is defined by zookeeper.jute but not sent by ZooKeeper 3.8
// clients; it is kept for completeness.
type SetSASLRequest struct {
	Token []byte
}

// Encode implements Record.
func (r *SetSASLRequest) Encode(e *jute.Encoder) { e.WriteBuffer(r.Token) }

// Decode implements Record.
func (r *SetSASLRequest) Decode(d *jute.Decoder) { r.Token = d.ReadBuffer() }
