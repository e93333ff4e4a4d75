// Package jute implements the primitive encoding used by Apache ZooKeeper's
// wire protocol and on-disk records ("jute"): big-endian fixed-width
// integers, one-byte booleans, length-prefixed byte buffers and UTF-8
// strings, and length-prefixed vectors. A length of -1 encodes a null
// buffer, string or vector.
//
// Decoder never trusts a length or count read from its input: every length
// is checked against the bytes that remain before anything is allocated, so
// a decoder over a frame of at most jute.maxbuffer bytes never allocates more
// than that frame's size. Errors are sticky: after the first error every read
// returns a zero value and Err reports the first error.
package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unsafe"
)

// DefaultMaxBuffer is ZooKeeper's default jute.maxbuffer (0xfffff bytes): the
// largest frame a server or client accepts.
const DefaultMaxBuffer = 0xfffff

// Errors reported by Decoder.Err.
var (
	// ErrShortBuffer means the input ended before the record did.
	ErrShortBuffer = errors.New("jute: short buffer")
	// ErrBadLength means a length or count field is negative (other than
	// -1 for null) or larger than the bytes that remain.
	ErrBadLength = errors.New("jute: bad length")
	// ErrTrailingBytes means a record was decoded but bytes remained where
	// the caller required the input to be consumed exactly.
	ErrTrailingBytes = errors.New("jute: trailing bytes")
)

// Encoder appends jute-encoded values to a byte slice. The zero value is
// ready to use. Encoding never fails.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an encoder that appends to buf[:len(buf)].
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns the encoded bytes. The slice aliases the encoder's buffer.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len reports the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the encoder, keeping its buffer for reuse.
func (e *Encoder) Reset(buf []byte) { e.buf = buf[:0] }

// Extend appends n bytes for the caller to fill, and returns them. A
// buffer that must grow past BigBuffer comes from the pool of large
// buffers (GetBig).
func (e *Encoder) Extend(n int) []byte {
	off := len(e.buf)
	if need := off + n; need > cap(e.buf) && need >= BigBuffer {
		b := GetBig(need)
		e.buf = append(b[:0], e.buf...)
	}
	e.buf = slices.Grow(e.buf, n)[:off+n]
	return e.buf[off:]
}

// BigBuffer is the size from which Extend takes buffers from the pool of
// large buffers: a reply listing a wide parent's children (19 MB for
// 1,000,000 names) then reuses the memory of the previous one instead of
// allocating anew, and collecting, for every call.
const BigBuffer = 1 << 20

// bigPools holds large buffers by size class: class i holds buffers of
// capacity 2^i bytes. A sync.Pool drops what is not reused within two
// collections, so a burst of large replies leaves nothing behind.
var bigPools [40]sync.Pool

func bigClass(n int) int { return bits.Len(uint(n - 1)) }

// GetBig returns an empty buffer of capacity at least n (n ≥ BigBuffer),
// from the pool if it has one of n's size class.
func GetBig(n int) []byte {
	c := bigClass(n)
	if c >= len(bigPools) {
		return make([]byte, 0, n)
	}
	if b, ok := bigPools[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<c)
}

// PutBig gives a buffer that the caller no longer uses to the pool of
// large buffers; buffers under BigBuffer, or of an odd size, are left to
// the collector.
func PutBig(b []byte) {
	c := bigClass(cap(b))
	if cap(b) < BigBuffer || c >= len(bigPools) || cap(b) != 1<<c {
		return
	}
	b = b[:0]
	bigPools[c].Put(&b)
}

// WriteInt appends a 4-byte big-endian integer.
func (e *Encoder) WriteInt(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// WriteLong appends an 8-byte big-endian integer.
func (e *Encoder) WriteLong(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// WriteBool appends one byte, 1 for true and 0 for false.
func (e *Encoder) WriteBool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// WriteBuffer appends a length-prefixed byte buffer; a nil slice is encoded
// as null (length -1), an empty non-nil slice as length 0.
func (e *Encoder) WriteBuffer(b []byte) {
	if b == nil {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// WriteString appends a length-prefixed UTF-8 string. Jute has no way to
// tell an empty string from a null one on the encoding side used by the Java
// client for strings, so the empty string is encoded with length 0.
func (e *Encoder) WriteString(s string) {
	e.WriteInt(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// WriteVectorLen appends a vector's element count; n < 0 encodes null.
func (e *Encoder) WriteVectorLen(n int) {
	if n < 0 {
		e.WriteInt(-1)
		return
	}
	e.WriteInt(int32(n))
}

// PutIntAt overwrites the 4 bytes at offset off with v; it is used to patch
// a frame length after the frame body has been encoded.
func (e *Encoder) PutIntAt(off int, v int32) {
	binary.BigEndian.PutUint32(e.buf[off:off+4], uint32(v))
}

// Decoder reads jute-encoded values from a byte slice.
//
// By default strings and buffers are copied out of the input, so decoded
// records stay valid after the input is reused. A decoder made with
// NewAliasingDecoder returns strings and buffers that alias the input: no
// allocation, but the caller must never modify or reuse the input while any
// decoded value is alive. The server uses aliasing over a per-frame buffer
// that it never reuses.
type Decoder struct {
	buf   []byte
	off   int
	err   error
	alias bool
	// aliasBufs: buffers alias the input, strings are copied
	// (NewBufferAliasingDecoder).
	aliasBufs bool
}

// NewDecoder returns a copying decoder over buf.
func NewDecoder(buf []byte) *Decoder { return &Decoder{buf: buf} }

// NewAliasingDecoder returns a decoder whose strings and buffers alias buf.
func NewAliasingDecoder(buf []byte) *Decoder { return &Decoder{buf: buf, alias: true} }

// NewBufferAliasingDecoder returns a decoder whose buffers alias buf and
// whose strings are copied: strings (paths) may be kept by whatever
// decoded them (map keys) without keeping buf alive, while buffers (node
// data), which the caller copies anyway, cost no allocation.
func NewBufferAliasingDecoder(buf []byte) *Decoder { return &Decoder{buf: buf, aliasBufs: true} }

// Reset points the decoder at a new input and clears its error.
func (d *Decoder) Reset(buf []byte, alias bool) {
	d.buf, d.off, d.err, d.alias, d.aliasBufs = buf, 0, nil, alias, false
}

// Err returns the first error met, or nil.
func (d *Decoder) Err() error { return d.err }

// Fail records err as the decoder's error unless one is already recorded.
// Record decoders use it to report semantic errors (bad enum values).
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Remaining reports the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset reports the number of bytes consumed.
func (d *Decoder) Offset() int { return d.off }

// Finish returns ErrTrailingBytes if unread bytes remain and no earlier
// error was recorded, and the decoder's error otherwise.
func (d *Decoder) Finish() error {
	if d.err == nil && d.off != len(d.buf) {
		d.err = fmt.Errorf("%w: %d unread", ErrTrailingBytes, len(d.buf)-d.off)
	}
	return d.err
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.buf)-d.off {
		d.err = ErrShortBuffer
		return nil
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

// ReadInt reads a 4-byte big-endian integer.
func (d *Decoder) ReadInt() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// ReadLong reads an 8-byte big-endian integer.
func (d *Decoder) ReadLong() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// ReadBool reads one byte; any non-zero value is true, as in Java's
// DataInput.readBoolean.
func (d *Decoder) ReadBool() bool {
	b := d.take(1)
	if b == nil {
		return false
	}
	return b[0] != 0
}

// readLen reads a length prefix and checks it against the remaining input.
// It returns -1 for null.
func (d *Decoder) readLen() int {
	n := d.ReadInt()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 || int(n) > len(d.buf)-d.off {
		d.err = fmt.Errorf("%w: %d with %d bytes left", ErrBadLength, n, len(d.buf)-d.off)
		return 0
	}
	return int(n)
}

// ReadBuffer reads a length-prefixed byte buffer; null decodes as nil.
func (d *Decoder) ReadBuffer() []byte {
	n := d.readLen()
	if n < 0 || d.err != nil {
		return nil
	}
	b := d.take(n)
	if d.alias || d.aliasBufs || b == nil {
		return b
	}
	out := make([]byte, n)
	copy(out, b)
	return out
}

// ReadString reads a length-prefixed string; null decodes as "".
func (d *Decoder) ReadString() string {
	n := d.readLen()
	if n <= 0 || d.err != nil {
		return ""
	}
	b := d.take(n)
	if b == nil {
		return ""
	}
	if d.alias {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// ReadVectorLen reads a vector's element count and checks that count
// elements of at least minElem bytes each fit in the remaining input, so the
// caller may allocate count elements safely. Null decodes as -1.
func (d *Decoder) ReadVectorLen(minElem int) int {
	n := d.ReadInt()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 {
		// Java's jute reads any other negative count as an empty vector.
		return 0
	}
	if minElem < 1 {
		minElem = 1
	}
	if int64(n)*int64(minElem) > int64(len(d.buf)-d.off) {
		d.err = fmt.Errorf("%w: vector of %d with %d bytes left", ErrBadLength, n, len(d.buf)-d.off)
		return 0
	}
	return int(n)
}
