package zkdata

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// fuzzLimits keep a fuzzed length from asking for much memory.
var fuzzOpts = ReadOptions{MaxBuffer: 1 << 16, MaxNodes: 1 << 12, MaxSessions: 1 << 12, MaxACLs: 1 << 10}

// FuzzReadSnapshot: any input is read without a panic, gives an error
// wrapping ErrBadSnapshot or an image that becomes a tree or says why not,
// and an image that reads writes a snapshot that reads back the same.
func FuzzReadSnapshot(f *testing.F) {
	tr := testTree(f)
	var plain, gz, sn bytes.Buffer
	WriteSnapshot(&plain, tr, WriteOptions{})
	WriteSnapshot(&gz, tr, WriteOptions{Compression: "gz"})
	WriteSnapshot(&sn, tr, WriteOptions{Compression: "snappy"})
	f.Add(plain.Bytes(), byte(0))
	f.Add(gz.Bytes(), byte(1))
	f.Add(sn.Bytes(), byte(2))
	var small bytes.Buffer
	WriteSnapshot(&small, tree.New(), WriteOptions{NoDigest: true})
	f.Add(small.Bytes(), byte(0))
	f.Fuzz(func(t *testing.T, in []byte, mode byte) {
		var r io.Reader = bytes.NewReader(in)
		switch mode % 3 {
		case 1:
			zr, err := gzip.NewReader(r)
			if err != nil {
				return
			}
			r = io.LimitReader(zr, 4<<20)
		case 2:
			r = io.LimitReader(newXerialReader(r), 4<<20)
		}
		im, err := ReadSnapshot(r, 7, fuzzOpts)
		if err != nil {
			return
		}
		im.Tree(tree.ReadOptions{MaxBuffer: 1 << 16})
		var out bytes.Buffer
		if err := im.WriteSnapshot(&out, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		again, err := ReadSnapshot(bytes.NewReader(out.Bytes()), 7, fuzzOpts)
		if err != nil {
			t.Fatalf("rewritten snapshot does not read: %v", err)
		}
		if again.Summary().Znodes != im.Summary().Znodes {
			t.Fatalf("rewritten snapshot has %d nodes, had %d", again.Summary().Znodes, im.Summary().Znodes)
		}
	})
}

// FuzzReadSnapshotStream: any restore body is read without a panic; one
// that reads has a last zxid that is not negative.
func FuzzReadSnapshotStream(f *testing.F) {
	tr := testTree(f)
	var plain, small bytes.Buffer
	WriteSnapshot(&plain, tr, WriteOptions{})
	WriteSnapshot(&small, tree.New(), WriteOptions{NoDigest: true})
	f.Add(plain.Bytes())
	f.Add(small.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		im, err := ReadSnapshotStream(bytes.NewReader(in), fuzzOpts)
		if err != nil {
			return
		}
		if im.LastZxid() < 0 {
			t.Fatalf("last zxid %d", im.LastZxid())
		}
		im.Tree(tree.ReadOptions{MaxBuffer: 1 << 16})
	})
}

// FuzzReadLog: any log is read without a panic, and what it holds is
// replayed onto a small tree without one.
func FuzzReadLog(f *testing.F) {
	lw := newLog()
	lw.add(entry(1, 2, 1, proto.OpCreateSession, func(e *jute.Encoder) { e.WriteInt(5000) }))
	lw.add(entry(1, 3, 1, proto.OpCreate, createBody("/a", []byte("x"), worldAll, false, -1)))
	lw.add(entry(1, 4, 1, proto.OpCreate, createBody("/a/e", nil, nil, true, -1)))
	lw.add(entry(1, 5, 1, proto.OpSetData, setDataBody("/a", []byte("y"), 1)))
	lw.add(entry(1, 6, 1, proto.OpDelete, pathBody("/a/e")))
	lw.add(entry(1, 7, 1, proto.OpCloseSession, nil))
	lw.pad(16)
	f.Add(lw.buf.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		im := FromTree(tree.New())
		readLog(bytes.NewReader(in), "log.1", fuzzOpts.limits(), func(tx *txn, _ int64) error {
			return im.applyTxn(tx)
		})
		im.finish()
		im.Tree(tree.ReadOptions{})
	})
}
