package proto

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/zkgo/zkgo/jute"
)

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		limit   int
		want    []string // bodies, in hex
		wantErr error    // after the bodies
	}{
		{"one frame", `00000003 aabbcc`, 10, []string{"aabbcc"}, io.EOF},
		{"two frames", `00000001 aa 00000002 bbcc`, 10, []string{"aa", "bbcc"}, io.EOF},
		{"empty frame", `00000000`, 10, []string{""}, io.EOF},
		{"exactly the limit", `00000002 aabb`, 2, []string{"aabb"}, io.EOF},
		{"too large", `00000003 aabbcc`, 2, nil, ErrFrameTooLarge},
		{"huge", `7fffffff`, jute.DefaultMaxBuffer, nil, ErrFrameTooLarge},
		{"negative", `ffffffff`, 10, nil, ErrNegativeFrameLength},
		{"most negative", `80000000 00`, 10, nil, ErrNegativeFrameLength},
		{"no input", ``, 10, nil, io.EOF},
		{"partial header", `0000`, 10, nil, io.ErrUnexpectedEOF},
		{"partial body", `00000004 aabb`, 10, nil, io.ErrUnexpectedEOF},
		{"header only", `00000004`, 10, nil, io.ErrUnexpectedEOF},
		{"good then partial", `00000001 aa 000000`, 10, []string{"aa"}, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		for _, mode := range []string{"plain", "one byte reads", "into"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				var r io.Reader = bytes.NewReader(unhex(t, tt.in))
				if mode == "one byte reads" {
					r = iotest.OneByteReader(r)
				}
				var hdr [FrameHeaderSize]byte
				scratch := make([]byte, 0, 3)
				for i := 0; ; i++ {
					var body []byte
					var err error
					if mode == "into" {
						body, err = ReadFrameInto(r, &hdr, scratch, tt.limit)
					} else {
						body, err = ReadFrame(r, &hdr, tt.limit)
					}
					if err != nil {
						if i != len(tt.want) {
							t.Fatalf("error %v after %d frames, want %d", err, i, len(tt.want))
						}
						if !errors.Is(err, tt.wantErr) {
							t.Fatalf("err = %v, want %v", err, tt.wantErr)
						}
						if body != nil {
							t.Errorf("body %x returned with error", body)
						}
						return
					}
					if i >= len(tt.want) {
						t.Fatalf("unexpected frame %x", body)
					}
					if want := unhex(t, tt.want[i]); !bytes.Equal(body, want) {
						t.Errorf("frame %d = %x, want %x", i, body, want)
					}
					if body == nil {
						t.Errorf("frame %d: nil body", i)
					}
				}
			})
		}
	}
}

func TestReadFrameNilHeader(t *testing.T) {
	body, err := ReadFrame(bytes.NewReader(unhex(t, "00000001 7a")), nil, 1)
	if err != nil || string(body) != "z" {
		t.Errorf("body %q err %v", body, err)
	}
}

func TestReadFrameIntoReuses(t *testing.T) {
	buf := make([]byte, 8)
	var hdr [FrameHeaderSize]byte
	body, err := ReadFrameInto(bytes.NewReader(unhex(t, "00000002 6869")), &hdr, buf, 100)
	if err != nil || string(body) != "hi" || &body[0] != &buf[0] {
		t.Errorf("body %q err %v, reused %v", body, err, err == nil && &body[0] == &buf[0])
	}
}

func TestFrameLenErrorsMentionSize(t *testing.T) {
	_, err := FrameLen([4]byte{0, 0x10, 0, 0}, 0xfffff)
	if !errors.Is(err, ErrFrameTooLarge) || err.Error() != "proto: frame too large: 1048576 bytes, limit 1048575" {
		t.Errorf("err = %v", err)
	}
	_, err = FrameLen([4]byte{0xff, 0xff, 0xff, 0xfe}, 10)
	if !errors.Is(err, ErrNegativeFrameLength) || err.Error() != "proto: negative frame length: -2" {
		t.Errorf("err = %v", err)
	}
}

// TestReadFrameHugeLengthDoesNotAllocate checks that an oversized length is
// refused before the body is allocated.
func TestReadFrameHugeLengthDoesNotAllocate(t *testing.T) {
	in := unhex(t, "7fffffff 00")
	var hdr [FrameHeaderSize]byte
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := ReadFrame(bytes.NewReader(in), &hdr, jute.DefaultMaxBuffer); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("err = %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<16 {
		t.Errorf("refusing a huge frame allocated %d bytes", got)
	}
}

func TestAppendFrame(t *testing.T) {
	var e jute.Encoder
	e.WriteBool(true) // frames append after existing content
	n := AppendReply(&e, &ReplyHeader{Xid: 3, Zxid: 0x10, Err: ErrOk}, &GetDataResponse{Data: []byte("hi"), Stat: testStat})
	n2 := AppendRequest(&e, &RequestHeader{Xid: XidPing, Type: OpPing}, nil)
	n3 := AppendFrame(&e, nil, &ErrorResponse{Err: ErrNoNode})
	n4 := AppendFrame(&e, nil, nil)
	want := unhex(t, `
		01                                 // existing byte
		0000005a                           // frame length 90 = 16 + 6 + 68
		00000003 0000000000000010 00000000 // reply header
		00000002 6869                      // data "hi"`+testStatHex+`
		00000008 fffffffe 0000000b         // ping request frame
		00000004 ffffff9b                  // error response frame
		00000000                           // empty frame`)
	if !bytes.Equal(e.Bytes(), want) {
		t.Errorf("got  %x\nwant %x", e.Bytes(), want)
	}
	if n != 90 || n2 != 8 || n3 != 4 || n4 != 0 {
		t.Errorf("lengths %d %d %d %d", n, n2, n3, n4)
	}

	// The frames read back.
	r := bytes.NewReader(e.Bytes()[1:])
	var hdr [FrameHeaderSize]byte
	body, err := ReadFrame(r, &hdr, jute.DefaultMaxBuffer)
	if err != nil {
		t.Fatal(err)
	}
	d := jute.NewDecoder(body)
	var rh ReplyHeader
	var gd GetDataResponse
	rh.Decode(d)
	gd.Decode(d)
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
	if rh.Xid != 3 || !reflect.DeepEqual(gd, GetDataResponse{Data: []byte("hi"), Stat: testStat}) {
		t.Errorf("read back %+v %+v", rh, gd)
	}
}

func TestBeginEndFrame(t *testing.T) {
	var e jute.Encoder
	off := BeginFrame(&e)
	e.WriteString("abc")
	if n := EndFrame(&e, off); n != 7 {
		t.Errorf("EndFrame = %d", n)
	}
	if want := unhex(t, "00000007 00000003 616263"); !bytes.Equal(e.Bytes(), want) {
		t.Errorf("got %x", e.Bytes())
	}
}

func TestAppendReplyAllocs(t *testing.T) {
	var e jute.Encoder
	body := &GetDataResponse{Data: make([]byte, 100), Stat: testStat}
	e.Reset(make([]byte, 0, 512))
	allocs := testing.AllocsPerRun(100, func() {
		e.Reset(e.Bytes())
		hdr := ReplyHeader{Xid: 1, Zxid: 2}
		AppendReply(&e, &hdr, body)
	})
	if allocs != 0 {
		t.Errorf("AppendReply allocated %v times", allocs)
	}
}

func TestReadFrameAllocs(t *testing.T) {
	in := unhex(t, "00000002 6869")
	r := bytes.NewReader(in)
	var hdr [FrameHeaderSize]byte
	buf := make([]byte, 16)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		if _, err := ReadFrameInto(r, &hdr, buf, 100); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadFrameInto allocated %v times", allocs)
	}
}
