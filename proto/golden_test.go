package proto

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/zkgo/zkgo/jute"
)

// Golden encodings, derived by hand from the layouts in zookeeper.jute
// (ZooKeeper 3.8) and from MultiOperationRecord / MultiResponse. Integers are
// big-endian; buffers and strings are a 4-byte length then the bytes (-1 for
// null); vectors are a 4-byte count then the elements; booleans one byte.

const connectRequestHex = `
	00000000                         // protocolVersion 0
	0000000500000002                 // lastZxidSeen 0x500000002
	00007530                         // timeOut 30000 ms
	0123456789abcdef                 // sessionId
	00000010                         // passwd: 16 bytes
	000102030405060708090a0b0c0d0e0f
`

var goldenTests = []struct {
	name string
	rec  Record
	hex  string
}{
	{
		name: "ConnectRequest without readOnly (pre-3.4 client)",
		rec: &ConnectRequest{LastZxidSeen: 0x500000002, TimeOut: 30000,
			SessionID: 0x0123456789abcdef, Passwd: passwd16()},
		hex: connectRequestHex,
	},
	{
		name: "ConnectRequest with readOnly",
		rec: &ConnectRequest{LastZxidSeen: 0x500000002, TimeOut: 30000,
			SessionID: 0x0123456789abcdef, Passwd: passwd16(), ReadOnly: true, HasReadOnly: true},
		hex: connectRequestHex + `01 // readOnly true`,
	},
	{
		name: "ConnectResponse",
		rec: &ConnectResponse{TimeOut: 40000, SessionID: 0x72000001a2b30000,
			Passwd: bytes.Repeat([]byte{0xff}, 16), HasReadOnly: true},
		hex: `
			00000000                          // protocolVersion 0
			00009c40                          // timeOut 40000 ms
			72000001a2b30000                  // sessionId
			00000010                          // passwd: 16 bytes
			ffffffffffffffffffffffffffffffff
			00                                // readOnly false`,
	},
	{
		name: "ConnectResponse expired session, old client",
		rec:  &ConnectResponse{Passwd: make([]byte, 16)},
		hex: `
			00000000 00000000 0000000000000000 // version, timeOut 0, sessionId 0
			00000010 00000000000000000000000000000000`,
	},
	{
		name: "RequestHeader",
		rec:  &RequestHeader{Xid: 1, Type: OpGetData},
		hex:  `00000001 00000004 // xid 1, type getData (4)`,
	},
	{
		name: "ReplyHeader",
		rec:  &ReplyHeader{Xid: 7, Zxid: 0x200000005, Err: ErrNodeExists},
		hex: `
			00000007         // xid 7
			0000000200000005 // zxid
			ffffff92         // err -110 NodeExists`,
	},
	{
		name: "ReplyHeader notification",
		rec:  &ReplyHeader{Xid: XidNotification, Zxid: -1, Err: ErrOk},
		hex:  `ffffffff ffffffffffffffff 00000000 // xid -1, zxid -1, err 0`,
	},
	{
		name: "ErrorResponse",
		rec:  &ErrorResponse{Err: ErrNoNode},
		hex:  `ffffff9b // err -101 NoNode`,
	},
	{
		name: "WatcherEvent",
		rec:  &WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/a"},
		hex:  `00000003 00000003 00000002 2f61 // type 3, state 3, path "/a"`,
	},
	{
		name: "GetDataResponse",
		rec:  &GetDataResponse{Data: []byte("hi"), Stat: testStat},
		hex:  `00000002 6869 // data "hi"` + "\n" + testStatHex,
	},
	{
		name: "SetWatches2",
		rec: &SetWatches2{
			RelativeZxid:               0x10,
			DataWatches:                []string{"/a"},
			ExistWatches:               nil,
			ChildWatches:               []string{},
			PersistentWatches:          []string{"/p", "/q"},
			PersistentRecursiveWatches: nil,
		},
		hex: `
			0000000000000010                     // relativeZxid
			00000001 00000002 2f61               // dataWatches ["/a"]
			ffffffff                             // existWatches null
			00000000                             // childWatches []
			00000002 00000002 2f70 00000002 2f71 // persistentWatches ["/p", "/q"]
			ffffffff                             // persistentRecursiveWatches null`,
	},
	{
		name: "CreateRequest",
		rec:  &CreateRequest{Path: "/a", Data: []byte("x"), ACL: worldACL, Flags: ModeEphemeral},
		hex: `
			00000002 2f61                 // path "/a"
			00000001 78                   // data "x"
			00000001                      // acl: 1 entry
			0000001f                      //   perms ALL (31)
			00000005 776f726c64           //   scheme "world"
			00000006 616e796f6e65         //   id "anyone"
			00000001                      // flags EPHEMERAL`,
	},
	{
		name: "multi request of 3 ops",
		rec: &MultiRequest{Ops: []MultiOp{
			{OpCreate, &CreateRequest{Path: "/a", Data: []byte("x"), ACL: worldACL, Flags: ModeEphemeral}},
			{OpSetData, &SetDataRequest{Path: "/b", Data: []byte("y"), Version: 3}},
			{OpCheck, &CheckVersionRequest{Path: "/c", Version: -1}},
		}},
		hex: `
			00000001 00 ffffffff                   // header: type create, done false, err -1
			00000002 2f61 00000001 78              //   path "/a", data "x"
			00000001 0000001f                      //   acl: 1 entry, perms 31
			00000005 776f726c64 00000006 616e796f6e65 // "world" "anyone"
			00000001                               //   flags EPHEMERAL
			00000005 00 ffffffff                   // header: type setData
			00000002 2f62 00000001 79 00000003     //   path "/b", data "y", version 3
			0000000d 00 ffffffff                   // header: type check (13)
			00000002 2f63 ffffffff                 //   path "/c", version -1
			ffffffff 01 ffffffff                   // end: type -1, done true, err -1`,
	},
	{
		name: "multiRead request",
		rec: &MultiRequest{Ops: []MultiOp{
			{OpGetData, &GetDataRequest{Path: "/a"}},
			{OpGetChildren, &GetChildrenRequest{Path: "/"}},
		}},
		hex: `
			00000004 00 ffffffff 00000002 2f61 00 // getData "/a", watch false
			00000008 00 ffffffff 00000001 2f 00   // getChildren "/", watch false
			ffffffff 01 ffffffff                  // end`,
	},
	{
		// The second of three ops failed with NoNode: ZooKeeper reports the
		// ops before it as errors with code 0 and the ops after it as
		// RuntimeInconsistency, each as an error header + ErrorResponse.
		name: "failed multi response",
		rec: &MultiResponse{Results: []MultiResult{
			{Type: OpError, Err: ErrOk},
			{Type: OpError, Err: ErrNoNode},
			{Type: OpError, Err: ErrRuntimeInconsistency},
		}},
		hex: `
			ffffffff 00 00000000 00000000 // error, err 0;    ErrorResponse 0
			ffffffff 00 ffffff9b ffffff9b // error, err -101; ErrorResponse -101
			ffffffff 00 fffffffe fffffffe // error, err -2;   ErrorResponse -2
			ffffffff 01 ffffffff          // end`,
	},
	{
		name: "successful multi response",
		rec: &MultiResponse{Results: []MultiResult{
			{Type: OpCreate, Path: "/a0000000001"},
			{Type: OpDelete},
			{Type: OpCheck},
		}},
		hex: `
			00000001 00 00000000               // create, err 0
			0000000c 2f61 30303030303030303031 //   CreateResponse path "/a0000000001"
			00000002 00 00000000               // delete: no body
			0000000d 00 00000000               // check: no body
			ffffffff 01 ffffffff               // end`,
	},
	{
		name: "multiRead response with a failed read",
		rec: &MultiResponse{Results: []MultiResult{
			{Type: OpGetChildren, Children: []string{"x"}},
			{Type: OpError, Err: ErrNoNode},
		}},
		hex: `
			00000008 00 00000000 00000001 00000001 78 // getChildren ["x"]
			ffffffff 00 ffffff9b ffffff9b             // error NoNode
			ffffffff 01 ffffffff                      // end`,
	},
}

func TestGolden(t *testing.T) {
	for _, tt := range goldenTests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.hex)
			if got := encode(tt.rec); !bytes.Equal(got, want) {
				t.Errorf("encode:\n got  %x\n want %x", got, want)
			}
			got, err := decodeAll(tt.rec, want, false)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.rec) {
				t.Errorf("decode:\n got  %+v\n want %+v", got, tt.rec)
			}
		})
	}
}

// TestConnectRequestOptionalReadOnly decodes the same connect request with
// and without the trailing readOnly byte.
func TestConnectRequestOptionalReadOnly(t *testing.T) {
	base := unhex(t, connectRequestHex)
	tests := []struct {
		name         string
		in           []byte
		wantRO       bool
		wantHasRO    bool
		wantTrailing bool
	}{
		{"absent", base, false, false, false},
		{"false", append(base[:len(base):len(base)], 0), false, true, false},
		{"true", append(base[:len(base):len(base)], 1), true, true, false},
		{"non-zero is true", append(base[:len(base):len(base)], 7), true, true, false},
		{"extra byte after readOnly", append(base[:len(base):len(base)], 1, 0), true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r ConnectRequest
			d := jute.NewDecoder(tt.in)
			r.Decode(d)
			if d.Err() != nil {
				t.Fatal(d.Err())
			}
			if r.ReadOnly != tt.wantRO || r.HasReadOnly != tt.wantHasRO {
				t.Errorf("ReadOnly %v HasReadOnly %v, want %v %v", r.ReadOnly, r.HasReadOnly, tt.wantRO, tt.wantHasRO)
			}
			if err := d.Finish(); (err != nil) != tt.wantTrailing {
				t.Errorf("Finish = %v", err)
			}
		})
	}
}

// TestConnectEncodeReadOnly checks that ReadOnly true forces the trailing
// byte even when HasReadOnly is unset.
func TestConnectEncodeReadOnly(t *testing.T) {
	req := encode(&ConnectRequest{Passwd: []byte{}, ReadOnly: true})
	if req[len(req)-1] != 1 || len(req) != 4+8+4+8+4+1 {
		t.Errorf("ConnectRequest: %x", req)
	}
	rsp := encode(&ConnectResponse{Passwd: []byte{}, ReadOnly: true})
	if rsp[len(rsp)-1] != 1 || len(rsp) != 4+4+8+4+1 {
		t.Errorf("ConnectResponse: %x", rsp)
	}
}
