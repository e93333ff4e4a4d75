package proto

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/zkgo/zkgo/jute"
)

// A long list of strings is encoded in place (EncodeStrings' fast path):
// the bytes are those of one WriteString per element, after what the
// encoder held, and they decode back to the list.
func TestEncodeStringsLongList(t *testing.T) {
	for _, n := range []int{growStrings, growStrings + 1, 1000} {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("item-%d", i*7919%1000003)
		}
		s[n/2] = "" // an empty name is a length of 0
		var want jute.Encoder
		want.WriteInt(42)
		want.WriteVectorLen(n)
		for _, v := range s {
			want.WriteString(v)
		}
		var got jute.Encoder
		got.WriteInt(42)
		EncodeStrings(&got, s)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%d strings: the encoding differs from one WriteString per element", n)
		}
		d := jute.NewDecoder(got.Bytes()[4:])
		if back := DecodeStrings(d); d.Err() != nil || !slices.Equal(back, s) {
			t.Fatalf("%d strings: decoded %d (err %v)", n, len(back), d.Err())
		}
	}
}

// BenchmarkEncodeStrings1M is a getChildren reply of a parent with
// 1,000,000 children (40.7 ms per reply with one append per name and
// length, 13.3 ms filled in place; 2-core VM).
func BenchmarkEncodeStrings1M(b *testing.B) {
	s := make([]string, 1000000)
	for i := range s {
		s[i] = fmt.Sprintf("item-%07d", i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var e jute.Encoder
		EncodeStrings(&e, s)
	}
}
