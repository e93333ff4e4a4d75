package proto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/zkgo/zkgo/jute"
)

// Fuzz targets. Each decodes arbitrary input and checks that decoding never
// panics, that the copying and aliasing decoders agree, and that a record
// decoded without error re-encodes to bytes that decode to the same value and
// re-encode identically (the encoding of a decoded value is canonical).
// Seed inputs are added from the golden and sample records below and from
// testdata/fuzz/<FuzzName>/.

// checkRecord runs the decode/re-encode checks on in for records of proto's
// type and reports whether in decoded successfully.
func checkRecord(t *testing.T, proto Record, in []byte) bool {
	t.Helper()
	got, err := decodeAll(proto, in, false)
	aliased, aerr := decodeAll(proto, in, true)
	if (err == nil) != (aerr == nil) {
		t.Fatalf("%T: copying decoder err %v, aliasing decoder err %v", proto, err, aerr)
	}
	if err != nil {
		return false
	}
	if !reflect.DeepEqual(got, aliased) {
		t.Fatalf("%T: copying and aliasing decoders disagree:\n %+v\n %+v", proto, got, aliased)
	}
	enc := encode(got)
	again, err := decodeAll(proto, enc, false)
	if err != nil {
		t.Fatalf("%T: re-encoded %x does not decode: %v (from %+v)", proto, enc, err, got)
	}
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("%T: re-decoded value differs:\n got  %+v\n want %+v", proto, again, got)
	}
	if enc2 := encode(again); !bytes.Equal(enc2, enc) {
		t.Fatalf("%T: encoding not stable:\n %x\n %x", proto, enc, enc2)
	}
	return true
}

// addSamples adds the encoding of every sample and golden record accepted by
// keep to f's seed corpus, prefixed by prefix.
func addSamples(f *testing.F, keep func(Record) ([]byte, bool)) {
	for _, s := range sampleRecords() {
		if p, ok := keep(s.rec); ok {
			f.Add(append(p, encode(s.rec)...))
		}
	}
	for _, g := range goldenTests {
		if p, ok := keep(g.rec); ok {
			f.Add(append(p, encode(g.rec)...))
		}
	}
}

func opPrefix(op OpCode) []byte { return binary.BigEndian.AppendUint32(nil, uint32(op)) }

func FuzzConnectRequest(f *testing.F) {
	addSamples(f, func(r Record) ([]byte, bool) {
		switch r.(type) {
		case *ConnectRequest, *ConnectResponse:
			return nil, true
		}
		return nil, false
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if checkRecord(t, &ConnectRequest{}, in) {
			var r ConnectRequest
			r.Decode(jute.NewDecoder(in))
			if r.HasReadOnly != (len(in) == 4+8+4+8+4+len(r.Passwd)+1) {
				t.Fatalf("HasReadOnly %v for %d bytes", r.HasReadOnly, len(in))
			}
		}
		checkRecord(t, &ConnectResponse{}, in)
	})
}

// requestTypes lists one opcode per request record type.
func requestOps() []OpCode {
	var ops []OpCode
	seen := map[reflect.Type]bool{}
	for op := OpCode(-20); op <= 120; op++ {
		if r := NewRequest(op); r != nil && !seen[reflect.TypeOf(r)] {
			seen[reflect.TypeOf(r)] = true
			ops = append(ops, op)
		}
	}
	return ops
}

// FuzzRequest: the first 4 bytes choose the opcode (via NewRequest), the rest
// is the request body.
func FuzzRequest(f *testing.F) {
	ops := requestOps()
	addSamples(f, func(r Record) ([]byte, bool) {
		for _, op := range ops {
			if reflect.TypeOf(NewRequest(op)) == reflect.TypeOf(r) {
				return opPrefix(op), true
			}
		}
		return nil, false
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		op := OpCode(binary.BigEndian.Uint32(in))
		if rec := NewRequest(op); rec != nil {
			checkRecord(t, rec, in[4:])
		}
	})
}

// FuzzResponse is FuzzRequest for response bodies (via NewResponse).
func FuzzResponse(f *testing.F) {
	addSamples(f, func(r Record) ([]byte, bool) {
		for op := OpCode(-20); op <= 120; op++ {
			if rec := NewResponse(op); rec != nil && reflect.TypeOf(rec) == reflect.TypeOf(r) {
				return opPrefix(op), true
			}
		}
		return nil, false
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		op := OpCode(binary.BigEndian.Uint32(in))
		if rec := NewResponse(op); rec != nil {
			checkRecord(t, rec, in[4:])
		}
	})
}

// FuzzMulti decodes its input both as a multi request and as a multi
// response.
func FuzzMulti(f *testing.F) {
	addSamples(f, func(r Record) ([]byte, bool) {
		switch r.(type) {
		case *MultiRequest, *MultiResponse:
			return nil, true
		}
		return nil, false
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if checkRecord(t, &MultiRequest{}, in) {
			var r MultiRequest
			r.Decode(jute.NewDecoder(in))
			if err := r.Validate(); err != nil {
				t.Fatalf("decoded multi request does not validate: %v", err)
			}
			if len(r.Ops) > len(in)/MultiHeaderSize {
				t.Fatalf("%d ops from %d bytes", len(r.Ops), len(in))
			}
		}
		checkRecord(t, &MultiResponse{}, in)
	})
}

func FuzzSetWatches2(f *testing.F) {
	addSamples(f, func(r Record) ([]byte, bool) {
		switch r.(type) {
		case *SetWatches, *SetWatches2:
			return nil, true
		}
		return nil, false
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		checkRecord(t, &SetWatches2{}, in)
		checkRecord(t, &SetWatches{}, in)
	})
}

// FuzzFrame reads frames (limit 4 KiB) until an error, decodes each body as
// a request (RequestHeader then the NewRequest body) and checks that the
// frame re-encodes identically through AppendRequest.
func FuzzFrame(f *testing.F) {
	var e jute.Encoder
	AppendRequest(&e, &RequestHeader{Xid: 1, Type: OpGetData}, &GetDataRequest{Path: "/a", Watch: true})
	AppendRequest(&e, &RequestHeader{Xid: XidPing, Type: OpPing}, nil)
	f.Add(e.Bytes())
	for _, g := range goldenTests {
		if _, ok := g.rec.(*MultiRequest); ok {
			e.Reset(nil)
			AppendRequest(&e, &RequestHeader{Xid: 2, Type: OpMulti}, g.rec)
			f.Add(e.Bytes())
		}
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x00, 0x00, 0x10, 0x01})
	const limit = 4096
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		var hdr [FrameHeaderSize]byte
		consumed := 0
		for {
			body, err := ReadFrame(r, &hdr, limit)
			if err != nil {
				switch {
				case errors.Is(err, io.EOF):
					if consumed != len(in) {
						t.Fatalf("EOF after %d of %d bytes", consumed, len(in))
					}
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrNegativeFrameLength):
				default:
					t.Fatalf("unexpected error %v", err)
				}
				if body != nil {
					t.Fatalf("body returned with error %v", err)
				}
				return
			}
			if len(body) > limit || !bytes.Equal(body, in[consumed+FrameHeaderSize:consumed+FrameHeaderSize+len(body)]) {
				t.Fatalf("bad body of %d bytes at %d", len(body), consumed)
			}
			frame := in[consumed : consumed+FrameHeaderSize+len(body)]
			consumed += len(frame)

			d := jute.NewAliasingDecoder(body)
			var h RequestHeader
			h.Decode(d)
			req := NewRequest(h.Type)
			if req != nil {
				req.Decode(d)
			}
			if d.Finish() != nil {
				continue
			}
			var e jute.Encoder
			AppendRequest(&e, &h, req)
			d2 := jute.NewDecoder(e.Bytes()[FrameHeaderSize:])
			var h2 RequestHeader
			h2.Decode(d2)
			req2 := NewRequest(h2.Type)
			if req2 != nil {
				req2.Decode(d2)
			}
			if err := d2.Finish(); err != nil || h2 != h || !reflect.DeepEqual(req2, req) {
				t.Fatalf("frame %x re-encoded as %x: err %v", frame, e.Bytes(), err)
			}
		}
	})
}
