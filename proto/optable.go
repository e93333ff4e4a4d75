package proto

import "github.com/zkgo/zkgo/jute"

// OpKind says which part of a server handles a request of an opcode.
type OpKind uint8

const (
	// KindNone: not a request (notifications, the error marker).
	KindNone OpKind = iota
	// KindRead: answered from the local tree, after the session's earlier
	// writes (a read handler in the server).
	KindRead
	// KindWrite: a transaction through the log, applied to the tree by
	// every member (an apply handler in the tree, a reply in the server).
	KindWrite
	// KindBarrier: through the log without changing anything (sync).
	KindBarrier
	// KindConnection: handled by the connection itself (auth, sasl).
	KindConnection
	// KindMembership: ensemble reconfiguration.
	KindMembership
	// KindInternal: a transaction only the server proposes (createSession
	// from the handshake, deleteContainer from the sweep); refused from
	// clients.
	KindInternal
)

// OpInfo is what zkgo knows of one opcode. The table (Ops) is the one
// place an opcode is described; the request decoder, the server's
// dispatch, replies and statistics, and the log's transaction decoder all
// read it, and tests check that every opcode of a kind has its handler.
type OpInfo struct {
	Code OpCode
	// Name is ZooKeeper's name of the operation (Request.op2String), as
	// in logs and metrics: "create", "getData", "closeSession".
	Name string
	// Abbrev is the abbreviation the cons four-letter word shows for the
	// last operation ("CREA", "GETD").
	Abbrev string
	Kind   OpKind
	// Request makes a fresh zero request body record; nil when the
	// request has no body or is not a client request.
	Request func() Record
	// Response makes a fresh zero body record of a successful reply; nil
	// when the reply has no body.
	Response func() Record
	// Txn makes the body record of the op's log transaction (KindWrite
	// and KindInternal; nil for a transaction without a body).
	Txn func() Record
}

// Logged reports whether requests of the op become log transactions.
func (o *OpInfo) Logged() bool { return o.Kind == KindWrite || o.Kind == KindInternal }

func mk[T any, P interface {
	*T
	Record
}]() func() Record {
	return func() Record { return P(new(T)) }
}

// opTable lists every opcode of ZooKeeper 3.8 that zkgo knows.
var opTable = []OpInfo{
	{Code: OpNotification, Name: "notification", Abbrev: "NA", Kind: KindNone, Response: mk[WatcherEvent]()},
	{Code: OpError, Name: "error", Abbrev: "NA", Kind: KindNone},

	{Code: OpCreate, Name: "create", Abbrev: "CREA", Kind: KindWrite, Request: mk[CreateRequest](), Response: mk[CreateResponse](), Txn: mk[CreateRequest]()},
	{Code: OpCreate2, Name: "create2", Abbrev: "CREA", Kind: KindWrite, Request: mk[CreateRequest](), Response: mk[Create2Response](), Txn: mk[CreateRequest]()},
	{Code: OpCreateContainer, Name: "createContainer", Abbrev: "CREA", Kind: KindWrite, Request: mk[CreateRequest](), Response: mk[Create2Response](), Txn: mk[CreateRequest]()},
	{Code: OpCreateTTL, Name: "createTtl", Abbrev: "CREA", Kind: KindWrite, Request: mk[CreateTTLRequest](), Response: mk[Create2Response](), Txn: mk[CreateTTLRequest]()},
	{Code: OpDelete, Name: "delete", Abbrev: "DELE", Kind: KindWrite, Request: mk[DeleteRequest](), Txn: mk[DeleteRequest]()},
	{Code: OpSetData, Name: "setData", Abbrev: "SETD", Kind: KindWrite, Request: mk[SetDataRequest](), Response: mk[SetDataResponse](), Txn: mk[SetDataRequest]()},
	{Code: OpSetACL, Name: "setACL", Abbrev: "SETA", Kind: KindWrite, Request: mk[SetACLRequest](), Response: mk[SetACLResponse](), Txn: mk[SetACLRequest]()},
	{Code: OpCheck, Name: "check", Abbrev: "CHEC", Kind: KindWrite, Request: mk[CheckVersionRequest](), Txn: mk[CheckVersionRequest]()},
	{Code: OpMulti, Name: "multi", Abbrev: "MULT", Kind: KindWrite, Request: mk[MultiRequest](), Response: mk[MultiResponse](), Txn: mk[MultiRequest]()},
	{Code: OpCloseSession, Name: "closeSession", Abbrev: "CLOS", Kind: KindWrite},

	{Code: OpSync, Name: "sync", Abbrev: "SYNC", Kind: KindBarrier, Request: mk[SyncRequest](), Response: mk[SyncResponse]()},

	{Code: OpExists, Name: "exists", Abbrev: "EXIS", Kind: KindRead, Request: mk[ExistsRequest](), Response: mk[ExistsResponse]()},
	{Code: OpGetData, Name: "getData", Abbrev: "GETD", Kind: KindRead, Request: mk[GetDataRequest](), Response: mk[GetDataResponse]()},
	{Code: OpGetACL, Name: "getACL", Abbrev: "GETA", Kind: KindRead, Request: mk[GetACLRequest](), Response: mk[GetACLResponse]()},
	{Code: OpGetChildren, Name: "getChildren", Abbrev: "GETC", Kind: KindRead, Request: mk[GetChildrenRequest](), Response: mk[GetChildrenResponse]()},
	{Code: OpGetChildren2, Name: "getChildren2", Abbrev: "GETC", Kind: KindRead, Request: mk[GetChildren2Request](), Response: mk[GetChildren2Response]()},
	{Code: OpGetAllChildrenNumber, Name: "getAllChildrenNumber", Abbrev: "GETACN", Kind: KindRead, Request: mk[GetAllChildrenNumberRequest](), Response: mk[GetAllChildrenNumberResponse]()},
	{Code: OpGetEphemerals, Name: "getEphemerals", Abbrev: "GETE", Kind: KindRead, Request: mk[GetEphemeralsRequest](), Response: mk[GetEphemeralsResponse]()},
	{Code: OpMultiRead, Name: "multiRead", Abbrev: "MLTR", Kind: KindRead, Request: mk[MultiRequest](), Response: mk[MultiResponse]()},
	{Code: OpPing, Name: "ping", Abbrev: "PING", Kind: KindRead},
	{Code: OpWhoAmI, Name: "whoAmI", Abbrev: "HOMI", Kind: KindRead, Response: mk[WhoAmIResponse]()},
	{Code: OpCheckWatches, Name: "checkWatches", Abbrev: "CHKW", Kind: KindRead, Request: mk[CheckWatchesRequest]()},
	{Code: OpRemoveWatches, Name: "removeWatches", Abbrev: "REMW", Kind: KindRead, Request: mk[RemoveWatchesRequest]()},
	{Code: OpAddWatch, Name: "addWatch", Abbrev: "ADDW", Kind: KindRead, Request: mk[AddWatchRequest](), Response: mk[ErrorResponse]()},
	{Code: OpSetWatches, Name: "setWatches", Abbrev: "SETW", Kind: KindRead, Request: mk[SetWatches]()},
	{Code: OpSetWatches2, Name: "setWatches2", Abbrev: "STW2", Kind: KindRead, Request: mk[SetWatches2]()},

	{Code: OpAuth, Name: "auth", Abbrev: "NA", Kind: KindConnection, Request: mk[AuthPacket]()},
	{Code: OpSasl, Name: "sasl", Abbrev: "NA", Kind: KindConnection, Request: mk[GetSASLRequest](), Response: mk[SetSASLResponse]()},

	{Code: OpReconfig, Name: "reconfig", Abbrev: "NA", Kind: KindMembership, Request: mk[ReconfigRequest](), Response: mk[GetDataResponse]()},

	{Code: OpCreateSession, Name: "createSession", Abbrev: "SESS", Kind: KindInternal, Txn: mk[CreateSessionTxn]()},
	{Code: OpDeleteContainer, Name: "deleteContainer", Abbrev: "NA", Kind: KindInternal, Txn: mk[DeleteContainerTxn]()},
}

// Opcodes range over [opMin, opMax]; ops indexes the table by code.
const (
	opMin = -16
	opMax = 127
)

var ops = func() (idx [opMax - opMin + 1]*OpInfo) {
	for i := range opTable {
		o := &opTable[i]
		if o.Code < opMin || o.Code > opMax || idx[o.Code-opMin] != nil {
			panic("proto: opcode table: bad or duplicate code " + o.Code.String())
		}
		idx[o.Code-opMin] = o
	}
	return idx
}()

// Op returns what is known of op, or nil for an unknown opcode.
func Op(op OpCode) *OpInfo {
	if op < opMin || op > opMax {
		return nil
	}
	return ops[op-opMin]
}

// Ops returns every known opcode's entry (a copy of the table).
func Ops() []OpInfo { return append([]OpInfo(nil), opTable...) }

// CreateSessionTxn is the body of zkgo's createSession log transaction:
// the negotiated timeout and the session's password (so that every member
// can check it when the client resumes the session elsewhere).
type CreateSessionTxn struct {
	Timeout int32
	Passwd  []byte
}

// Encode implements Record.
func (r *CreateSessionTxn) Encode(e *jute.Encoder) {
	e.WriteInt(r.Timeout)
	e.WriteBuffer(r.Passwd)
}

// Decode implements Record.
func (r *CreateSessionTxn) Decode(d *jute.Decoder) {
	r.Timeout = d.ReadInt()
	r.Passwd = d.ReadBuffer()
}

// DeleteContainerTxn is the body of zkgo's deleteContainer log transaction,
// proposed by the server's container/TTL sweep.
type DeleteContainerTxn struct {
	Path string
}

// Encode implements Record.
func (r *DeleteContainerTxn) Encode(e *jute.Encoder) { e.WriteString(r.Path) }

// Decode implements Record.
func (r *DeleteContainerTxn) Decode(d *jute.Decoder) { r.Path = d.ReadString() }
