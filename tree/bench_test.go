package tree

import (
	"strconv"
	"sync"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// BenchmarkApplySetData measures a setData on an existing node, the most
// common write.
func BenchmarkApplySetData(b *testing.B) {
	t := New()
	t.Apply(1, &Txn{Op: proto.OpCreateSession, Session: 1, Req: &CreateSessionReq{Timeout: 30000}})
	t.Apply(2, &Txn{Op: proto.OpCreate, Session: 1, Req: &proto.CreateRequest{Path: "/bench", ACL: openACL}})
	data := make([]byte, 128)
	req := &proto.SetDataRequest{Path: "/bench", Data: data, Version: -1}
	txn := &Txn{Op: proto.OpSetData, Session: 1, Time: 1000, Req: req}
	zxid := t.LastZxid()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		zxid++
		if r := t.Apply(zxid, txn); r.Err != proto.ErrOk {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkApplyCreate measures creating a node under a parent that keeps
// growing (paths are prepared outside the timed loop).
func BenchmarkApplyCreate(b *testing.B) {
	t := New()
	t.Apply(1, &Txn{Op: proto.OpCreateSession, Session: 1, Req: &CreateSessionReq{Timeout: 30000}})
	t.Apply(2, &Txn{Op: proto.OpCreate, Session: 1, Req: &proto.CreateRequest{Path: "/bench", ACL: openACL}})
	txns := make([]Txn, b.N)
	reqs := make([]proto.CreateRequest, b.N)
	data := make([]byte, 32)
	for i := range txns {
		reqs[i] = proto.CreateRequest{Path: "/bench/n" + strconv.Itoa(i), Data: data, ACL: openACL}
		txns[i] = Txn{Op: proto.OpCreate, Session: 1, Time: 1000, Req: &reqs[i]}
	}
	zxid := t.LastZxid()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		zxid++
		if r := t.Apply(zxid, &txns[i]); r.Err != proto.ErrOk {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkApplyMulti measures a small multi (check + setData + create +
// delete) that succeeds.
func BenchmarkApplyMulti(b *testing.B) {
	t := New()
	t.Apply(1, &Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m", ACL: openACL}})
	txn := &Txn{Op: proto.OpMulti, Time: 1000, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/m", Version: -1}},
		{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/m", Data: []byte("x"), Version: -1}},
		{Type: proto.OpCreate, Req: &proto.CreateRequest{Path: "/m/tmp", ACL: openACL}},
		{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/m/tmp", Version: -1}},
	}}}
	zxid := t.LastZxid()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		zxid++
		if r := t.Apply(zxid, txn); r.Multi[3].Err != proto.ErrOk {
			b.Fatal(r.Multi)
		}
	}
}

// BenchmarkWriteSnapshot measures writing a snapshot of 400,000 znodes of
// 100 bytes, 10,000 per parent (the tree the create benchmark builds),
// through BeginSnapshot and Write with a read lock, as the server does.
func BenchmarkWriteSnapshot(b *testing.B) {
	t := New()
	data := make([]byte, 100)
	zxid := int64(0)
	for p := 0; p < 40; p++ {
		parent := "/w" + strconv.Itoa(p)
		zxid++
		t.Apply(zxid, &Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: parent, ACL: openACL}})
		for i := 0; i < 10000; i++ {
			zxid++
			t.Apply(zxid, &Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: parent + "/n" + strconv.Itoa(i), Data: data, ACL: openACL}})
		}
	}
	var mu sync.RWMutex
	var cw countingWriter
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sn, err := t.BeginSnapshot()
		if err != nil {
			b.Fatal(err)
		}
		if err := sn.Write(&cw, mu.RLocker()); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(cw.n / int64(b.N))
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkApplySetACLLarge measures a setACL carrying 40,000 entries (a
// request within jute.maxbuffer), which every member applies: the
// validation and the duplicate check must stay linear.
func BenchmarkApplySetACLLarge(b *testing.B) {
	t := New()
	t.Apply(1, &Txn{Op: proto.OpCreateSession, Session: 1, Req: &CreateSessionReq{Timeout: 30000}})
	t.Apply(2, &Txn{Op: proto.OpCreate, Session: 1, Req: &proto.CreateRequest{Path: "/bench", ACL: openACL}})
	acls := make([]proto.ACL, 40_000)
	for i := range acls {
		acls[i] = proto.ACL{Perms: proto.PermAll, ID: proto.Id{Scheme: "digest", ID: "u" + strconv.Itoa(i) + ":h"}}
	}
	acls = append(acls, openACL...)
	txn := &Txn{Op: proto.OpSetACL, Session: 1, Req: &proto.SetACLRequest{Path: "/bench", ACL: acls, Version: -1}}
	zxid := t.LastZxid()
	b.ReportAllocs()
	for b.Loop() {
		zxid++
		if r := t.Apply(zxid, txn); r.Err != proto.ErrOk {
			b.Fatal(r.Err)
		}
	}
}
