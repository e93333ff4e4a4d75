package tree

import (
	"bytes"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// Benchmarks for the tree's footprint and its reads: live heap per znode,
// lookups, and listing a node with many children.
//
//	go test ./tree -run '^$' -bench 'MemoryPerZnode' -benchtime 1x
//	go test ./tree -run '^$' -bench 'MemoryPerZnode' -benchtime 1x -tree.znodes 1000000
//	go test ./tree -run '^$' -bench 'Children|Get' -benchmem

var benchZnodes = flag.Int("tree.znodes", 200_000, "znodes BenchmarkMemoryPerZnode creates")

// benchData is the 100-byte payload of every benchmark znode.
var benchData = make([]byte, 100)

// buildBenchTree creates n persistent znodes of 100 bytes through Apply,
// perParent per parent: /bench/p0000/n0000000000, /bench/p0000/n0000000001,
// ... Parents are created as they are needed. It returns the tree and the
// number of znodes created (parents and /bench included).
func buildBenchTree(tb testing.TB, n, perParent int) (*Tree, int) {
	t := New()
	zxid := int64(0)
	apply := func(path string, data []byte) {
		zxid++
		txn := &Txn{Op: proto.OpCreate, Time: 1000 + zxid, Req: &proto.CreateRequest{Path: path, Data: data, ACL: openACL}}
		if r := t.Apply(zxid, txn); r.Err != proto.ErrOk {
			tb.Fatalf("create %s: %v", path, r.Err)
		}
	}
	apply("/bench", nil)
	created := 1
	parent := ""
	buf := make([]byte, 0, 64)
	for i := 0; i < n; i++ {
		if i%perParent == 0 {
			parent = fmt.Sprintf("/bench/p%04d", i/perParent)
			apply(parent, nil)
			created++
		}
		buf = append(buf[:0], parent...)
		buf = append(buf, "/n"...)
		s := strconv.Itoa(i)
		for k := len(s); k < 10; k++ {
			buf = append(buf, '0')
		}
		buf = append(buf, s...)
		apply(string(buf), benchData)
		created++
	}
	return t, created
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMemoryPerZnode creates -tree.znodes znodes of 100 bytes through
// Apply and reports the live heap they cost after a GC, per znode
// (B/znode), then the same for the tree read back from its snapshot
// (restored-B/znode), with 1,000 children per parent (as tools/compare
// loads the servers) and with 50,000 per parent.
func BenchmarkMemoryPerZnode(b *testing.B) {
	for _, perParent := range []int{1000, 50_000} {
		b.Run("perParent="+strconv.Itoa(perParent), func(b *testing.B) {
			var perZnode, restored float64
			for i := 0; i < b.N; i++ {
				before := liveHeap()
				t, created := buildBenchTree(b, *benchZnodes, perParent)
				after := liveHeap()
				perZnode = float64(int64(after)-int64(before)) / float64(created)
				if t.NodeCount() != created+5 {
					b.Fatalf("NodeCount %d, want %d", t.NodeCount(), created+5)
				}
				var snap bytes.Buffer
				if err := t.WriteSnapshot(&snap); err != nil {
					b.Fatal(err)
				}
				t = nil
				r := bytes.NewReader(snap.Bytes())
				snap = bytes.Buffer{}
				t, err := ReadSnapshot(r, ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				r = nil
				after = liveHeap()
				restored = float64(int64(after)-int64(before)) / float64(created)
				runtime.KeepAlive(t)
			}
			b.ReportMetric(perZnode, "B/znode")
			b.ReportMetric(restored, "restored-B/znode")
		})
	}
}

// benchChildrenTree returns a tree with /bench/p holding n children named
// as the bench tool's children workload names them (c000000, c000001, ...).
func benchChildrenTree(b *testing.B, n int) *Tree {
	t := New()
	zxid := int64(0)
	for _, p := range []string{"/bench", "/bench/p"} {
		zxid++
		t.Apply(zxid, &Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: p, ACL: openACL}})
	}
	for i := 0; i < n; i++ {
		zxid++
		p := fmt.Sprintf("/bench/p/c%06d", i)
		if r := t.Apply(zxid, &Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: p, ACL: openACL}}); r.Err != proto.ErrOk {
			b.Fatal(r.Err)
		}
	}
	return t
}

// BenchmarkGetChildren1000 lists a node with 1,000 children as the server's
// getChildren does (Get, then Children).
func BenchmarkGetChildren1000(b *testing.B) {
	t := benchChildrenTree(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := t.Get("/bench/p")
		if len(n.Children()) != 1000 {
			b.Fatal("wrong count")
		}
	}
}

// BenchmarkGetChildren1000AfterChange alternates a create or delete of one
// child with a listing (the lock recipe's pattern on a large directory):
// the listing cannot be reused as is.
func BenchmarkGetChildren1000AfterChange(b *testing.B) {
	t := benchChildrenTree(b, 1000)
	zxid := t.LastZxid()
	create := &Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/bench/p/c000500x", ACL: openACL}}
	del := &Txn{Op: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/bench/p/c000500x", Version: -1}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		zxid++
		txn := create
		if i%2 == 1 {
			txn = del
		}
		if r := t.Apply(zxid, txn); r.Err != proto.ErrOk {
			b.Fatal(r.Err)
		}
		if n := len(t.Get("/bench/p").Children()); n != 1000+1-i%2 {
			b.Fatal("wrong count", n)
		}
	}
}

// BenchmarkGet looks up znodes three levels deep, uniformly over 10,000
// siblings (the server's getData and exists do one Get each).
func BenchmarkGet(b *testing.B) {
	t, _ := buildBenchTree(b, 10_000, 10_000)
	paths := make([]string, 10_000)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/p0000/n%010d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if t.Get(paths[i%len(paths)]) == nil {
			b.Fatal("missing")
		}
	}
}
