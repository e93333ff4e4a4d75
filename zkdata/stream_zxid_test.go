package zkdata

import (
	"bytes"
	"errors"
	"hash/adler32"
	"testing"

	"github.com/zkgo/zkgo/jute"
)

// A snapshot stream without its file name (the AdminServer's restore
// body) gets its last zxid from its own bytes: ZooKeeper 3.9's sealed
// last processed zxid when present, else the digest section's zxid, else
// the highest zxid in its nodes' stats; a bad trailer is refused.
func TestReadSnapshotStreamZxid(t *testing.T) {
	tr := testTree(t)
	last := tr.LastZxid()
	write := func(opts WriteOptions) []byte {
		var b bytes.Buffer
		if err := WriteSnapshot(&b, tr, opts); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	// trailer appends ZooKeeper 3.9's last processed zxid and its seal
	// (the Adler-32 of every byte before the seal, then "/").
	trailer := func(snap []byte, zxid int64) []byte {
		var e jute.Encoder
		e.WriteLong(zxid)
		out := append(bytes.Clone(snap), e.Bytes()...)
		var s jute.Encoder
		s.WriteLong(int64(adler32.Checksum(out)))
		s.WriteString("/")
		return append(out, s.Bytes()...)
	}
	withDigest := write(WriteOptions{})
	for _, tt := range []struct {
		name string
		in   []byte
		want int64
	}{
		{"digest section", withDigest, last},
		{"3.9 last processed zxid", trailer(withDigest, last+5), last + 5},
		{"neither: the nodes' highest zxid", write(WriteOptions{NoDigest: true}), last},
	} {
		im, err := ReadSnapshotStream(bytes.NewReader(tt.in), ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if im.LastZxid() != tt.want || im.Summary().LastZxid != tt.want {
			t.Errorf("%s: last zxid %#x, want %#x", tt.name, im.LastZxid(), tt.want)
		}
	}
	bad := trailer(withDigest, last+5)
	bad[len(bad)-6] ^= 1 // the trailer's seal
	if _, err := ReadSnapshotStream(bytes.NewReader(bad), ReadOptions{}); !errors.Is(err, ErrBadSnapshot) {
		t.Errorf("a bad last-zxid seal: %v", err)
	}
	extra := append(trailer(withDigest, last), 0)
	if _, err := ReadSnapshotStream(bytes.NewReader(extra), ReadOptions{}); !errors.Is(err, ErrBadSnapshot) {
		t.Errorf("a byte after the last seal: %v", err)
	}
	// A named file keeps its name's zxid, trailer or not.
	if im, err := ReadSnapshot(bytes.NewReader(withDigest), last, ReadOptions{}); err != nil || im.LastZxid() != last {
		t.Errorf("ReadSnapshot: %v", err)
	}
}
