package proto

import (
	"bytes"
	"testing"

	"github.com/zkgo/zkgo/jute"
)

// The hot server paths: decode a read request body from a frame buffer with
// an aliasing decoder into a reused record, and encode a reply into a reused
// encoder. Both must not allocate.

var (
	benchGetData = &GetDataRequest{Path: "/app/config/service-0000000042", Watch: true}
	benchExists  = &ExistsRequest{Path: "/app/locks/lock-0000000007", Watch: true}
	benchSetData = &SetDataRequest{Path: "/app/config/service-0000000042", Data: bytes.Repeat([]byte("v"), 512), Version: 12}
	benchGetResp = &GetDataResponse{Data: bytes.Repeat([]byte("v"), 512), Stat: testStat}
)

func TestDecodeRequestsDoNotAllocate(t *testing.T) {
	tests := []struct {
		name string
		in   Record
		out  Record
	}{
		{"GetDataRequest", benchGetData, &GetDataRequest{}},
		{"ExistsRequest", benchExists, &ExistsRequest{}},
		{"SetDataRequest", benchSetData, &SetDataRequest{}},
		{"CreateRequest no ACL", &CreateRequest{Path: "/a", Data: []byte("x")}, &CreateRequest{}},
		{"RequestHeader", &RequestHeader{Xid: 1, Type: OpGetData}, &RequestHeader{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := encode(tt.in)
			d := jute.NewAliasingDecoder(in)
			if a := testing.AllocsPerRun(100, func() {
				d.Reset(in, true)
				tt.out.Decode(d)
				if d.Finish() != nil {
					t.Fatal(d.Err())
				}
			}); a != 0 {
				t.Errorf("%v allocs per decode", a)
			}
		})
	}
}

func TestEncodeResponseDoesNotAllocate(t *testing.T) {
	e := jute.NewEncoder(make([]byte, 0, 1024))
	if a := testing.AllocsPerRun(100, func() {
		e.Reset(e.Bytes())
		benchGetResp.Encode(e)
	}); a != 0 {
		t.Errorf("%v allocs per encode", a)
	}
}

func benchDecode(b *testing.B, in Record, out Record) {
	buf := encode(in)
	d := jute.NewAliasingDecoder(buf)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(buf, true)
		out.Decode(d)
		if d.Finish() != nil {
			b.Fatal(d.Err())
		}
	}
}

func BenchmarkDecodeGetDataRequest(b *testing.B) {
	benchDecode(b, benchGetData, &GetDataRequest{})
}

func BenchmarkDecodeExistsRequest(b *testing.B) {
	benchDecode(b, benchExists, &ExistsRequest{})
}

func BenchmarkDecodeSetDataRequest(b *testing.B) {
	benchDecode(b, benchSetData, &SetDataRequest{})
}

// BenchmarkDecodeSetDataRequestCopying is the copying decoder, for
// comparison: it allocates the path and the data.
func BenchmarkDecodeSetDataRequestCopying(b *testing.B) {
	buf := encode(benchSetData)
	var d jute.Decoder
	var r SetDataRequest
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(buf, false)
		r.Decode(&d)
	}
}

func BenchmarkEncodeGetDataResponse(b *testing.B) {
	e := jute.NewEncoder(make([]byte, 0, 1024))
	b.SetBytes(int64(len(encode(benchGetResp))))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(e.Bytes())
		benchGetResp.Encode(e)
	}
}

// BenchmarkAppendReplyGetDataResponse encodes a whole reply frame (length,
// reply header, body) into a reused encoder.
func BenchmarkAppendReplyGetDataResponse(b *testing.B) {
	e := jute.NewEncoder(make([]byte, 0, 1024))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset(e.Bytes())
		hdr := ReplyHeader{Xid: 42, Zxid: 0x100000007}
		AppendReply(e, &hdr, benchGetResp)
	}
	b.SetBytes(int64(e.Len()))
}

func BenchmarkDecodeMultiResponse(b *testing.B) {
	rsp := &MultiResponse{}
	for i := range 16 {
		rsp.Results = append(rsp.Results, MultiResult{Type: OpCreate2, Path: "/app/n" + string(rune('a'+i)), Stat: testStat})
	}
	buf := encode(rsp)
	d := jute.NewAliasingDecoder(buf)
	var out MultiResponse
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		d.Reset(buf, true)
		out.Decode(d)
	}
}

func BenchmarkReadFrame(b *testing.B) {
	var e jute.Encoder
	hdr := RequestHeader{Xid: 1, Type: OpGetData}
	AppendRequest(&e, &hdr, benchGetData)
	in := e.Bytes()
	r := bytes.NewReader(in)
	var h [FrameHeaderSize]byte
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(in)
		if _, err := ReadFrameInto(r, &h, buf, jute.DefaultMaxBuffer); err != nil {
			b.Fatal(err)
		}
	}
}
