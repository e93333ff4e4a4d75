package tree

import (
	"errors"
	"fmt"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

// Txn is one transaction as it flows through the log: the client's request
// itself (not a pre-computed delta), with who sent it, with which
// credentials, and when. Apply decides everything else at the transaction's
// log position.
//
// Op is one of: OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL,
// OpDelete, OpSetData, OpSetACL, OpCheck, OpMulti, OpCreateSession,
// OpCloseSession, OpDeleteContainer. Req holds the matching request record:
// *proto.CreateRequest (create, create2, createContainer),
// *proto.CreateTTLRequest, *proto.DeleteRequest, *proto.SetDataRequest,
// *proto.SetACLRequest, *proto.CheckVersionRequest, *proto.MultiRequest,
// *CreateSessionReq, nil (closeSession) or *DeleteContainerReq.
type Txn struct {
	Op      proto.OpCode
	Session int64      // the requesting session; 0 for server-internal txns
	Time    int64      // proposer's wall clock, ms since the epoch
	Auth    []proto.Id // the session's authenticated ids when proposed
	Req     proto.Record
	// Claim is the log position of the claim on the session that the
	// proposing connection holds (the createSession's zxid, or the index
	// of the session move that resumed it there); 0: not checked.
	// Apply refuses the transaction with SessionMoved when the session
	// has a newer claim: the client resumed its session elsewhere after
	// this was proposed (a proposal held up in a paused or cut-off
	// member), as ZooKeeper's leader refuses a request from a server
	// that no longer owns the session. It is carried by the log entry
	// around the encoding below, which does not include it.
	Claim int64
}

// CreateSessionReq is the body of a createSession transaction.
type CreateSessionReq = proto.CreateSessionTxn

// DeleteContainerReq is the body of a deleteContainer transaction, proposed
// by the server's container/TTL sweep.
type DeleteContainerReq = proto.DeleteContainerTxn

// ErrBadTxn is returned by DecodeTxn for a transaction it cannot decode.
var ErrBadTxn = errors.New("tree: bad transaction")

// Encode appends the transaction's log encoding to e.
func (t *Txn) Encode(e *jute.Encoder) {
	e.WriteInt(int32(t.Op))
	e.WriteLong(t.Session)
	e.WriteLong(t.Time)
	e.WriteVectorLen(len(t.Auth))
	for i := range t.Auth {
		t.Auth[i].Encode(e)
	}
	if t.Req != nil {
		t.Req.Encode(e)
	}
}

// DecodeTxn decodes a transaction encoded by Txn.Encode.
func DecodeTxn(b []byte) (*Txn, error) { return decodeTxn(jute.NewDecoder(b)) }

// DecodeTxnSharing is DecodeTxn whose byte buffers (node data) alias b:
// the caller must not modify b while the Txn is in use. Apply copies data
// into its nodes, so the apply path saves a copy of every write's data.
func DecodeTxnSharing(b []byte) (*Txn, error) { return decodeTxn(jute.NewBufferAliasingDecoder(b)) }

func decodeTxn(d *jute.Decoder) (*Txn, error) {
	t := &Txn{Op: proto.OpCode(d.ReadInt()), Session: d.ReadLong(), Time: d.ReadLong()}
	n := d.ReadVectorLen(8)
	if n > 0 {
		t.Auth = make([]proto.Id, n)
		for i := range t.Auth {
			t.Auth[i].Decode(d)
		}
	}
	o := proto.Op(t.Op)
	if o == nil || !o.Logged() {
		return nil, fmt.Errorf("%w: op %d", ErrBadTxn, t.Op)
	}
	if o.Txn != nil {
		t.Req = o.Txn()
	}
	if t.Req != nil {
		t.Req.Decode(d)
	}
	if err := d.Finish(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTxn, err)
	}
	return t, nil
}
