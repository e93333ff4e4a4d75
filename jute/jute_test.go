package jute

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	// Each line may end in a // comment.
	var clean strings.Builder
	for line := range strings.Lines(s) {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func TestEncodePrimitives(t *testing.T) {
	tests := []struct {
		name string
		enc  func(e *Encoder)
		want string
	}{
		{"int zero", func(e *Encoder) { e.WriteInt(0) }, "00000000"},
		{"int one", func(e *Encoder) { e.WriteInt(1) }, "00000001"},
		{"int minus one", func(e *Encoder) { e.WriteInt(-1) }, "ffffffff"},
		{"int max", func(e *Encoder) { e.WriteInt(math.MaxInt32) }, "7fffffff"},
		{"int min", func(e *Encoder) { e.WriteInt(math.MinInt32) }, "80000000"},
		{"int big endian", func(e *Encoder) { e.WriteInt(0x01020304) }, "01020304"},
		{"long", func(e *Encoder) { e.WriteLong(0x0102030405060708) }, "0102030405060708"},
		{"long minus one", func(e *Encoder) { e.WriteLong(-1) }, "ffffffffffffffff"},
		{"long min", func(e *Encoder) { e.WriteLong(math.MinInt64) }, "8000000000000000"},
		{"bool true", func(e *Encoder) { e.WriteBool(true) }, "01"},
		{"bool false", func(e *Encoder) { e.WriteBool(false) }, "00"},
		{"null buffer", func(e *Encoder) { e.WriteBuffer(nil) }, "ffffffff"},
		{"empty buffer", func(e *Encoder) { e.WriteBuffer([]byte{}) }, "00000000"},
		{"buffer", func(e *Encoder) { e.WriteBuffer([]byte{0xde, 0xad}) }, "00000002 dead"},
		{"empty string", func(e *Encoder) { e.WriteString("") }, "00000000"},
		{"string", func(e *Encoder) { e.WriteString("/zk") }, "00000003 2f7a6b"},
		{"utf8 string", func(e *Encoder) { e.WriteString("é") }, "00000002 c3a9"},
		{"null vector", func(e *Encoder) { e.WriteVectorLen(-1) }, "ffffffff"},
		{"negative vector is null", func(e *Encoder) { e.WriteVectorLen(-7) }, "ffffffff"},
		{"empty vector", func(e *Encoder) { e.WriteVectorLen(0) }, "00000000"},
		{"vector len", func(e *Encoder) { e.WriteVectorLen(258) }, "00000102"},
		{"sequence", func(e *Encoder) {
			e.WriteInt(7)
			e.WriteBool(true)
			e.WriteString("a")
		}, "00000007 01 00000001 61"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Encoder
			tt.enc(&e)
			if want := unhex(t, tt.want); !bytes.Equal(e.Bytes(), want) {
				t.Errorf("got %x, want %x", e.Bytes(), want)
			}
			if e.Len() != len(e.Bytes()) {
				t.Errorf("Len %d != len(Bytes) %d", e.Len(), len(e.Bytes()))
			}
		})
	}
}

func TestEncoderAppendsAndResets(t *testing.T) {
	e := NewEncoder([]byte{0xaa})
	e.WriteInt(1)
	if want := unhex(t, "aa 00000001"); !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("NewEncoder does not append: got %x want %x", e.Bytes(), want)
	}
	buf := e.Bytes()
	e.Reset(buf)
	if e.Len() != 0 {
		t.Fatalf("Len after Reset = %d", e.Len())
	}
	e.WriteBool(true)
	if &e.Bytes()[0] != &buf[0] {
		t.Errorf("Reset did not reuse the buffer")
	}
}

func TestPutIntAt(t *testing.T) {
	var e Encoder
	e.WriteInt(0)
	e.WriteString("abc")
	e.PutIntAt(0, int32(e.Len()-4))
	if want := unhex(t, "00000007 00000003 616263"); !bytes.Equal(e.Bytes(), want) {
		t.Errorf("got %x want %x", e.Bytes(), want)
	}
}

func TestDecodePrimitives(t *testing.T) {
	in := unhex(t, `
		7fffffff                 // int max
		ffffffffffffffff         // long -1
		00 01 02                 // bools: false, true, true (any non-zero byte)
		ffffffff                 // null buffer
		00000000                 // empty buffer
		00000002 beef            // buffer
		ffffffff                 // null string
		00000000                 // empty string
		00000002 6869            // "hi"
		ffffffff                 // null vector
		00000000                 // empty vector
		00000002                 // vector of 2
		`)
	for _, alias := range []bool{false, true} {
		d := NewDecoder(in)
		if alias {
			d = NewAliasingDecoder(in)
		}
		if got := d.ReadInt(); got != math.MaxInt32 {
			t.Errorf("ReadInt = %d", got)
		}
		if got := d.ReadLong(); got != -1 {
			t.Errorf("ReadLong = %d", got)
		}
		for i, want := range []bool{false, true, true} {
			if got := d.ReadBool(); got != want {
				t.Errorf("ReadBool %d = %v want %v", i, got, want)
			}
		}
		if got := d.ReadBuffer(); got != nil {
			t.Errorf("null buffer = %#v, want nil", got)
		}
		if got := d.ReadBuffer(); got == nil || len(got) != 0 {
			t.Errorf("empty buffer = %#v, want non-nil empty", got)
		}
		if got := d.ReadBuffer(); !bytes.Equal(got, []byte{0xbe, 0xef}) {
			t.Errorf("buffer = %x", got)
		}
		if got := d.ReadString(); got != "" {
			t.Errorf("null string = %q", got)
		}
		if got := d.ReadString(); got != "" {
			t.Errorf("empty string = %q", got)
		}
		if got := d.ReadString(); got != "hi" {
			t.Errorf("string = %q", got)
		}
		if got := d.ReadVectorLen(4); got != -1 {
			t.Errorf("null vector = %d", got)
		}
		if got := d.ReadVectorLen(4); got != 0 {
			t.Errorf("empty vector = %d", got)
		}
		// Two elements of at least 1 byte need 2 bytes; none remain.
		if got := d.ReadVectorLen(1); got != 0 || !errors.Is(d.Err(), ErrBadLength) {
			t.Errorf("oversized vector = %d, err %v", got, d.Err())
		}
	}
}

func TestDecodeShortBuffer(t *testing.T) {
	tests := []struct {
		name string
		in   string
		read func(d *Decoder)
	}{
		{"int", "000000", func(d *Decoder) { d.ReadInt() }},
		{"long", "00000000000000", func(d *Decoder) { d.ReadLong() }},
		{"bool", "", func(d *Decoder) { d.ReadBool() }},
		{"buffer length", "0000", func(d *Decoder) { d.ReadBuffer() }},
		{"string length", "00", func(d *Decoder) { d.ReadString() }},
		{"vector length", "000000", func(d *Decoder) { d.ReadVectorLen(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(unhex(t, tt.in))
			tt.read(d)
			if !errors.Is(d.Err(), ErrShortBuffer) {
				t.Errorf("err = %v, want ErrShortBuffer", d.Err())
			}
		})
	}
}

func TestDecodeBadLength(t *testing.T) {
	tests := []struct {
		name string
		in   string
		read func(d *Decoder)
	}{
		{"buffer longer than input", "00000005 0102", func(d *Decoder) { d.ReadBuffer() }},
		{"string longer than input", "00000003 61", func(d *Decoder) { d.ReadString() }},
		{"huge buffer", "7fffffff", func(d *Decoder) { d.ReadBuffer() }},
		{"huge string", "7ffffff0 00", func(d *Decoder) { d.ReadString() }},
		{"negative buffer", "fffffffe", func(d *Decoder) { d.ReadBuffer() }},
		{"negative string", "80000000", func(d *Decoder) { d.ReadString() }},
		{"huge vector", "7fffffff 00000000", func(d *Decoder) { d.ReadVectorLen(4) }},
		{"vector elements too big", "00000002 0000000000000000", func(d *Decoder) { d.ReadVectorLen(5) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(unhex(t, tt.in))
			tt.read(d)
			if !errors.Is(d.Err(), ErrBadLength) {
				t.Errorf("err = %v, want ErrBadLength", d.Err())
			}
		})
	}
}

func TestVectorLenMinElemClamp(t *testing.T) {
	// minElem below 1 is treated as 1: a count of 3 needs 3 bytes.
	d := NewDecoder(unhex(t, "00000003 0000"))
	if n := d.ReadVectorLen(0); n != 0 || !errors.Is(d.Err(), ErrBadLength) {
		t.Errorf("n=%d err=%v", n, d.Err())
	}
	d = NewDecoder(unhex(t, "00000003 000000"))
	if n := d.ReadVectorLen(0); n != 3 || d.Err() != nil {
		t.Errorf("n=%d err=%v", n, d.Err())
	}
}

func TestHugeLengthDoesNotAllocate(t *testing.T) {
	in := unhex(t, "7fffffff 00")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		d := NewDecoder(in)
		if d.ReadBuffer() != nil || !errors.Is(d.Err(), ErrBadLength) {
			t.Fatalf("err = %v", d.Err())
		}
		d = NewDecoder(in)
		if d.ReadVectorLen(1) != 0 || !errors.Is(d.Err(), ErrBadLength) {
			t.Fatalf("err = %v", d.Err())
		}
	}
	runtime.ReadMemStats(&after)
	// Only the error values are allocated, never a 2 GiB buffer.
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("decoding a huge length allocated %d bytes", got)
	}
}

func TestStickyError(t *testing.T) {
	d := NewDecoder(unhex(t, "00000001 02"))
	if got := d.ReadInt(); got != 1 {
		t.Fatalf("ReadInt = %d", got)
	}
	d.ReadLong() // fails: 1 byte left
	first := d.Err()
	if !errors.Is(first, ErrShortBuffer) {
		t.Fatalf("err = %v", first)
	}
	off := d.Offset()
	// Every later read returns a zero value, consumes nothing, keeps the error.
	if d.ReadBool() || d.ReadInt() != 0 || d.ReadString() != "" || d.ReadBuffer() != nil || d.ReadVectorLen(1) != 0 {
		t.Errorf("read after error returned a non-zero value")
	}
	if d.Offset() != off || d.Remaining() != 1 {
		t.Errorf("reads after error consumed input: off %d remaining %d", d.Offset(), d.Remaining())
	}
	d.Fail(errors.New("later"))
	if d.Err() != first {
		t.Errorf("Fail replaced the first error: %v", d.Err())
	}
	if err := d.Finish(); err != first {
		t.Errorf("Finish = %v, want first error", err)
	}
}

func TestFail(t *testing.T) {
	boom := errors.New("boom")
	d := NewDecoder(unhex(t, "00000001"))
	d.Fail(boom)
	if d.ReadInt() != 0 || d.Err() != boom {
		t.Errorf("Fail is not sticky: %v", d.Err())
	}
}

func TestFinish(t *testing.T) {
	d := NewDecoder(unhex(t, "00000001 ff"))
	d.ReadInt()
	if d.Remaining() != 1 || d.Offset() != 4 {
		t.Fatalf("remaining %d offset %d", d.Remaining(), d.Offset())
	}
	if err := d.Finish(); !errors.Is(err, ErrTrailingBytes) {
		t.Errorf("Finish = %v, want ErrTrailingBytes", err)
	}
	if !errors.Is(d.Err(), ErrTrailingBytes) {
		t.Errorf("Finish did not record its error")
	}

	d = NewDecoder(unhex(t, "00000001"))
	d.ReadInt()
	if err := d.Finish(); err != nil {
		t.Errorf("Finish on consumed input = %v", err)
	}
}

func TestReset(t *testing.T) {
	d := NewDecoder(nil)
	d.ReadInt()
	if d.Err() == nil {
		t.Fatal("reading an empty input succeeded")
	}
	in := unhex(t, "00000002 6869")
	d.Reset(in, true)
	if d.Err() != nil || d.Offset() != 0 || d.Remaining() != len(in) {
		t.Fatalf("Reset did not clear state: err %v off %d", d.Err(), d.Offset())
	}
	s := d.ReadString()
	in[4] = 'H'
	if s != "Hi" {
		t.Errorf("Reset(alias=true) did not alias: %q", s)
	}
}

func TestAliasingVersusCopying(t *testing.T) {
	in := unhex(t, "00000002 6162 00000002 6364")
	mutate := func() { in[4], in[10] = 'X', 'Y' }

	d := NewDecoder(in)
	s, b := d.ReadString(), d.ReadBuffer()
	mutate()
	if s != "ab" || string(b) != "cd" {
		t.Errorf("copying decoder aliases input: %q %q", s, b)
	}

	in = unhex(t, "00000002 6162 00000002 6364")
	d = NewAliasingDecoder(in)
	s, b = d.ReadString(), d.ReadBuffer()
	mutate()
	if s != "Xb" || string(b) != "Yd" {
		t.Errorf("aliasing decoder copied: %q %q", s, b)
	}
	// An aliased buffer's capacity is clipped: appending must not clobber
	// the input that follows it.
	in = unhex(t, "00000001 61 7a")
	d = NewAliasingDecoder(in)
	b = d.ReadBuffer()
	_ = append(b, 'Q')
	if in[5] != 'z' {
		t.Errorf("append to aliased buffer overwrote input")
	}
}

func TestAliasingDecoderDoesNotAllocate(t *testing.T) {
	in := unhex(t, "00000004 2f612f62 00000003 010203 00000001")
	var d Decoder
	allocs := testing.AllocsPerRun(100, func() {
		d.Reset(in, true)
		_ = d.ReadString()
		_ = d.ReadBuffer()
		_ = d.ReadInt()
		if d.Finish() != nil {
			t.Fatal(d.Err())
		}
	})
	if allocs != 0 {
		t.Errorf("aliasing decode allocated %v times", allocs)
	}
}

func TestRoundTripPrimitives(t *testing.T) {
	var e Encoder
	e.WriteInt(-42)
	e.WriteLong(math.MaxInt64)
	e.WriteBool(true)
	e.WriteBuffer(nil)
	e.WriteBuffer([]byte{})
	e.WriteBuffer([]byte("data"))
	e.WriteString("päth")
	e.WriteVectorLen(-1)
	e.WriteVectorLen(0)

	d := NewDecoder(e.Bytes())
	if v := d.ReadInt(); v != -42 {
		t.Errorf("int %d", v)
	}
	if v := d.ReadLong(); v != math.MaxInt64 {
		t.Errorf("long %d", v)
	}
	if v := d.ReadBool(); !v {
		t.Errorf("bool false")
	}
	if v := d.ReadBuffer(); v != nil {
		t.Errorf("null buffer %#v", v)
	}
	if v := d.ReadBuffer(); v == nil || len(v) != 0 {
		t.Errorf("empty buffer %#v", v)
	}
	if v := d.ReadBuffer(); string(v) != "data" {
		t.Errorf("buffer %q", v)
	}
	if v := d.ReadString(); v != "päth" {
		t.Errorf("string %q", v)
	}
	if v := d.ReadVectorLen(1); v != -1 {
		t.Errorf("null vector %d", v)
	}
	if v := d.ReadVectorLen(1); v != 0 {
		t.Errorf("empty vector %d", v)
	}
	if err := d.Finish(); err != nil {
		t.Error(err)
	}
}

func TestZeroDecoder(t *testing.T) {
	var d Decoder
	if d.ReadInt() != 0 || !errors.Is(d.Err(), ErrShortBuffer) {
		t.Errorf("zero Decoder: %v", d.Err())
	}
}

// Java's jute reads a vector count below -1 as an empty vector.
func TestNegativeVectorIsEmpty(t *testing.T) {
	d := NewDecoder(unhex(t, "fffffffe"))
	if n := d.ReadVectorLen(1); n != 0 || d.Err() != nil {
		t.Fatalf("ReadVectorLen = %d, %v; want 0, nil", n, d.Err())
	}
}

// A buffer-aliasing decoder returns buffers inside its input and strings
// of their own.
func TestBufferAliasingDecoder(t *testing.T) {
	var e Encoder
	e.WriteBuffer([]byte("data"))
	e.WriteString("/path")
	in := e.Bytes()
	d := NewBufferAliasingDecoder(in)
	b, s := d.ReadBuffer(), d.ReadString()
	if d.Err() != nil || string(b) != "data" || s != "/path" {
		t.Fatalf("%q %q %v", b, s, d.Err())
	}
	in[4] = 'D'         // the buffer's first byte
	in[len(in)-1] = 'X' // the string's last byte
	if string(b) != "Data" || s != "/path" {
		t.Errorf("after changing the input: buffer %q (want it shared), string %q (want it copied)", b, s)
	}
	d.Reset(in, false)
	if b := d.ReadBuffer(); &b[0] == &in[4] {
		t.Error("Reset kept aliasing buffers")
	}
}

// Extend past BigBuffer takes a buffer of the pool's size class and
// keeps what was encoded before; PutBig takes back only the pool's own
// sizes.
func TestExtendBig(t *testing.T) {
	var e Encoder
	e.WriteInt(7)
	b := e.Extend(BigBuffer + 10)
	if len(b) != BigBuffer+10 || e.Len() != 4+BigBuffer+10 {
		t.Fatalf("extended by %d to %d", len(b), e.Len())
	}
	if c := cap(e.Bytes()); c != 2*BigBuffer {
		t.Fatalf("capacity %d, want the size class %d", c, 2*BigBuffer)
	}
	if got := NewDecoder(e.Bytes()).ReadInt(); got != 7 {
		t.Fatalf("the bytes before the extension: %d", got)
	}
	for _, n := range []int{BigBuffer, BigBuffer + 1, 3 << 20} {
		if g := GetBig(n); len(g) != 0 || cap(g) < n || cap(g)&(cap(g)-1) != 0 {
			t.Fatalf("GetBig(%d): len %d cap %d", n, len(g), cap(g))
		}
	}
	PutBig(make([]byte, 0, BigBuffer+1)) // not a size class: ignored
	PutBig(e.Bytes())
}
