package proto

import "github.com/zkgo/zkgo/jute"

// This file holds the reply header, the response bodies the server sends
// after it, and the watcher event carried by notifications. Layouts follow
// zookeeper.jute (ZooKeeper 3.8).

// ReplyHeader precedes every response body (ReplyHeader in zookeeper.jute).
// Xid echoes the request's xid (or is one of the special Xid* values), Zxid is
// the last zxid the server has committed, and Err is the result of the
// request. When Err is not ErrOk, clients ignore any body that follows.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  ErrCode
}

// ReplyHeaderSize is the encoded size of a ReplyHeader.
const ReplyHeaderSize = 4 + 8 + 4

// Encode implements Record.
func (r *ReplyHeader) Encode(e *jute.Encoder) {
	e.WriteInt(r.Xid)
	e.WriteLong(r.Zxid)
	e.WriteInt(int32(r.Err))
}

// Decode implements Record.
func (r *ReplyHeader) Decode(d *jute.Decoder) {
	r.Xid = d.ReadInt()
	r.Zxid = d.ReadLong()
	r.Err = ErrCode(d.ReadInt())
}

// CreateResponse is the body of a reply to OpCreate.
type CreateResponse struct {
	Path string // the created path, with the sequence suffix if any
}

// Encode implements Record.
func (r *CreateResponse) Encode(e *jute.Encoder) { e.WriteString(r.Path) }

// Decode implements Record.
func (r *CreateResponse) Decode(d *jute.Decoder) { r.Path = d.ReadString() }

// Create2Response is the body of a reply to OpCreate2, OpCreateContainer and
// OpCreateTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode implements Record.
func (r *Create2Response) Encode(e *jute.Encoder) {
	e.WriteString(r.Path)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *Create2Response) Decode(d *jute.Decoder) {
	r.Path = d.ReadString()
	r.Stat.Decode(d)
}

// ExistsResponse is the body of a successful reply to OpExists. (A missing
// node is reported as ErrNoNode in the reply header, with no body.)
type ExistsResponse struct {
	Stat Stat
}

// Encode implements Record.
func (r *ExistsResponse) Encode(e *jute.Encoder) { r.Stat.Encode(e) }

// Decode implements Record.
func (r *ExistsResponse) Decode(d *jute.Decoder) { r.Stat.Decode(d) }

// GetDataResponse is the body of a reply to OpGetData, and of a reply to
// OpReconfig (where Data is the new configuration).
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode implements Record.
func (r *GetDataResponse) Encode(e *jute.Encoder) {
	e.WriteBuffer(r.Data)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetDataResponse) Decode(d *jute.Decoder) {
	r.Data = d.ReadBuffer()
	r.Stat.Decode(d)
}

// SetDataResponse is the body of a reply to OpSetData.
type SetDataResponse struct {
	Stat Stat
}

// Encode implements Record.
func (r *SetDataResponse) Encode(e *jute.Encoder) { r.Stat.Encode(e) }

// Decode implements Record.
func (r *SetDataResponse) Decode(d *jute.Decoder) { r.Stat.Decode(d) }

// GetACLResponse is the body of a reply to OpGetACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode implements Record.
func (r *GetACLResponse) Encode(e *jute.Encoder) {
	EncodeACLs(e, r.ACL)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetACLResponse) Decode(d *jute.Decoder) {
	r.ACL = DecodeACLs(d)
	r.Stat.Decode(d)
}

// SetACLResponse is the body of a reply to OpSetACL.
type SetACLResponse struct {
	Stat Stat
}

// Encode implements Record.
func (r *SetACLResponse) Encode(e *jute.Encoder) { r.Stat.Encode(e) }

// Decode implements Record.
func (r *SetACLResponse) Decode(d *jute.Decoder) { r.Stat.Decode(d) }

// GetChildrenResponse is the body of a reply to OpGetChildren. Children are
// names relative to the parent, in no particular order.
type GetChildrenResponse struct {
	Children []string
}

// Encode implements Record.
func (r *GetChildrenResponse) Encode(e *jute.Encoder) { EncodeStrings(e, r.Children) }

// Decode implements Record.
func (r *GetChildrenResponse) Decode(d *jute.Decoder) { r.Children = DecodeStrings(d) }

// GetChildren2Response is the body of a reply to OpGetChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode implements Record.
func (r *GetChildren2Response) Encode(e *jute.Encoder) {
	EncodeStrings(e, r.Children)
	r.Stat.Encode(e)
}

// Decode implements Record.
func (r *GetChildren2Response) Decode(d *jute.Decoder) {
	r.Children = DecodeStrings(d)
	r.Stat.Decode(d)
}

// SyncResponse is the body of a reply to OpSync.
type SyncResponse struct {
	Path string
}

// Encode implements Record.
func (r *SyncResponse) Encode(e *jute.Encoder) { e.WriteString(r.Path) }

// Decode implements Record.
func (r *SyncResponse) Decode(d *jute.Decoder) { r.Path = d.ReadString() }

// GetEphemeralsResponse is the body of a reply to OpGetEphemerals: absolute
// paths of the session's ephemeral nodes.
type GetEphemeralsResponse struct {
	Ephemerals []string
}

// Encode implements Record.
func (r *GetEphemeralsResponse) Encode(e *jute.Encoder) { EncodeStrings(e, r.Ephemerals) }

// Decode implements Record.
func (r *GetEphemeralsResponse) Decode(d *jute.Decoder) { r.Ephemerals = DecodeStrings(d) }

// GetAllChildrenNumberResponse is the body of a reply to
// OpGetAllChildrenNumber: the number of descendants of the path.
type GetAllChildrenNumberResponse struct {
	TotalNumber int32
}

// Encode implements Record.
func (r *GetAllChildrenNumberResponse) Encode(e *jute.Encoder) { e.WriteInt(r.TotalNumber) }

// Decode implements Record.
func (r *GetAllChildrenNumberResponse) Decode(d *jute.Decoder) { r.TotalNumber = d.ReadInt() }

// ClientInfo is one identity of a session, as reported by whoAmI
// (org.apache.zookeeper.data.ClientInfo).
type ClientInfo struct {
	AuthScheme string
	User       string
}

// minClientInfoSize is the smallest encoding of a ClientInfo: two empty
// strings.
const minClientInfoSize = 4 + 4

// Encode implements Record.
func (r *ClientInfo) Encode(e *jute.Encoder) {
	e.WriteString(r.AuthScheme)
	e.WriteString(r.User)
}

// Decode implements Record.
func (r *ClientInfo) Decode(d *jute.Decoder) {
	r.AuthScheme = d.ReadString()
	r.User = d.ReadString()
}

// WhoAmIResponse is the body of a reply to OpWhoAmI.
type WhoAmIResponse struct {
	ClientInfo []ClientInfo // nil encodes as a null vector
}

// Encode implements Record.
func (r *WhoAmIResponse) Encode(e *jute.Encoder) {
	if r.ClientInfo == nil {
		e.WriteVectorLen(-1)
		return
	}
	e.WriteVectorLen(len(r.ClientInfo))
	for i := range r.ClientInfo {
		r.ClientInfo[i].Encode(e)
	}
}

// Decode implements Record.
func (r *WhoAmIResponse) Decode(d *jute.Decoder) {
	r.ClientInfo = nil
	n := d.ReadVectorLen(minClientInfoSize)
	if n < 0 || d.Err() != nil {
		return
	}
	infos := make([]ClientInfo, n)
	for i := range infos {
		infos[i].Decode(d)
	}
	r.ClientInfo = infos
}

// SetSASLResponse is the body of a reply to OpSasl: the server's next SASL
// token.
type SetSASLResponse struct {
	Token []byte
}

// Encode implements Record.
func (r *SetSASLResponse) Encode(e *jute.Encoder) { e.WriteBuffer(r.Token) }

// Decode implements Record.
func (r *SetSASLResponse) Decode(d *jute.Decoder) { r.Token = d.ReadBuffer() }

// ErrorResponse carries a bare error code. It is the body of an error result
// inside a multi response, and ZooKeeper 3.8 also sends ErrorResponse{0} as
// the body of a successful reply to OpAddWatch.
type ErrorResponse struct {
	Err ErrCode
}

// Encode implements Record.
func (r *ErrorResponse) Encode(e *jute.Encoder) { e.WriteInt(int32(r.Err)) }

// Decode implements Record.
func (r *ErrorResponse) Decode(d *jute.Decoder) { r.Err = ErrCode(d.ReadInt()) }

// WatcherEvent is the body of a notification (a reply with xid
// XidNotification): a watch fired on Path, or a connection state change when
// Type is EventNone.
type WatcherEvent struct {
	Type  EventType
	State KeeperState
	Path  string
}

// Encode implements Record.
func (r *WatcherEvent) Encode(e *jute.Encoder) {
	e.WriteInt(int32(r.Type))
	e.WriteInt(int32(r.State))
	e.WriteString(r.Path)
}

// Decode implements Record.
func (r *WatcherEvent) Decode(d *jute.Decoder) {
	r.Type = EventType(d.ReadInt())
	r.State = KeeperState(d.ReadInt())
	r.Path = d.ReadString()
}
