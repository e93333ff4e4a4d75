package proto

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"github.com/zkgo/zkgo/jute"
)

// sampleRecords returns at least one value of every record type, with null
// and empty variants of every optional vector and buffer. Every value must
// survive encode → decode unchanged (reflect.DeepEqual, so nil and empty
// slices are distinct).
func sampleRecords() []struct {
	name string
	rec  Record
} {
	return []struct {
		name string
		rec  Record
	}{
		// data.go
		{"Id", &Id{Scheme: "digest", ID: "user:hash"}},
		{"ACL", &ACL{Perms: PermRead | PermAdmin, ID: Id{Scheme: "ip", ID: "10.0.0.0/8"}}},
		{"Stat", &testStat},

		// connect.go
		{"ConnectRequest/new session", &ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true}},
		{"ConnectRequest/read only", &ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 0x500000001, TimeOut: 4000, SessionID: -2, Passwd: passwd16(), ReadOnly: true, HasReadOnly: true}},
		{"ConnectRequest/old client", &ConnectRequest{TimeOut: 10000, SessionID: 77, Passwd: passwd16()}},
		{"ConnectRequest/null passwd", &ConnectRequest{Passwd: nil, HasReadOnly: true}},
		{"ConnectRequest/empty passwd", &ConnectRequest{Passwd: []byte{}}},
		{"ConnectResponse", &ConnectResponse{TimeOut: 40000, SessionID: 0x72000001a2b30000, Passwd: passwd16(), HasReadOnly: true}},
		{"ConnectResponse/read only", &ConnectResponse{TimeOut: 1, SessionID: 1, Passwd: []byte{1}, ReadOnly: true, HasReadOnly: true}},
		{"ConnectResponse/old", &ConnectResponse{Passwd: make([]byte, 16)}},

		// headers
		{"RequestHeader", &RequestHeader{Xid: 12, Type: OpGetData}},
		{"RequestHeader/ping", &RequestHeader{Xid: XidPing, Type: OpPing}},
		{"ReplyHeader", &ReplyHeader{Xid: 12, Zxid: 0x100000003, Err: ErrNoNode}},
		{"ReplyHeader/notification", &ReplyHeader{Xid: XidNotification, Zxid: -1}},
		{"MultiHeader", &MultiHeader{Type: OpCreate, Err: -1}},
		{"MultiHeader/end", &MultiHeader{Type: OpError, Done: true, Err: -1}},

		// requests.go
		{"AuthPacket", &AuthPacket{Scheme: "digest", Auth: []byte("user:pw")}},
		{"AuthPacket/null", &AuthPacket{Type: 3}},
		{"SetWatches", &SetWatches{RelativeZxid: 9, DataWatches: []string{"/a", "/b"}, ExistWatches: []string{}, ChildWatches: nil}},
		{"SetWatches2", &SetWatches2{RelativeZxid: 9, DataWatches: []string{"/a"}, ExistWatches: nil, ChildWatches: []string{},
			PersistentWatches: []string{"/p", ""}, PersistentRecursiveWatches: []string{"/r"}}},
		{"SetWatches2/all null", &SetWatches2{}},
		{"CreateRequest", &CreateRequest{Path: "/a", Data: []byte("x"), ACL: worldACL, Flags: ModeEphemeralSequential}},
		{"CreateRequest/null data null acl", &CreateRequest{Path: "/b", Flags: ModeContainer}},
		{"CreateRequest/empty data empty acl", &CreateRequest{Path: "/c", Data: []byte{}, ACL: []ACL{}}},
		{"CreateRequest/bad flags", &CreateRequest{Path: "/d", Flags: 99}},
		{"CreateTTLRequest", &CreateTTLRequest{Path: "/t", Data: []byte{0}, ACL: append(worldACL, ACL{Perms: PermRead, ID: Id{"auth", ""}}), Flags: ModePersistentWithTTL, TTL: 60000}},
		{"DeleteRequest", &DeleteRequest{Path: "/a", Version: -1}},
		{"ExistsRequest", &ExistsRequest{Path: "/a/b", Watch: true}},
		{"GetDataRequest", &GetDataRequest{Path: "/a"}},
		{"SetDataRequest", &SetDataRequest{Path: "/a", Data: bytes.Repeat([]byte{0xee}, 300), Version: 7}},
		{"SetDataRequest/null", &SetDataRequest{Path: "/a", Version: -1}},
		{"GetACLRequest", &GetACLRequest{Path: "/"}},
		{"SetACLRequest", &SetACLRequest{Path: "/a", ACL: worldACL, Version: 2}},
		{"SetACLRequest/null acl", &SetACLRequest{Path: "/a"}},
		{"GetChildrenRequest", &GetChildrenRequest{Path: "/a", Watch: true}},
		{"GetChildren2Request", &GetChildren2Request{Path: "/a", Watch: true}},
		{"SyncRequest", &SyncRequest{Path: "/s"}},
		{"CheckVersionRequest", &CheckVersionRequest{Path: "/c", Version: 4}},
		{"ReconfigRequest", &ReconfigRequest{JoiningServers: "server.4=h:2888:3888;2181", LeavingServers: "3", CurConfigID: -1}},
		{"ReconfigRequest/new members", &ReconfigRequest{NewMembers: "server.1=a:1:2;3", CurConfigID: 0x100000000}},
		{"CheckWatchesRequest", &CheckWatchesRequest{Path: "/w", Type: WatcherData}},
		{"RemoveWatchesRequest", &RemoveWatchesRequest{Path: "/w", Type: WatcherAny}},
		{"AddWatchRequest", &AddWatchRequest{Path: "/w", Mode: AddWatchPersistentRecursive}},
		{"GetEphemeralsRequest", &GetEphemeralsRequest{PrefixPath: "/app"}},
		{"GetAllChildrenNumberRequest", &GetAllChildrenNumberRequest{Path: "/n"}},
		{"GetSASLRequest", &GetSASLRequest{Token: []byte{1, 2, 3}}},
		{"GetSASLRequest/empty", &GetSASLRequest{Token: []byte{}}},
		{"SetSASLRequest", &SetSASLRequest{Token: nil}},

		// responses.go
		{"CreateResponse", &CreateResponse{Path: "/a0000000001"}},
		{"Create2Response", &Create2Response{Path: "/a", Stat: testStat}},
		{"ExistsResponse", &ExistsResponse{Stat: testStat}},
		{"GetDataResponse", &GetDataResponse{Data: []byte("hello"), Stat: testStat}},
		{"GetDataResponse/null", &GetDataResponse{}},
		{"GetDataResponse/empty", &GetDataResponse{Data: []byte{}}},
		{"SetDataResponse", &SetDataResponse{Stat: testStat}},
		{"GetACLResponse", &GetACLResponse{ACL: worldACL, Stat: testStat}},
		{"GetACLResponse/empty", &GetACLResponse{ACL: []ACL{}}},
		{"SetACLResponse", &SetACLResponse{Stat: testStat}},
		{"GetChildrenResponse", &GetChildrenResponse{Children: []string{"a", "b", "c"}}},
		{"GetChildrenResponse/null", &GetChildrenResponse{}},
		{"GetChildrenResponse/empty", &GetChildrenResponse{Children: []string{}}},
		{"GetChildren2Response", &GetChildren2Response{Children: []string{"x"}, Stat: testStat}},
		{"SyncResponse", &SyncResponse{Path: "/s"}},
		{"GetEphemeralsResponse", &GetEphemeralsResponse{Ephemerals: []string{"/e1", "/app/e2"}}},
		{"GetEphemeralsResponse/empty", &GetEphemeralsResponse{Ephemerals: []string{}}},
		{"GetAllChildrenNumberResponse", &GetAllChildrenNumberResponse{TotalNumber: 1234}},
		{"ClientInfo", &ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}},
		{"WhoAmIResponse", &WhoAmIResponse{ClientInfo: []ClientInfo{{"ip", "127.0.0.1"}, {"digest", "bob"}}}},
		{"WhoAmIResponse/null", &WhoAmIResponse{}},
		{"WhoAmIResponse/empty", &WhoAmIResponse{ClientInfo: []ClientInfo{}}},
		{"SetSASLResponse", &SetSASLResponse{Token: []byte("tok")}},
		{"ErrorResponse", &ErrorResponse{Err: ErrBadVersion}},
		{"WatcherEvent", &WatcherEvent{Type: EventNodeChildrenChanged, State: StateSyncConnected, Path: "/p"}},
		{"WatcherEvent/state", &WatcherEvent{Type: EventNone, State: StateExpired}},

		// multi.go
		{"MultiRequest/txn", &MultiRequest{Ops: []MultiOp{
			{OpCreate, &CreateRequest{Path: "/a", Data: []byte{}, ACL: worldACL}},
			{OpCreate2, &CreateRequest{Path: "/b", ACL: worldACL, Flags: ModeEphemeral}},
			{OpCreateContainer, &CreateRequest{Path: "/c", ACL: worldACL, Flags: ModeContainer}},
			{OpCreateTTL, &CreateTTLRequest{Path: "/d", ACL: worldACL, Flags: ModePersistentWithTTL, TTL: 5}},
			{OpDelete, &DeleteRequest{Path: "/e", Version: -1}},
			{OpSetData, &SetDataRequest{Path: "/f", Data: []byte("v")}},
			{OpCheck, &CheckVersionRequest{Path: "/g", Version: 3}},
		}}},
		{"MultiRequest/read", &MultiRequest{Ops: []MultiOp{
			{OpGetData, &GetDataRequest{Path: "/a"}},
			{OpGetChildren, &GetChildrenRequest{Path: "/"}},
		}}},
		{"MultiRequest/empty", &MultiRequest{}},
		{"MultiResponse", &MultiResponse{Results: []MultiResult{
			{Type: OpCreate, Path: "/a"},
			{Type: OpCreate2, Path: "/b", Stat: testStat},
			{Type: OpDelete},
			{Type: OpSetData, Stat: testStat},
			{Type: OpCheck},
		}}},
		{"MultiResponse/read", &MultiResponse{Results: []MultiResult{
			{Type: OpGetData, Data: []byte("d"), Stat: testStat},
			{Type: OpGetData, Data: nil},
			{Type: OpGetData, Data: []byte{}},
			{Type: OpGetChildren, Children: []string{"x", "y"}},
			{Type: OpGetChildren, Children: []string{}},
			{Type: OpGetChildren},
			{Type: OpError, Err: ErrNoAuth},
		}}},
		{"MultiResponse/failed", &MultiResponse{Results: []MultiResult{
			{Type: OpError, Err: ErrOk},
			{Type: OpError, Err: ErrNodeExists},
			{Type: OpError, Err: ErrRuntimeInconsistency},
		}}},
		{"MultiResponse/empty", &MultiResponse{}},
		{"MultiResult", &MultiResult{Type: OpCreate2, Path: "/x", Stat: testStat}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tt := range sampleRecords() {
		for _, alias := range []bool{false, true} {
			name := tt.name
			if alias {
				name += "/alias"
			}
			t.Run(name, func(t *testing.T) {
				in := encode(tt.rec)
				got, err := decodeAll(tt.rec, in, alias)
				if err != nil {
					t.Fatalf("decode %x: %v", in, err)
				}
				if !reflect.DeepEqual(got, tt.rec) {
					t.Errorf("round trip mismatch:\n got  %+v\n want %+v", got, tt.rec)
				}
				if again := encode(got); !bytes.Equal(again, in) {
					t.Errorf("re-encoding differs:\n got  %x\n want %x", again, in)
				}
			})
		}
	}
}

// TestDecodeIntoUsedRecord checks that Decode overwrites every field of a
// record that already holds a different value.
func TestDecodeIntoUsedRecord(t *testing.T) {
	samples := sampleRecords()
	for i, tt := range samples {
		t.Run(tt.name, func(t *testing.T) {
			// Find another sample of the same type to start from.
			var used Record
			for j, other := range samples {
				if j != i && reflect.TypeOf(other.rec) == reflect.TypeOf(tt.rec) {
					used = newLike(tt.rec)
					d := jute.NewDecoder(encode(other.rec))
					used.Decode(d)
					if d.Finish() != nil {
						t.Fatal(d.Err())
					}
					break
				}
			}
			if used == nil {
				t.Skip("only one sample of this type")
			}
			d := jute.NewDecoder(encode(tt.rec))
			used.Decode(d)
			if err := d.Finish(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(used, tt.rec) {
				t.Errorf("decode into used record:\n got  %+v\n want %+v", used, tt.rec)
			}
		})
	}
}

// TestTruncated decodes every proper prefix of every sample's encoding. Each
// must fail, never panic. The only exceptions are the connect records, whose
// trailing readOnly byte is optional: their prefix without it must decode to
// the same record with HasReadOnly false.
func TestTruncated(t *testing.T) {
	for _, tt := range sampleRecords() {
		t.Run(tt.name, func(t *testing.T) {
			in := encode(tt.rec)
			for n := range len(in) {
				for _, alias := range []bool{false, true} {
					got, err := decodeAll(tt.rec, in[:n:n], alias)
					if err != nil {
						continue
					}
					ok := false
					switch r := got.(type) {
					case *ConnectRequest:
						ok = n == len(in)-1 && !r.HasReadOnly && bytes.Equal(encode(r), in[:n])
					case *ConnectResponse:
						ok = n == len(in)-1 && !r.HasReadOnly && bytes.Equal(encode(r), in[:n])
					}
					if !ok {
						t.Errorf("prefix of %d/%d bytes decoded without error: %+v", n, len(in), got)
					}
				}
			}
		})
	}
}

// TestTrailingBytes checks that one extra byte after a record is left
// unread, so that Finish reports it.
func TestTrailingBytes(t *testing.T) {
	for _, tt := range sampleRecords() {
		t.Run(tt.name, func(t *testing.T) {
			in := append(encode(tt.rec), 0)
			switch r := tt.rec.(type) {
			case *ConnectRequest:
				if !r.HasReadOnly {
					t.Skip("the extra byte is read as readOnly")
				}
			case *ConnectResponse:
				if !r.HasReadOnly {
					t.Skip("the extra byte is read as readOnly")
				}
			}
			if _, err := decodeAll(tt.rec, in, false); !errors.Is(err, jute.ErrTrailingBytes) {
				t.Errorf("err = %v, want ErrTrailingBytes", err)
			}
		})
	}
}

// TestHugeLengths feeds records whose first length or count field claims far
// more data than the input holds. Decoding must fail with jute.ErrBadLength
// before allocating anything of that size.
func TestHugeLengths(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		in   string
	}{
		{"GetDataRequest path", &GetDataRequest{}, "7fffffff 00"},
		{"SetDataRequest data", &SetDataRequest{}, "00000001 2f 7ffffff0 00000000"},
		{"CreateRequest acl count", &CreateRequest{}, "00000001 2f ffffffff 7fffffff 00000000"},
		{"ConnectRequest passwd", &ConnectRequest{}, "00000000 0000000000000000 00000000 0000000000000000 7fffffff"},
		{"SetWatches2 vector", &SetWatches2{}, "0000000000000000 7fffffff 00000000"},
		{"SetWatches2 later vector", &SetWatches2{}, "0000000000000000 ffffffff ffffffff ffffffff ffffffff 10000000 00"},
		{"GetChildrenResponse", &GetChildrenResponse{}, "40000000 00000000"},
		{"WhoAmIResponse", &WhoAmIResponse{}, "7fffffff 00000000 00000000"},
		{"GetACLResponse", &GetACLResponse{}, "01000000 00000000 00000000 00000000"},
		{"multi getChildren result", &MultiResponse{}, "00000008 00 00000000 7fffffff"},
		{"multi create request", &MultiRequest{}, "00000001 00 ffffffff 7fffffff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := unhex(t, tt.in)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 5 {
				if _, err := decodeAll(tt.rec, in, false); !errors.Is(err, jute.ErrBadLength) {
					t.Fatalf("err = %v, want ErrBadLength", err)
				}
			}
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Errorf("rejecting a huge length allocated %d bytes", got)
			}
		})
	}
}

// TestNegativeLengths checks that negative lengths other than -1 (null) are
// rejected.
func TestNegativeLengths(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		in   string
	}{
		{"path", &SyncRequest{}, "fffffffe"},
		{"data", &SetSASLResponse{}, "80000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeAll(tt.rec, unhex(t, tt.in), false); !errors.Is(err, jute.ErrBadLength) {
				t.Errorf("err = %v, want ErrBadLength", err)
			}
		})
	}
}

func TestNullStringsDecodeEmpty(t *testing.T) {
	// A null path (length -1) decodes as "".
	got, err := decodeAll(&GetDataRequest{}, unhex(t, "ffffffff 01"), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&GetDataRequest{Path: "", Watch: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v want %+v", got, want)
	}
}

func TestReconfigNullStrings(t *testing.T) {
	tests := []struct {
		name string
		rec  ReconfigRequest
		want string
	}{
		{"all absent", ReconfigRequest{CurConfigID: -1}, `
			ffffffff           // joiningServers: null
			ffffffff           // leavingServers: null
			ffffffff           // newMembers: null
			ffffffffffffffff   // curConfigId -1`},
		{"leaving only", ReconfigRequest{LeavingServers: "2", CurConfigID: 5}, `
			ffffffff           // joiningServers: null
			00000001 32        // leavingServers: "2"
			ffffffff           // newMembers: null
			0000000000000005   // curConfigId`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := encode(&tt.rec), unhex(t, tt.want); !bytes.Equal(got, want) {
				t.Errorf("got %x want %x", got, want)
			}
		})
	}
	// An empty but present string decodes like null.
	got, err := decodeAll(&ReconfigRequest{}, unhex(t, "00000000 00000000 00000000 0000000000000001"), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&ReconfigRequest{CurConfigID: 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v want %+v", got, want)
	}
}

func TestTypeStrings(t *testing.T) {
	tests := []struct {
		v    interface{ String() string }
		want string
	}{
		{OpGetData, "OpGetData"},
		{OpCreateSession, "OpCreateSession"},
		{OpCode(999), "OpCode(999)"},
		{ErrNoNode, "ErrNoNode"},
		{ErrThrottled, "ErrThrottled"},
		{EventNodeDataChanged, "EventNodeDataChanged"},
		{StateExpired, "StateExpired"},
		{ModeContainer, "ModeContainer"},
		{WatcherAny, "WatcherAny"},
		{AddWatchPersistentRecursive, "AddWatchPersistentRecursive"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// Session ids print as ZooKeeper's getSessionIdHex: unsigned, lower-case,
// no leading zeros.
func TestSessionIDHex(t *testing.T) {
	for id, want := range map[int64]string{0: "0x0", 0x1a2b: "0x1a2b", -1: "0xffffffffffffffff", 0x0100000000000001: "0x100000000000001"} {
		if got := SessionIDHex(id); got != want {
			t.Errorf("SessionIDHex(%d) = %q, want %q", id, got, want)
		}
	}
}
