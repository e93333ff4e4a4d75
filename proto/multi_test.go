package proto

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/zkgo/zkgo/jute"
)

func TestMultiRequestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty input", ``, jute.ErrShortBuffer},
		{"no end header", `00000002 00 ffffffff 00000002 2f61 ffffffff`, jute.ErrShortBuffer},
		{"partial end header", `ffffffff 01 ffff`, jute.ErrShortBuffer},
		{"unknown op", `00000063 00 ffffffff 00000000`, ErrBadMultiOp},
		{"nested multi", `0000000e 00 ffffffff ffffffff 01 ffffffff`, ErrBadMultiOp},
		{"error type without done", `ffffffff 00 ffffffff`, ErrBadMultiOp},
		{"sync is not a multi op", `00000009 00 ffffffff 00000001 2f`, ErrBadMultiOp},
		{"mixed write then read", `
			00000002 00 ffffffff 00000002 2f61 ffffffff // delete /a
			00000004 00 ffffffff 00000002 2f61 00       // getData /a
			ffffffff 01 ffffffff`, ErrMixedMulti},
		{"mixed read then write", `
			00000008 00 ffffffff 00000001 2f 00         // getChildren /
			0000000d 00 ffffffff 00000001 2f 00000000   // check /
			ffffffff 01 ffffffff`, ErrMixedMulti},
		{"bad sub-record", `00000001 00 ffffffff 00000010 2f`, jute.ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r MultiRequest
			d := jute.NewDecoder(unhex(t, tt.in))
			r.Decode(d)
			if !errors.Is(d.Err(), tt.want) {
				t.Errorf("err = %v, want %v", d.Err(), tt.want)
			}
			if r.Ops != nil {
				t.Errorf("Ops = %+v after error, want nil", r.Ops)
			}
		})
	}
}

// TestMultiEndHeader checks that, like ZooKeeper, decoders stop at the first
// header with Done set whatever its type and err.
func TestMultiEndHeader(t *testing.T) {
	in := unhex(t, `
		00000002 00 ffffffff 00000002 2f61 00000001 // delete /a version 1
		00000005 07 00000000                        // done (any non-zero byte), odd type/err
		ffffffff                                    // left unread`)
	var r MultiRequest
	d := jute.NewDecoder(in)
	r.Decode(d)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	want := []MultiOp{{OpDelete, &DeleteRequest{Path: "/a", Version: 1}}}
	if !reflect.DeepEqual(r.Ops, want) {
		t.Errorf("Ops = %+v", r.Ops)
	}
	if d.Remaining() != 4 {
		t.Errorf("decoder read past the end header: %d left", d.Remaining())
	}

	var rsp MultiResponse
	d = jute.NewDecoder(unhex(t, `00000002 00 00000000 00000000 01 00000000`))
	rsp.Decode(d)
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
	if want := []MultiResult{{Type: OpDelete}}; !reflect.DeepEqual(rsp.Results, want) {
		t.Errorf("Results = %+v", rsp.Results)
	}
}

func TestMultiResponseDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"empty input", ``, jute.ErrShortBuffer},
		{"no end header", `00000002 00 00000000`, jute.ErrShortBuffer},
		{"truncated body", `00000005 00 00000000 0000`, jute.ErrShortBuffer},
		{"unknown type", `00000063 00 00000000 ffffffff 01 ffffffff`, ErrBadMultiOp},
		// ZooKeeper never sends these types in a multi response: create2,
		// createContainer and createTTL results are all reported as create2.
		{"createContainer result", `00000013 00 00000000 ffffffff 01 ffffffff`, ErrBadMultiOp},
		{"createTTL result", `00000015 00 00000000 ffffffff 01 ffffffff`, ErrBadMultiOp},
		{"exists result", `00000003 00 00000000 ffffffff 01 ffffffff`, ErrBadMultiOp},
		{"bad children vector", `00000008 00 00000000 00000005 00000000`, jute.ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rsp := MultiResponse{Results: make([]MultiResult, 1, 4)}
			d := jute.NewDecoder(unhex(t, tt.in))
			rsp.Decode(d)
			if !errors.Is(d.Err(), tt.want) {
				t.Errorf("err = %v, want %v", d.Err(), tt.want)
			}
			if rsp.Results != nil {
				t.Errorf("Results = %+v after error, want nil", rsp.Results)
			}
		})
	}
}

// TestMultiErrorCodeFromBody checks that an error result's code comes from
// its ErrorResponse body, as in ZooKeeper, not from the header.
func TestMultiErrorCodeFromBody(t *testing.T) {
	var rsp MultiResponse
	d := jute.NewDecoder(unhex(t, `ffffffff 00 00000000 ffffff9b ffffffff 01 ffffffff`))
	rsp.Decode(d)
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
	if want := []MultiResult{{Type: OpError, Err: ErrNoNode}}; !reflect.DeepEqual(rsp.Results, want) {
		t.Errorf("Results = %+v", rsp.Results)
	}
}

// TestMultiManyOps checks that the decode loop is bounded by the input, not
// by a count: a long run of 9-byte delete results decodes fully and a run
// without the end header fails.
func TestMultiManyOps(t *testing.T) {
	const n = 50000
	var e jute.Encoder
	for range n {
		h := MultiHeader{Type: OpDelete}
		h.Encode(&e)
	}
	body := e.Bytes()
	var rsp MultiResponse
	d := jute.NewAliasingDecoder(body)
	rsp.Decode(d)
	if !errors.Is(d.Err(), jute.ErrShortBuffer) {
		t.Fatalf("no end header: err = %v", d.Err())
	}
	end := multiEnd
	end.Encode(&e)
	d = jute.NewAliasingDecoder(e.Bytes())
	rsp.Decode(d)
	if err := d.Finish(); err != nil || len(rsp.Results) != n {
		t.Fatalf("err %v, %d results", err, len(rsp.Results))
	}
}

func TestMultiResultEncodeNormalizes(t *testing.T) {
	tests := []struct {
		name string
		in   MultiResult
		want MultiResult // after a round trip
	}{
		{"createContainer as create2",
			MultiResult{Type: OpCreateContainer, Path: "/c", Stat: testStat},
			MultiResult{Type: OpCreate2, Path: "/c", Stat: testStat}},
		{"createTTL as create2",
			MultiResult{Type: OpCreateTTL, Path: "/t", Stat: testStat},
			MultiResult{Type: OpCreate2, Path: "/t", Stat: testStat}},
		{"deleteContainer as delete",
			MultiResult{Type: OpDeleteContainer},
			MultiResult{Type: OpDelete}},
		{"unused fields dropped",
			MultiResult{Type: OpDelete, Err: ErrNoNode, Path: "/x", Data: []byte{1}, Children: []string{"a"}, Stat: testStat},
			MultiResult{Type: OpDelete}},
		{"unknown type as error with its code",
			MultiResult{Type: OpSync, Err: ErrNoAuth},
			MultiResult{Type: OpError, Err: ErrNoAuth}},
		{"unknown type without code",
			MultiResult{Type: OpExists},
			MultiResult{Type: OpError, Err: ErrMarshallingError}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rsp := MultiResponse{Results: []MultiResult{tt.in}}
			got, err := decodeAll(&rsp, encode(&rsp), false)
			if err != nil {
				t.Fatal(err)
			}
			if want := (&MultiResponse{Results: []MultiResult{tt.want}}); !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestMultiResultSingle(t *testing.T) {
	r := MultiResult{Type: OpSetData, Stat: testStat}
	var got MultiResult
	d := jute.NewDecoder(encode(&r))
	got.Decode(d)
	if err := d.Finish(); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("got %+v err %v", got, err)
	}
	// An end header is not a result.
	end := multiEnd
	d = jute.NewDecoder(encode(&end))
	got.Decode(d)
	if !errors.Is(d.Err(), ErrBadMultiOp) {
		t.Errorf("end header: err = %v", d.Err())
	}
}

func TestMultiRequestEncodeNilReq(t *testing.T) {
	r := MultiRequest{Ops: []MultiOp{{Type: OpDelete}, {Type: OpCheck}}}
	want := unhex(t, `
		00000002 00 ffffffff 00000000 00000000 // delete "" version 0
		0000000d 00 ffffffff 00000000 00000000 // check "" version 0
		ffffffff 01 ffffffff`)
	if got := encode(&r); !bytes.Equal(got, want) {
		t.Errorf("got %x want %x", got, want)
	}
}

func TestMultiRequestValidate(t *testing.T) {
	tests := []struct {
		name string
		ops  []MultiOp
		want error
	}{
		{"empty", nil, nil},
		{"txn", []MultiOp{{OpCreate2, &CreateRequest{}}, {OpCreateTTL, &CreateTTLRequest{}}, {OpCheck, &CheckVersionRequest{}}}, nil},
		{"read", []MultiOp{{OpGetData, &GetDataRequest{}}, {OpGetChildren, &GetChildrenRequest{}}}, nil},
		{"bad type", []MultiOp{{OpSync, &SyncRequest{}}}, ErrBadMultiOp},
		{"nil record", []MultiOp{{OpDelete, nil}}, ErrBadMultiOp},
		{"wrong record", []MultiOp{{OpCreateTTL, &CreateRequest{}}}, ErrBadMultiOp},
		{"wrong record 2", []MultiOp{{OpGetChildren, &GetChildren2Request{}}}, ErrBadMultiOp},
		{"mixed", []MultiOp{{OpDelete, &DeleteRequest{}}, {OpGetData, &GetDataRequest{}}}, ErrMixedMulti},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := MultiRequest{Ops: tt.ops}
			if err := r.Validate(); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Errorf("Validate = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestMultiRequestIsRead(t *testing.T) {
	tests := []struct {
		name string
		ops  []MultiOp
		want bool
	}{
		{"empty", nil, false},
		{"read", []MultiOp{{OpGetData, &GetDataRequest{}}, {OpGetChildren, &GetChildrenRequest{}}}, true},
		{"txn", []MultiOp{{OpDelete, &DeleteRequest{}}}, false},
		{"mixed", []MultiOp{{OpGetData, &GetDataRequest{}}, {OpDelete, &DeleteRequest{}}}, false},
	}
	for _, tt := range tests {
		if got := (&MultiRequest{Ops: tt.ops}).IsRead(); got != tt.want {
			t.Errorf("%s: IsRead = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMultiOpKinds(t *testing.T) {
	for op := OpCode(-20); op < 120; op++ {
		txn, read := IsMultiTxnOp(op), IsMultiReadOp(op)
		rec := NewMultiOpRequest(op)
		if (rec != nil) != (txn || read) || (txn && read) {
			t.Errorf("%v: txn %v read %v record %T", op, txn, read, rec)
		}
		if rec != nil && !multiOpMatches(op, rec) {
			t.Errorf("%v: NewMultiOpRequest returned %T, which does not match", op, rec)
		}
	}
	for _, op := range []OpCode{OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpCheck} {
		if !IsMultiTxnOp(op) {
			t.Errorf("%v is a multi op", op)
		}
	}
	for _, op := range []OpCode{OpGetData, OpGetChildren} {
		if !IsMultiReadOp(op) {
			t.Errorf("%v is a multiRead op", op)
		}
	}
}

// TestMultiResponseReuse checks that decoding into a MultiResponse reuses its
// slice and leaves no stale field from the previous contents.
func TestMultiResponseReuse(t *testing.T) {
	first := MultiResponse{Results: []MultiResult{
		{Type: OpGetData, Data: []byte("old"), Stat: testStat},
		{Type: OpGetChildren, Children: []string{"old"}},
	}}
	second := MultiResponse{Results: []MultiResult{{Type: OpCheck}, {Type: OpCreate, Path: "/n"}}}
	var r MultiResponse
	d := jute.NewDecoder(encode(&first))
	r.Decode(d)
	p := &r.Results[0]
	d = jute.NewDecoder(encode(&second))
	r.Decode(d)
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, second) {
		t.Errorf("got %+v", r)
	}
	if &r.Results[0] != p {
		t.Errorf("Results not reused")
	}
}
