package tree

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// NodeDigest is the CRC-32 (IEEE) of path, data and the stat's 60 bytes,
// and allocates nothing.
func TestNodeDigestCRC(t *testing.T) {
	st := proto.Stat{Czxid: 1, Mzxid: 2, Pzxid: 3, Ctime: 4, Mtime: 5, Version: 6, Cversion: -7, Aversion: 8, EphemeralOwner: 9}
	var b []byte
	b = binary.BigEndian.AppendUint64(b, 1)
	b = binary.BigEndian.AppendUint64(b, 2)
	b = binary.BigEndian.AppendUint64(b, 3)
	b = binary.BigEndian.AppendUint64(b, 4)
	b = binary.BigEndian.AppendUint64(b, 5)
	b = binary.BigEndian.AppendUint32(b, 6)
	b = binary.BigEndian.AppendUint32(b, uint32(0xffffffff-6))
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, 9)
	for _, c := range []struct {
		path string
		data []byte
	}{{"/a/b", []byte("hello")}, {"/x", nil}, {"/" + strings.Repeat("long", 100), make([]byte, 5000)}} {
		want := crc32.ChecksumIEEE(append(append([]byte(c.path), c.data...), b...))
		if got := NodeDigest(c.path, c.data, &st); got != uint64(want) {
			t.Errorf("%.20s: %x, want %x", c.path, got, want)
		}
		if n := testing.AllocsPerRun(100, func() { NodeDigest(c.path, c.data, &st) }); n != 0 {
			t.Errorf("%.20s: %v allocations", c.path, n)
		}
	}
}
