package proto

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/jute"
)

// unhex decodes a hex literal written for humans: whitespace is ignored and
// each line may end in a // comment.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for line := range strings.Lines(s) {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("bad hex literal: %v", err)
	}
	return b
}

// encode returns r's encoding.
func encode(r Record) []byte {
	var e jute.Encoder
	r.Encode(&e)
	return e.Bytes()
}

// newLike returns a fresh zero record of r's concrete type.
func newLike(r Record) Record {
	return reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
}

// decodeAll decodes in into a fresh record like proto, requiring the input to
// be consumed exactly.
func decodeAll(proto Record, in []byte, alias bool) (Record, error) {
	r := newLike(proto)
	var d jute.Decoder
	d.Reset(in, alias)
	r.Decode(&d)
	return r, d.Finish()
}

// passwd16 is a 16-byte password 00 01 .. 0f.
func passwd16() []byte {
	p := make([]byte, PasswdLen)
	for i := range p {
		p[i] = byte(i)
	}
	return p
}

// testStat has a distinct value in every field, so that a field order mistake
// shows up in golden bytes and round trips.
var testStat = Stat{
	Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6, Aversion: 7,
	EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11,
}

// testStatHex is testStat's encoding.
const testStatHex = `
	0000000000000001 // czxid
	0000000000000002 // mzxid
	0000000000000003 // ctime
	0000000000000004 // mtime
	00000005         // version
	00000006         // cversion
	00000007         // aversion
	0000000000000008 // ephemeralOwner
	00000009         // dataLength
	0000000a         // numChildren
	000000000000000b // pzxid
`

var worldACL = []ACL{{Perms: PermAll, ID: Id{Scheme: "world", ID: "anyone"}}}
