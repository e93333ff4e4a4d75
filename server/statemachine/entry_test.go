package statemachine

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// goldenEntries fix the byte layout of raft log entries (entry format 4,
// documented in entry.go). WALs written by earlier releases hold exactly
// these bytes: if this test fails, the change breaks reading existing
// data directories and must become a new format read beside this one.
var goldenEntries = []struct {
	name string
	e    Entry
	hex  string
}{
	{"sync", Entry{Kind: EntrySync, ID: 0x0102030400000005}, "0102030400000005"},
	{"touches", Entry{Kind: EntryTouches, Sessions: []int64{0x0100000000000001, 2}},
		"0000000000000000" + "00000002" + "0100000000000001" + "0000000000000002"},
	{"touches-empty", Entry{Kind: EntryTouches, Sessions: []int64{}}, "0000000000000000" + "00000000"},
	{"move-3", Entry{Kind: EntryMove, Sessions: []int64{0x0300000000000009}, Owner: 2, Claim: 5, Control: true},
		"0000000000000000" + "ffffffff" + "0300000000000009" + "0000000000000002" + "0000000000000005"},
	{"move", Entry{Kind: EntryMove, ID: 0x0102030400000006, Sessions: []int64{0x0300000000000009}, Owner: 2, Claim: 5},
		"0102030400000006" + "fff0bdbe" + "0300000000000009" + "0000000000000002" + "0000000000000005"},
	{"claimed", Entry{Kind: EntryTxn, ID: 0x13, Txn: &tree.Txn{
		Op: proto.OpDelete, Session: 9, Time: 2, Claim: 0x4455,
		Req: &proto.DeleteRequest{Path: "/a", Version: 3},
	}}, "0000000000000013" + "fff0bdbf" + "0000000000004455" + // mark, claim
		"00000002" + "0000000000000009" + "0000000000000002" + "00000000" + // op, session, time, auth
		"00000002" + "2f61" + "00000003"}, // path, version
	{"formation", Entry{Kind: EntryFormation, Formation: 0x8899aabbccddeeff},
		"0000000000000000" + "fffffffe" + "8899aabbccddeeff"},
	{"setData", Entry{Kind: EntryTxn, ID: 0xa1b2c3d400000001, Txn: &tree.Txn{
		Op: proto.OpSetData, Session: 0x0200000000000007, Time: 1700000000000,
		Auth: []proto.Id{{Scheme: "ip", ID: "127.0.0.1"}},
		Req:  &proto.SetDataRequest{Path: "/a", Data: []byte("x"), Version: -1},
	}}, "a1b2c3d400000001" + // proposal id
		"00000005" + "0200000000000007" + "0000018bcfe56800" + // op, session, time
		"00000001" + "00000002" + "6970" + "00000009" + "3132372e302e302e31" + // auth: [ip:127.0.0.1]
		"00000002" + "2f61" + "00000001" + "78" + "ffffffff"}, // path, data, version
	{"closeSession", Entry{Kind: EntryTxn, ID: 0x11, Txn: &tree.Txn{
		Op: proto.OpCloseSession, Session: 9, Time: 0, Auth: nil,
	}}, "0000000000000011" + "fffffff5" + "0000000000000009" + "0000000000000000" + "00000000"},
	{"createSession", Entry{Kind: EntryTxn, ID: 0x12, Txn: &tree.Txn{
		Op: proto.OpCreateSession, Session: 10, Time: 1,
		Req: &tree.CreateSessionReq{Timeout: 4000, Passwd: []byte{1, 2}},
	}}, "0000000000000012" + "fffffff6" + "000000000000000a" + "0000000000000001" + "00000000" +
		"00000fa0" + "00000002" + "0102"},
}

func TestEntryGolden(t *testing.T) {
	for _, g := range goldenEntries {
		var enc jute.Encoder
		AppendEntry(&enc, &g.e)
		if got := hex.EncodeToString(enc.Bytes()); got != g.hex {
			t.Errorf("%s: encoded\n %s\nwant\n %s", g.name, got, g.hex)
		}
		b, _ := hex.DecodeString(g.hex)
		got, err := DecodeEntry(b)
		if err != nil {
			t.Errorf("%s: decode: %v", g.name, err)
			continue
		}
		want := g.e
		if want.Txn != nil && want.Txn.Auth == nil {
			want.Txn.Auth = got.Txn.Auth // nil and empty decode alike
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v, want %+v", g.name, got, want)
		}
	}
}

func TestEntryRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		hex  string
		want error
	}{
		{"empty", "", errShortEntry},
		{"short id", "01020304", errShortEntry},
		{"newer control kind", "0000000000000000" + "fffffffd", ErrEntryFormat},
		{"short formation", "0000000000000000" + "fffffffe", nil},
		{"formation pending", "0000000000000000" + "fffffffe" + "0000000000000001", nil},
		{"long formation", "0000000000000000" + "fffffffe" + "0000000000000002" + "00", nil},
		{"short session move", "0000000000000000" + "ffffffff" + "0000000000000001", nil},
		{"long session move", "0000000000000000" + "ffffffff" + "0000000000000001" + "0000000000000002" + "0000000000000003" + "00", nil},
		{"newer mark", "0000000000000001" + "fff0bdbd" + "0000000000000001", ErrEntryFormat},
		{"short marked move", "0000000000000001" + "fff0bdbe" + "0000000000000001", nil},
		{"long marked move", "0000000000000001" + "fff0bdbe" + "0000000000000001" + "0000000000000002" + "0000000000000003" + "00", nil},
		{"claim missing", "0000000000000001" + "fff0bdbf" + "0000", nil},
		{"claim zero", "0000000000000001" + "fff0bdbf" + "0000000000000000" + "fffffff5" + "0000000000000009" + "0000000000000000" + "00000000", nil},
		{"claimed bad txn", "0000000000000001" + "fff0bdbf" + "0000000000000001" + "00000063" + "0000000000000000" + "0000000000000000" + "00000000", tree.ErrBadTxn},
		{"touch count beyond data", "0000000000000000" + "00000003" + "0000000000000001", nil},
		{"control without kind", "0000000000000000" + "0000", nil},
		{"unknown op", "0000000000000001" + "00000063" + "0000000000000000" + "0000000000000000" + "00000000", tree.ErrBadTxn},
		{"trailing bytes", "0000000000000011" + "fffffff5" + "0000000000000009" + "0000000000000000" + "00000000" + "00", tree.ErrBadTxn},
	} {
		b, _ := hex.DecodeString(tt.hex)
		_, err := DecodeEntry(b)
		if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.want)
		}
	}
}

// FuzzDecodeEntry: DecodeEntry never panics, and what it accepts encodes
// to bytes that decode to an entry encoding the same way (jute accepts
// non-canonical input, such as a negative vector length for an empty
// vector, so the input bytes themselves need not come back).
func FuzzDecodeEntry(f *testing.F) {
	for _, g := range goldenEntries {
		b, _ := hex.DecodeString(g.hex)
		f.Add(b)
	}
	// A negative auth vector length (null): accepted, not canonical.
	nonCanon, _ := hex.DecodeString("3030303030303030fffffff530303030303030303030303030303030ff303030")
	f.Add(nonCanon)
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		var enc jute.Encoder
		AppendEntry(&enc, &e)
		canon := enc.Bytes()
		e2, err := DecodeEntry(canon)
		if err != nil {
			t.Fatalf("re-encoded entry %x does not decode: %v", canon, err)
		}
		var enc2 jute.Encoder
		AppendEntry(&enc2, &e2)
		if string(enc2.Bytes()) != string(canon) {
			t.Fatalf("encoding is not stable:\n %x\n %x", canon, enc2.Bytes())
		}
		if e2.Kind != e.Kind || e2.ID != e.ID {
			t.Fatalf("kind/id changed: %v → %v", e, e2)
		}
	})
}

// EntrySizeHint is the exact size of a claimed transaction's entry, so
// the proposer's buffer has no slack.
func TestEntrySizeHint(t *testing.T) {
	acl := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	for _, c := range []struct {
		op   proto.OpCode
		req  proto.Record
		auth []proto.Id
	}{
		{proto.OpCreate, &proto.CreateRequest{Path: "/a/b/c", Data: make([]byte, 100), ACL: acl}, []proto.Id{{Scheme: "ip", ID: "127.0.0.1"}}},
		{proto.OpSetData, &proto.SetDataRequest{Path: "/x", Data: []byte("v"), Version: 3}, nil},
		{proto.OpMulti, &proto.MultiRequest{Ops: []proto.MultiOp{{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/d", Version: -1}}}},
			[]proto.Id{{Scheme: "ip", ID: "::1"}, {Scheme: "digest", ID: "u:hash"}}},
	} {
		var fe jute.Encoder
		proto.AppendRequest(&fe, &proto.RequestHeader{Xid: 1, Type: c.op}, c.req)
		frameLen := len(fe.Bytes()) - proto.FrameHeaderSize
		var enc jute.Encoder
		AppendEntry(&enc, TxnEntry(&tree.Txn{Op: c.op, Session: 1, Time: 2, Auth: c.auth, Req: c.req, Claim: 3}))
		if got, want := EntrySizeHint(frameLen, c.auth), len(enc.Bytes()); got != want {
			t.Errorf("%v: hint %d, entry %d bytes", c.op, got, want)
		}
	}
}

// FuzzApplyEntry: every entry ValidateEntry lets a peer append can be
// applied to a tree without a panic (Machine.Apply stops only at an
// entry that does not decode, and screening keeps those out of the log).
func FuzzApplyEntry(f *testing.F) {
	for _, g := range goldenEntries {
		b, _ := hex.DecodeString(g.hex)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if ValidateEntry(b) != nil {
			return
		}
		e, _ := DecodeEntry(b)
		if e.Kind != EntryTxn {
			return
		}
		tr := tree.New()
		tr.Apply(1, e.Txn)
		tr.Apply(2, e.Txn) // again, on the state it made
	})
}

// BenchmarkValidateEntry is what screening adds on a follower for each
// entry a leader appends: decoding a setData transaction of 64 bytes.
func BenchmarkValidateEntry(b *testing.B) {
	var enc jute.Encoder
	AppendEntry(&enc, &Entry{Kind: EntryTxn, ID: 1 << 32, Txn: &tree.Txn{Op: proto.OpSetData, Session: 7, Time: 1,
		Req: &proto.SetDataRequest{Path: "/bench/node-000001", Data: make([]byte, 64), Version: -1}}})
	data := enc.Bytes()
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidateEntry(data); err != nil {
			b.Fatal(err)
		}
	}
}

// EntrySession reads a transaction's session from the golden bytes of
// every kind of entry, and nothing from the others or from data cut short.
func TestEntrySession(t *testing.T) {
	for _, g := range goldenEntries {
		b, _ := hex.DecodeString(g.hex)
		id, ok := EntrySession(b)
		wantID, wantOK := int64(0), false
		if g.e.Kind == EntryTxn {
			wantID, wantOK = g.e.Txn.Session, true
		}
		if id != wantID || ok != wantOK {
			t.Errorf("%s: EntrySession = %#x, %v; want %#x, %v", g.name, id, ok, wantID, wantOK)
		}
		if g.e.Kind == EntryTxn {
			// Cut anywhere before the session's last byte: not a session.
			end := 20
			if g.name == "claimed" {
				end = 32
			}
			for n := 0; n < end; n++ {
				if id, ok := EntrySession(b[:n]); ok {
					t.Errorf("%s cut to %d bytes: EntrySession = %#x, true", g.name, n, id)
				}
			}
		}
	}
}
