package zkdata

import (
	"errors"
	"fmt"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

// The transactions of ZooKeeper's log, as zookeeper.jute defines them
// (package org.apache.zookeeper.txn). One entry of a log is a TxnHeader,
// then the body its type calls for, then (3.6+) a TxnDigest.

// txnHeader is TxnHeader.
type txnHeader struct {
	clientID int64
	cxid     int32
	zxid     int64
	time     int64
	typ      proto.OpCode
}

// txnDigest is TxnDigest: the tree digest after the transaction.
type txnDigest struct {
	version int32
	digest  int64
}

// createTxn is CreateTxn (create, create2 and multi creates), CreateTxnV0
// (parentCVersion -1), CreateTTLTxn and CreateContainerTxn; the header type
// tells which.
type createTxn struct {
	path           string
	data           []byte
	acl            []proto.ACL // nil: a null list (the open ACL)
	ephemeral      bool
	parentCVersion int32
	ttl            int64
}

type deleteTxn struct{ path string }

// setDataTxn is SetDataTxn (setData, and reconfig on /zookeeper/config).
type setDataTxn struct {
	path    string
	data    []byte
	version int32
}

type setACLTxn struct {
	path    string
	acl     []proto.ACL
	version int32
}

type checkTxn struct {
	path    string
	version int32
}

type errorTxn struct{ err int32 }

type createSessionTxn struct{ timeout int32 }

// closeSessionTxn is CloseSessionTxn; nil in txn.body when the entry has
// no body (written before 3.6).
type closeSessionTxn struct{ paths []string }

// subTxn is Txn: one operation of a MultiTxn, its body still encoded.
type subTxn struct {
	typ  proto.OpCode
	data []byte
}

type multiTxn struct{ ops []subTxn }

// txn is one decoded log entry.
type txn struct {
	hdr    txnHeader
	body   any // one of the *Txn types above, or nil
	digest *txnDigest
}

const minACLSize = 4 + 4 + 4

func readACLs(d *jute.Decoder) []proto.ACL {
	n := d.ReadVectorLen(minACLSize)
	if n < 0 || d.Err() != nil {
		return nil
	}
	list := make([]proto.ACL, n)
	for i := range list {
		list[i].Decode(d)
	}
	return list
}

// isEOF reports whether a decoding error means the input ended early (an
// EOFException in Java's jute).
func isEOF(err error) bool {
	return errors.Is(err, jute.ErrShortBuffer) || errors.Is(err, jute.ErrBadLength)
}

// decodeTxn decodes one log entry as SerializeUtils.deserializeTxn does.
func decodeTxn(b []byte) (txn, error) {
	d := jute.NewDecoder(b)
	var t txn
	h := &t.hdr
	h.clientID, h.cxid, h.zxid, h.time = d.ReadLong(), d.ReadInt(), d.ReadLong(), d.ReadLong()
	h.typ = proto.OpCode(d.ReadInt())
	if err := d.Err(); err != nil {
		return t, fmt.Errorf("transaction header: %w", err)
	}
	start := d.Offset()
	switch h.typ {
	case proto.OpCreateSession:
		t.body = &createSessionTxn{timeout: d.ReadInt()}
	case proto.OpCloseSession:
		c := &closeSessionTxn{}
		if n := d.ReadVectorLen(4); n > 0 {
			c.paths = make([]string, n)
			for i := range c.paths {
				c.paths[i] = d.ReadString()
			}
		}
		if d.Err() == nil {
			t.body = c
		} else if isEOF(d.Err()) {
			// A close without paths (before 3.6): not an error.
			d = jute.NewDecoder(b[start:])
		}
	case proto.OpCreate, proto.OpCreate2:
		c := &createTxn{path: d.ReadString(), data: d.ReadBuffer(), acl: readACLs(d), ephemeral: d.ReadBool(), parentCVersion: d.ReadInt()}
		if h.typ == proto.OpCreate && isEOF(d.Err()) {
			// CreateTxnV0: no parentCVersion; -1 asks for the increment.
			d = jute.NewDecoder(b[start:])
			c = &createTxn{path: d.ReadString(), data: d.ReadBuffer(), acl: readACLs(d), ephemeral: d.ReadBool(), parentCVersion: -1}
		}
		t.body = c
	case proto.OpCreateTTL:
		t.body = &createTxn{path: d.ReadString(), data: d.ReadBuffer(), acl: readACLs(d), parentCVersion: d.ReadInt(), ttl: d.ReadLong()}
	case proto.OpCreateContainer:
		t.body = &createTxn{path: d.ReadString(), data: d.ReadBuffer(), acl: readACLs(d), parentCVersion: d.ReadInt()}
	case proto.OpDelete, proto.OpDeleteContainer:
		t.body = &deleteTxn{path: d.ReadString()}
	case proto.OpSetData, proto.OpReconfig:
		t.body = &setDataTxn{path: d.ReadString(), data: d.ReadBuffer(), version: d.ReadInt()}
	case proto.OpSetACL:
		t.body = &setACLTxn{path: d.ReadString(), acl: readACLs(d), version: d.ReadInt()}
	case proto.OpError:
		t.body = &errorTxn{err: d.ReadInt()}
	case proto.OpMulti:
		m := &multiTxn{}
		if n := d.ReadVectorLen(4 + 4); n > 0 {
			m.ops = make([]subTxn, n)
			for i := range m.ops {
				m.ops[i] = subTxn{typ: proto.OpCode(d.ReadInt()), data: d.ReadBuffer()}
			}
		}
		t.body = m
	default:
		return t, fmt.Errorf("unsupported transaction type %d (zxid %#x)", h.typ, h.zxid)
	}
	if err := d.Err(); err != nil {
		return t, fmt.Errorf("%v transaction (zxid %#x): %w", h.typ, h.zxid, err)
	}
	// 3.6+ appends the tree digest; older entries end here.
	if d.Remaining() >= 4+8 {
		t.digest = &txnDigest{version: d.ReadInt(), digest: d.ReadLong()}
	}
	return t, nil
}

// decodeSub decodes the body of one operation of a multi, as
// DataTree.processTxn does; an error stops the multi there.
func decodeSub(op subTxn) (any, error) {
	d := jute.NewDecoder(op.data)
	var body any
	switch op.typ {
	case proto.OpCreate:
		body = &createTxn{path: d.ReadString(), data: d.ReadBuffer(), acl: readACLs(d), ephemeral: d.ReadBool(), parentCVersion: d.ReadInt()}
	case proto.OpCreateTTL:
		body = &createTxn{path: d.ReadString(), data: d.ReadBuffer(), acl: readACLs(d), parentCVersion: d.ReadInt(), ttl: d.ReadLong()}
	case proto.OpCreateContainer:
		body = &createTxn{path: d.ReadString(), data: d.ReadBuffer(), acl: readACLs(d), parentCVersion: d.ReadInt()}
	case proto.OpDelete, proto.OpDeleteContainer:
		body = &deleteTxn{path: d.ReadString()}
	case proto.OpSetData:
		body = &setDataTxn{path: d.ReadString(), data: d.ReadBuffer(), version: d.ReadInt()}
	case proto.OpError:
		body = &errorTxn{err: d.ReadInt()}
	case proto.OpCheck:
		body = &checkTxn{path: d.ReadString(), version: d.ReadInt()}
	default:
		return nil, fmt.Errorf("invalid operation type %d in a multi", op.typ)
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%v in a multi: %w", op.typ, err)
	}
	return body, nil
}
