package proto

import (
	"errors"
	"fmt"

	"github.com/zkgo/zkgo/jute"
)

// Multi requests and responses (OpMulti and OpMultiRead) are sequences of
// sub-records, each preceded by a MultiHeader, and terminated by the header
// {Type: -1, Done: true, Err: -1}. The number of sub-records is not on the
// wire: decoders stop at the first header whose Done flag is set, as
// ZooKeeper's MultiOperationRecord and MultiResponse do (they ignore the
// terminator's type and err). Every header is MultiHeaderSize bytes, so a
// decode loop over n bytes of input runs at most n/MultiHeaderSize times.

// Errors recorded in the decoder by multi decoding.
var (
	// ErrBadMultiOp means a multi header names an operation that may not
	// appear at that place.
	ErrBadMultiOp = errors.New("proto: invalid multi operation type")
	// ErrMixedMulti means a multi mixes write (transaction) operations with
	// read operations, which ZooKeeper refuses.
	ErrMixedMulti = errors.New("proto: multi mixes read and write operations")
)

// MultiHeader precedes each operation of a multi request and each result of
// a multi response (MultiHeader in zookeeper.jute).
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  ErrCode
}

// MultiHeaderSize is the encoded size of a MultiHeader.
const MultiHeaderSize = 4 + 1 + 4

// multiEnd is the header that terminates a multi request or response.
var multiEnd = MultiHeader{Type: OpError, Done: true, Err: -1}

// Encode implements Record.
func (r *MultiHeader) Encode(e *jute.Encoder) {
	e.WriteInt(int32(r.Type))
	e.WriteBool(r.Done)
	e.WriteInt(int32(r.Err))
}

// Decode implements Record.
func (r *MultiHeader) Decode(d *jute.Decoder) {
	r.Type = OpCode(d.ReadInt())
	r.Done = d.ReadBool()
	r.Err = ErrCode(d.ReadInt())
}

// multiKind classifies multi sub-operations.
type multiKind uint8

const (
	multiInvalid multiKind = iota
	multiTxn               // allowed in OpMulti
	multiRead              // allowed in OpMultiRead
)

func multiKindOf(op OpCode) multiKind {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck:
		return multiTxn
	case OpGetChildren, OpGetData:
		return multiRead
	}
	return multiInvalid
}

// IsMultiTxnOp reports whether op may appear in an OpMulti request: create,
// create2, createContainer, createTTL, delete, setData or check.
func IsMultiTxnOp(op OpCode) bool { return multiKindOf(op) == multiTxn }

// IsMultiReadOp reports whether op may appear in an OpMultiRead request:
// getChildren or getData.
func IsMultiReadOp(op OpCode) bool { return multiKindOf(op) == multiRead }

// NewMultiOpRequest returns a fresh zero request record for a multi
// sub-operation of type op, or nil if op may not appear in a multi. create,
// create2 and createContainer share CreateRequest; createTTL uses
// CreateTTLRequest; check uses CheckVersionRequest.
func NewMultiOpRequest(op OpCode) Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return new(CreateRequest)
	case OpCreateTTL:
		return new(CreateTTLRequest)
	case OpDelete:
		return new(DeleteRequest)
	case OpSetData:
		return new(SetDataRequest)
	case OpCheck:
		return new(CheckVersionRequest)
	case OpGetChildren:
		return new(GetChildrenRequest)
	case OpGetData:
		return new(GetDataRequest)
	}
	return nil
}

// multiOpMatches reports whether rec is the record type NewMultiOpRequest
// returns for op.
func multiOpMatches(op OpCode, rec Record) bool {
	switch rec.(type) {
	case *CreateRequest:
		return op == OpCreate || op == OpCreate2 || op == OpCreateContainer
	case *CreateTTLRequest:
		return op == OpCreateTTL
	case *DeleteRequest:
		return op == OpDelete
	case *SetDataRequest:
		return op == OpSetData
	case *CheckVersionRequest:
		return op == OpCheck
	case *GetChildrenRequest:
		return op == OpGetChildren
	case *GetDataRequest:
		return op == OpGetData
	}
	return false
}

// MultiOp is one operation of a multi request. Req must be the record type
// NewMultiOpRequest(Type) returns (for example *CreateRequest for OpCreate).
type MultiOp struct {
	Type OpCode
	Req  Record
}

// MultiRequest is the body of OpMulti and OpMultiRead requests
// (MultiOperationRecord in ZooKeeper). On the wire each op is
// MultiHeader{Type: op, Done: false, Err: -1} followed by the op's request
// record, and the list ends with MultiHeader{-1, true, -1}.
//
// Decode accepts the sub-operation types of both OpMulti and OpMultiRead but,
// like ZooKeeper, refuses a request that mixes the two kinds (ErrMixedMulti)
// and any other type (ErrBadMultiOp). The caller checks that the kind matches
// the request's opcode with IsRead. Decode allocates one record per op.
type MultiRequest struct {
	Ops []MultiOp
}

// Encode implements Record. Encode does not validate the ops (see Validate);
// an op with a nil Req is encoded with the zero record of its type.
func (r *MultiRequest) Encode(e *jute.Encoder) {
	for i := range r.Ops {
		op := &r.Ops[i]
		h := MultiHeader{Type: op.Type, Done: false, Err: -1}
		h.Encode(e)
		req := op.Req
		if req == nil {
			req = NewMultiOpRequest(op.Type)
		}
		if req != nil {
			req.Encode(e)
		}
	}
	end := multiEnd
	end.Encode(e)
}

// Decode implements Record. On error Ops is nil.
func (r *MultiRequest) Decode(d *jute.Decoder) {
	prev := len(r.Ops)
	ops := r.Ops[:0]
	if cap(ops) == 0 {
		ops = make([]MultiOp, 0, 8) // most multis are small: one allocation, not four
	}
	kind := multiInvalid
	var h MultiHeader
	for {
		h.Decode(d)
		if d.Err() != nil || h.Done {
			break
		}
		k := multiKindOf(h.Type)
		if k == multiInvalid {
			d.Fail(fmt.Errorf("%w: %d in multi request", ErrBadMultiOp, int32(h.Type)))
			break
		}
		if kind == multiInvalid {
			kind = k
		} else if k != kind {
			d.Fail(ErrMixedMulti)
			break
		}
		req := NewMultiOpRequest(h.Type)
		req.Decode(d)
		if d.Err() != nil {
			break
		}
		ops = append(ops, MultiOp{Type: h.Type, Req: req})
	}
	if len(ops) < prev {
		clear(ops[len(ops):prev]) // drop references to the previous records
	}
	if d.Err() != nil || len(ops) == 0 {
		clear(ops)
		ops = nil
	}
	r.Ops = ops
}

// IsRead reports whether r is a non-empty list of read operations, that is,
// the body of an OpMultiRead rather than an OpMulti request.
func (r *MultiRequest) IsRead() bool {
	if len(r.Ops) == 0 {
		return false
	}
	for i := range r.Ops {
		if multiKindOf(r.Ops[i].Type) != multiRead {
			return false
		}
	}
	return true
}

// Validate reports whether every op has a type allowed in a multi, a non-nil
// record of the matching type, and all ops are of one kind (all OpMulti ops or
// all OpMultiRead ops).
func (r *MultiRequest) Validate() error {
	kind := multiInvalid
	for i := range r.Ops {
		op := &r.Ops[i]
		k := multiKindOf(op.Type)
		if k == multiInvalid {
			return fmt.Errorf("%w: op %d has type %v", ErrBadMultiOp, i, op.Type)
		}
		if op.Req == nil || !multiOpMatches(op.Type, op.Req) {
			return fmt.Errorf("%w: op %d of type %v has record %T", ErrBadMultiOp, i, op.Type, op.Req)
		}
		if kind == multiInvalid {
			kind = k
		} else if k != kind {
			return ErrMixedMulti
		}
	}
	return nil
}

// MultiResult is the result of one operation of a multi. It is a flat value
// (no per-result allocation); which fields are meaningful depends on Type:
//
//	Type               body on the wire         fields
//	OpCreate           CreateResponse           Path
//	OpCreate2          Create2Response          Path, Stat
//	OpDelete, OpCheck  none                     -
//	OpSetData          SetDataResponse          Stat
//	OpGetData          GetDataResponse          Data, Stat   (multiRead only)
//	OpGetChildren      GetChildrenResponse      Children     (multiRead only)
//	OpError            ErrorResponse            Err
//
// Each result's header is MultiHeader{Type, Done: false, Err: e} where e is
// Err for OpError results and 0 otherwise.
//
// As in ZooKeeper 3.8 (FinalRequestProcessor, OpResult.CreateResult):
//   - the result of a create sub-op is OpCreate with the path only; the
//     results of createContainer and createTTL sub-ops are OpCreate2 with
//     path and stat. Which of these a create sub-op becomes is decided by
//     its flags, not its header type (MultiOperationRecord builds the op
//     from the flags), so a create2 sub-op with plain flags also answers
//     OpCreate with the path only. Encode writes OpCreateContainer and
//     OpCreateTTL results as OpCreate2 for convenience (and OpDeleteContainer
//     as OpDelete); Decode never returns them.
//   - a failed multi has only OpError results: ErrOk for the ops before the
//     failing one, the failure's code for it, and ErrRuntimeInconsistency for
//     the ops after it.
//   - a multiRead is not atomic: each failed read op yields an OpError result
//     with its own code, and the other ops their normal results.
//
// Encode writes a result of any other type as an OpError result with code Err
// (ErrMarshallingError if Err is ErrOk), so that the stream stays decodable.
type MultiResult struct {
	Type     OpCode
	Err      ErrCode
	Path     string
	Stat     Stat
	Data     []byte
	Children []string
}

// Encode implements Record.
func (r *MultiResult) Encode(e *jute.Encoder) {
	t, errc := r.Type, ErrOk
	switch t {
	case OpCreateContainer, OpCreateTTL:
		t = OpCreate2
	case OpDeleteContainer:
		t = OpDelete
	case OpCreate, OpCreate2, OpDelete, OpCheck, OpSetData, OpGetData, OpGetChildren:
	case OpError:
		errc = r.Err
	default:
		t, errc = OpError, r.Err
		if errc == ErrOk {
			errc = ErrMarshallingError
		}
	}
	h := MultiHeader{Type: t, Done: false, Err: errc}
	h.Encode(e)
	switch t {
	case OpCreate:
		e.WriteString(r.Path)
	case OpCreate2:
		e.WriteString(r.Path)
		r.Stat.Encode(e)
	case OpSetData:
		r.Stat.Encode(e)
	case OpGetData:
		e.WriteBuffer(r.Data)
		r.Stat.Encode(e)
	case OpGetChildren:
		EncodeStrings(e, r.Children)
	case OpError:
		e.WriteInt(int32(errc))
	}
}

// decodeBody reads the body that follows a result header of type t.
func (r *MultiResult) decodeBody(d *jute.Decoder, t OpCode) {
	r.Type = t
	switch t {
	case OpCreate:
		r.Path = d.ReadString()
	case OpCreate2:
		r.Path = d.ReadString()
		r.Stat.Decode(d)
	case OpDelete, OpCheck:
	case OpSetData:
		r.Stat.Decode(d)
	case OpGetData:
		r.Data = d.ReadBuffer()
		r.Stat.Decode(d)
	case OpGetChildren:
		r.Children = DecodeStrings(d)
	case OpError:
		// ZooKeeper takes the code from the body, not the header.
		r.Err = ErrCode(d.ReadInt())
	default:
		d.Fail(fmt.Errorf("%w: %d in multi response", ErrBadMultiOp, int32(t)))
	}
}

// Decode implements Record: it reads one header and the body that follows.
// A terminating header (Done set) is reported as ErrBadMultiOp; use
// MultiResponse to decode a whole list.
func (r *MultiResult) Decode(d *jute.Decoder) {
	var h MultiHeader
	h.Decode(d)
	if d.Err() != nil {
		return
	}
	if h.Done {
		d.Fail(fmt.Errorf("%w: unexpected end of multi response", ErrBadMultiOp))
		return
	}
	*r = MultiResult{}
	r.decodeBody(d, h.Type)
}

// MultiResponse is the body of a reply to OpMulti or OpMultiRead: one
// MultiResult per op, then MultiHeader{-1, true, -1}.
type MultiResponse struct {
	Results []MultiResult
}

// Encode implements Record.
func (r *MultiResponse) Encode(e *jute.Encoder) {
	for i := range r.Results {
		r.Results[i].Encode(e)
	}
	end := multiEnd
	end.Encode(e)
}

// Decode implements Record. It reuses the capacity of r.Results; results
// hold no pointers into earlier contents. On error Results is nil.
func (r *MultiResponse) Decode(d *jute.Decoder) {
	prev := len(r.Results)
	res := r.Results[:0]
	if cap(res) == 0 {
		res = make([]MultiResult, 0, 8)
	}
	var h MultiHeader
	for {
		h.Decode(d)
		if d.Err() != nil || h.Done {
			break
		}
		res = append(res, MultiResult{})
		res[len(res)-1].decodeBody(d, h.Type)
		if d.Err() != nil {
			break
		}
	}
	if len(res) < prev {
		clear(res[len(res):prev]) // drop references to the previous contents
	}
	if d.Err() != nil || len(res) == 0 {
		clear(res)
		res = nil
	}
	r.Results = res
}
