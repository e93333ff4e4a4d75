package tree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

var (
	openACL = []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	someIDs = []proto.Id{{Scheme: "digest", ID: "u:hash"}, {Scheme: "ip", ID: "10.0.0.1"}}
)

// sampleTxns returns one transaction of every kind the log carries, with
// every field set to a non-zero value.
func sampleTxns() map[string]*Txn {
	create := &proto.CreateRequest{Path: "/a/b", Data: []byte("data"), ACL: openACL, Flags: proto.ModeEphemeralSequential}
	return map[string]*Txn{
		"create":          {Op: proto.OpCreate, Session: 0x1234, Time: 1700000000000, Auth: someIDs, Req: create},
		"create2":         {Op: proto.OpCreate2, Session: 1, Time: 2, Req: &proto.CreateRequest{Path: "/x", Data: []byte{0, 1, 2}, ACL: openACL}},
		"createContainer": {Op: proto.OpCreateContainer, Session: 1, Time: 2, Req: &proto.CreateRequest{Path: "/c", ACL: openACL, Flags: proto.ModeContainer}},
		"createTTL":       {Op: proto.OpCreateTTL, Session: 1, Time: 2, Req: &proto.CreateTTLRequest{Path: "/t", Data: []byte("t"), ACL: openACL, Flags: proto.ModePersistentWithTTL, TTL: 12345}},
		"delete":          {Op: proto.OpDelete, Session: -5, Time: 3, Req: &proto.DeleteRequest{Path: "/a", Version: 7}},
		"setData":         {Op: proto.OpSetData, Session: 1, Time: 4, Auth: someIDs[:1], Req: &proto.SetDataRequest{Path: "/a", Data: []byte("new"), Version: -1}},
		"setACL":          {Op: proto.OpSetACL, Session: 1, Time: 5, Req: &proto.SetACLRequest{Path: "/a", ACL: []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "digest", ID: "u:h"}}, openACL[0]}, Version: 3}},
		"check":           {Op: proto.OpCheck, Session: 1, Time: 6, Req: &proto.CheckVersionRequest{Path: "/a", Version: 9}},
		"multi": {Op: proto.OpMulti, Session: 1, Time: 7, Auth: someIDs, Req: &proto.MultiRequest{Ops: []proto.MultiOp{
			{Type: proto.OpCreate, Req: create},
			{Type: proto.OpCreate2, Req: &proto.CreateRequest{Path: "/m2", ACL: openACL}},
			{Type: proto.OpCreateContainer, Req: &proto.CreateRequest{Path: "/m3", ACL: openACL, Flags: proto.ModeContainer}},
			{Type: proto.OpCreateTTL, Req: &proto.CreateTTLRequest{Path: "/m4", ACL: openACL, Flags: proto.ModePersistentSequentialWithTTL, TTL: 1}},
			{Type: proto.OpDelete, Req: &proto.DeleteRequest{Path: "/m5", Version: -1}},
			{Type: proto.OpSetData, Req: &proto.SetDataRequest{Path: "/m6", Data: []byte("x"), Version: 2}},
			{Type: proto.OpCheck, Req: &proto.CheckVersionRequest{Path: "/m7", Version: 0}},
		}}},
		"createSession":   {Op: proto.OpCreateSession, Session: 0x100000001, Time: 8, Req: &CreateSessionReq{Timeout: 30000, Passwd: []byte("0123456789abcdef")}},
		"closeSession":    {Op: proto.OpCloseSession, Session: 0x100000001, Time: 9},
		"deleteContainer": {Op: proto.OpDeleteContainer, Time: 10, Req: &DeleteContainerReq{Path: "/c"}},
	}
}

func encodeTxn(t *Txn) []byte {
	var e jute.Encoder
	t.Encode(&e)
	return e.Bytes()
}

func TestTxnRoundTrip(t *testing.T) {
	for name, txn := range sampleTxns() {
		t.Run(name, func(t *testing.T) {
			b := encodeTxn(txn)
			got, err := DecodeTxn(b)
			if err != nil {
				t.Fatalf("DecodeTxn: %v", err)
			}
			if !reflect.DeepEqual(got, txn) {
				t.Fatalf("round trip mismatch:\n got %#v\nwant %#v", got, txn)
			}
			if again := encodeTxn(got); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding differs:\n%x\n%x", again, b)
			}
			// The decoded transaction owns its memory.
			for i := range b {
				b[i] = 0xee
			}
			if !reflect.DeepEqual(got, txn) {
				t.Fatalf("decoded txn aliases the input buffer")
			}
		})
	}
}

func TestTxnRoundTripEmpty(t *testing.T) {
	// Zero-valued bodies, no auth, empty multi.
	for _, txn := range []*Txn{
		{Op: proto.OpCreate, Req: &proto.CreateRequest{}},
		{Op: proto.OpSetData, Req: &proto.SetDataRequest{}},
		{Op: proto.OpMulti, Req: &proto.MultiRequest{}},
		{Op: proto.OpCloseSession},
		{Op: proto.OpCreateSession, Req: &CreateSessionReq{}},
	} {
		got, err := DecodeTxn(encodeTxn(txn))
		if err != nil {
			t.Fatalf("%v: %v", txn.Op, err)
		}
		if got.Op != txn.Op || got.Session != 0 || got.Time != 0 || got.Auth != nil {
			t.Fatalf("%v: got %#v", txn.Op, got)
		}
		if !reflect.DeepEqual(encodeTxn(got), encodeTxn(txn)) {
			t.Fatalf("%v: re-encoding differs", txn.Op)
		}
	}
}

func TestDecodeTxnErrors(t *testing.T) {
	good := encodeTxn(sampleTxns()["setData"])
	cases := map[string][]byte{
		"empty":        nil,
		"short header": good[:10],
		"truncated":    good[:len(good)-1],
		"trailing":     append(append([]byte(nil), good...), 0),
	}
	// Opcodes that never appear in the log.
	for _, op := range []proto.OpCode{proto.OpGetData, proto.OpPing, proto.OpSetWatches, proto.OpReconfig, proto.OpError, 12345} {
		cases[fmt.Sprintf("op %v", op)] = encodeTxn(&Txn{Op: op})
	}
	// An auth vector longer than the input.
	var e jute.Encoder
	e.WriteInt(int32(proto.OpCloseSession))
	e.WriteLong(1)
	e.WriteLong(2)
	e.WriteInt(1 << 30)
	cases["huge auth vector"] = e.Bytes()
	// A multi whose sub-op is not allowed in a multi.
	e = jute.Encoder{}
	(&Txn{Op: proto.OpMulti}).Encode(&e)
	e.WriteInt(int32(proto.OpSetACL))
	e.WriteBool(false)
	e.WriteInt(-1)
	(&proto.SetACLRequest{Path: "/a", ACL: openACL}).Encode(&e)
	(&proto.MultiHeader{Type: proto.OpError, Done: true, Err: -1}).Encode(&e)
	cases["setACL in multi"] = e.Bytes()

	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			txn, err := DecodeTxn(b)
			if err == nil {
				t.Fatalf("decoded %#v", txn)
			}
			if !errors.Is(err, ErrBadTxn) {
				t.Fatalf("error %v is not ErrBadTxn", err)
			}
			if txn != nil {
				t.Fatalf("non-nil txn with error")
			}
		})
	}
}

// TestDecodeTxnMangled decodes every truncation and many corruptions of
// the sample encodings: no panic, and anything that decodes round-trips.
func TestDecodeTxnMangled(t *testing.T) {
	check := func(b []byte) {
		txn, err := DecodeTxn(b)
		if err != nil {
			return
		}
		again, err := DecodeTxn(encodeTxn(txn))
		if err != nil || !reflect.DeepEqual(again, txn) {
			t.Fatalf("input %x decodes to %#v but does not round-trip (%v)", b, txn, err)
		}
	}
	for _, txn := range sampleTxns() {
		enc := encodeTxn(txn)
		for n := 0; n < len(enc); n++ {
			check(enc[:n])
		}
		for i := range enc {
			for _, v := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff, enc[i] ^ 0x01} {
				b := append([]byte(nil), enc...)
				b[i] = v
				check(b)
			}
		}
	}
}

// FuzzDecodeTxn checks that decoding arbitrary bytes never panics, that
// whatever decodes re-encodes to bytes that decode to the same transaction,
// and that applying it to a tree neither panics nor breaks the tree's
// invariants.
// The seed corpus is testdata/fuzz/FuzzDecodeTxn (see TestWriteFuzzSeeds).
func FuzzDecodeTxn(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		txn, err := DecodeTxn(b)
		if err != nil {
			if txn != nil {
				t.Fatal("txn with error")
			}
			return
		}
		enc := encodeTxn(txn)
		again, err := DecodeTxn(enc)
		if err != nil {
			t.Fatalf("re-encoded txn does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, txn) {
			t.Fatalf("decode(encode(txn)) != txn:\n%#v\n%#v", again, txn)
		}
		if enc2 := encodeTxn(again); !bytes.Equal(enc2, enc) {
			t.Fatal("encoding is not canonical")
		}

		tr := New()
		tr.SetOptions(Options{ExtendedTypes: true, EnforceQuota: true})
		tr.Apply(1, &Txn{Op: proto.OpCreateSession, Session: txn.Session, Req: &CreateSessionReq{Timeout: 1}})
		tr.Apply(2, &Txn{Op: proto.OpCreate, Req: &proto.CreateRequest{Path: "/a", ACL: openACL}})
		tr.Apply(3, txn)
		if bad := checkInvariants(tr); len(bad) > 0 {
			t.Fatalf("invariants broken by %#v: %v", txn, bad)
		}
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzDecodeTxn from
// sampleTxns when ZKGO_WRITE_FUZZ_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("ZKGO_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set ZKGO_WRITE_FUZZ_SEEDS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeTxn")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seeds := map[string][]byte{
		"garbage":         []byte("\x00\x00\x00\x0e\xde\xad\xbe\xef\xff\xff\xff\xff\x00\x00\x00\x01\x7f"),
		"multi-truncated": encodeTxn(sampleTxns()["multi"])[:60],
	}
	for name, txn := range sampleTxns() {
		seeds[name] = encodeTxn(txn)
	}
	for name, b := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
