package zk

import (
	"context"

	"github.com/zkgo/zkgo/proto"
)

// Op is one operation of a Multi transaction; build it with CreateOp,
// DeleteOp, SetDataOp or CheckOp.
type Op struct {
	typ     OpCode // OpCreate, OpDelete, OpSetData or OpCheck
	path    string
	data    []byte
	acl     []ACL
	mode    CreateMode
	opts    []CreateOption
	version int32
}

// CreateOp creates a node (any mode, WithTTL for TTL modes).
func CreateOp(path string, data []byte, acl []ACL, mode CreateMode, opts ...CreateOption) Op {
	return Op{typ: OpCreate, path: path, data: data, acl: acl, mode: mode, opts: opts}
}

// DeleteOp deletes a node if its version matches (AnyVersion for any).
func DeleteOp(path string, version int32) Op {
	return Op{typ: OpDelete, path: path, version: version}
}

// SetDataOp sets a node's data if its version matches.
func SetDataOp(path string, data []byte, version int32) Op {
	return Op{typ: OpSetData, path: path, data: data, version: version}
}

// CheckOp fails the transaction unless the node's version matches
// (AnyVersion: unless the node exists).
func CheckOp(path string, version int32) Op {
	return Op{typ: OpCheck, path: path, version: version}
}

// OpResult is the result of one operation of a Multi.
type OpResult struct {
	// Type is the operation: OpCreate, OpDelete, OpSetData or OpCheck.
	Type OpCode
	// Path is the created node's path (with its sequence number) for a
	// create; otherwise the operation's path.
	Path string
	// Stat is the new Stat of a setData, and of a container or TTL create
	// (ZooKeeper 3.8 answers a plain create inside a multi with the path
	// only, even when asked with create2); nil otherwise.
	Stat *Stat
	// Err is nil for an operation that succeeded. When the transaction
	// failed nothing was applied; the failing operation carries its error,
	// the ones after it ErrRuntimeInconsistency, the ones before it nil.
	Err error
}

// Multi applies ops atomically: all or none. On failure the error is that
// of the first failing operation (errors.Is(err, ErrNodeExists), ...) and
// the results say which one failed; the results are nil if the server
// refused the whole request.
func (c *Conn) Multi(ctx context.Context, ops ...Op) ([]OpResult, error) {
	req := &proto.MultiRequest{Ops: make([]proto.MultiOp, len(ops))}
	for i, op := range ops {
		var rec proto.Record
		code := op.typ
		switch op.typ {
		case OpCreate:
			var err error
			code, rec, err = c.createRequest("multi", op.path, op.data, op.acl, op.mode, false, op.opts)
			if err != nil {
				return nil, err
			}
		case OpDelete, OpSetData, OpCheck:
			sp, err := c.checkPath("multi", op.path, false)
			if err != nil {
				return nil, err
			}
			switch op.typ {
			case OpDelete:
				rec = &proto.DeleteRequest{Path: sp, Version: op.version}
			case OpSetData:
				rec = &proto.SetDataRequest{Path: sp, Data: op.data, Version: op.version}
			default:
				rec = &proto.CheckVersionRequest{Path: sp, Version: op.version}
			}
		default:
			return nil, &Error{Code: proto.ErrBadArguments, Err: ErrBadArguments, Op: "multi", Detail: "zero Op"}
		}
		req.Ops[i] = proto.MultiOp{Type: code, Req: rec}
	}
	if len(ops) == 0 {
		return []OpResult{}, nil
	}
	resp := new(proto.MultiResponse)
	if _, err := c.call(ctx, proto.OpMulti, req, resp, nil); err != nil {
		return nil, wrapErr(err, "multi", "")
	}
	if len(resp.Results) != len(ops) {
		return nil, &Error{Code: proto.ErrMarshallingError, Err: ErrMarshallingError, Op: "multi",
			Detail: "result count does not match the request"}
	}
	out := make([]OpResult, len(ops))
	var first error
	for i := range resp.Results {
		r := &resp.Results[i]
		o := OpResult{Type: ops[i].typ, Path: ops[i].path}
		switch r.Type {
		case OpCreate:
			o.Path = c.stripRoot(r.Path)
		case proto.OpCreate2:
			o.Path = c.stripRoot(r.Path)
			st := r.Stat
			o.Stat = &st
		case OpSetData:
			st := r.Stat
			o.Stat = &st
		case proto.OpError:
			if r.Err != proto.ErrOk {
				e := newError(r.Err, "multi", ops[i].path)
				o.Err = e
				if first == nil && r.Err != proto.ErrRuntimeInconsistency {
					first = e
				}
			}
		}
		out[i] = o
	}
	if first == nil {
		for _, o := range out {
			if o.Err != nil {
				first = o.Err
				break
			}
		}
	}
	return out, first
}

// ReadOp is one operation of a MultiRead; build it with GetDataOp or
// GetChildrenOp.
type ReadOp struct {
	typ  OpCode
	path string
}

// GetDataOp reads a node's data and Stat.
func GetDataOp(path string) ReadOp { return ReadOp{typ: OpGetData, path: path} }

// GetChildrenOp reads a node's child names.
func GetChildrenOp(path string) ReadOp { return ReadOp{typ: OpGetChildren, path: path} }

// ReadResult is the result of one ReadOp.
type ReadResult struct {
	Type     OpCode // OpGetData or OpGetChildren
	Path     string
	Data     []byte   // GetDataOp
	Stat     *Stat    // GetDataOp
	Children []string // GetChildrenOp
	Err      error    // this read's error (reads fail independently)
}

// MultiRead runs read operations in one request. It is not atomic: each
// read succeeds or fails on its own (see ReadResult.Err); the returned
// error is set only when the request as a whole failed.
func (c *Conn) MultiRead(ctx context.Context, ops ...ReadOp) ([]ReadResult, error) {
	req := &proto.MultiRequest{Ops: make([]proto.MultiOp, len(ops))}
	for i, op := range ops {
		sp, err := c.checkPath("multiRead", op.path, false)
		if err != nil {
			return nil, err
		}
		switch op.typ {
		case OpGetData:
			req.Ops[i] = proto.MultiOp{Type: op.typ, Req: &proto.GetDataRequest{Path: sp}}
		case OpGetChildren:
			req.Ops[i] = proto.MultiOp{Type: op.typ, Req: &proto.GetChildrenRequest{Path: sp}}
		default:
			return nil, &Error{Code: proto.ErrBadArguments, Err: ErrBadArguments, Op: "multiRead", Detail: "zero ReadOp"}
		}
	}
	if len(ops) == 0 {
		return []ReadResult{}, nil
	}
	resp := new(proto.MultiResponse)
	if _, err := c.call(ctx, proto.OpMultiRead, req, resp, nil); err != nil {
		return nil, wrapErr(err, "multiRead", "")
	}
	if len(resp.Results) != len(ops) {
		return nil, &Error{Code: proto.ErrMarshallingError, Err: ErrMarshallingError, Op: "multiRead",
			Detail: "result count does not match the request"}
	}
	out := make([]ReadResult, len(ops))
	for i := range resp.Results {
		r := &resp.Results[i]
		o := ReadResult{Type: ops[i].typ, Path: ops[i].path}
		switch {
		case r.Type == proto.OpError:
			o.Err = newError(r.Err, "multiRead", ops[i].path)
		case r.Type == OpGetData && ops[i].typ == OpGetData:
			st := r.Stat
			o.Data, o.Stat = r.Data, &st
		case r.Type == OpGetChildren && ops[i].typ == OpGetChildren:
			o.Children = nonNil(r.Children)
		default:
			o.Err = &Error{Code: proto.ErrMarshallingError, Err: ErrMarshallingError, Op: "multiRead", Path: ops[i].path,
				Detail: "result type does not match the request"}
		}
		out[i] = o
	}
	return out, nil
}
