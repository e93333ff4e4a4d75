package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/zkgo/zkgo/jute"
)

// On the TCP connection every record (the connect handshake, each request
// and each reply) travels in a frame: a 4-byte big-endian body length
// followed by that many bytes of body.

// FrameHeaderSize is the size of a frame's length prefix.
const FrameHeaderSize = 4

// Framing errors. Both are returned wrapped with the offending length; test
// with errors.Is.
var (
	// ErrFrameTooLarge means a frame's length exceeds the reader's limit
	// (ZooKeeper's jute.maxbuffer).
	ErrFrameTooLarge = errors.New("proto: frame too large")
	// ErrNegativeFrameLength means a frame's length prefix is negative.
	ErrNegativeFrameLength = errors.New("proto: negative frame length")
)

// FrameLen decodes a frame's length prefix and checks 0 <= length <= limit.
// It is the check ReadFrame applies; callers that buffer input themselves use
// it before allocating a body.
func FrameLen(hdr [FrameHeaderSize]byte, limit int) (int, error) {
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 {
		return 0, fmt.Errorf("%w: %d", ErrNegativeFrameLength, n)
	}
	if int64(n) > int64(limit) {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, limit)
	}
	return int(n), nil
}

// ReadFrame reads one frame from r and returns its body in a newly allocated
// slice. hdr is scratch space for the length prefix; pass a pointer to a
// long-lived array (for example a field of the connection) so that ReadFrame
// allocates nothing but the body; a nil hdr is allowed.
//
// The length is checked (0 <= length <= limit) before the body is allocated.
// ReadFrame returns io.EOF if r ends cleanly before the first byte of the
// frame and io.ErrUnexpectedEOF if it ends inside the frame.
func ReadFrame(r io.Reader, hdr *[FrameHeaderSize]byte, limit int) ([]byte, error) {
	return ReadFrameInto(r, hdr, nil, limit)
}

// ReadFrameInto is ReadFrame reading the body into buf when it fits
// (cap(buf) >= length); otherwise it allocates. The returned slice aliases buf
// in the first case, so records decoded from it by an aliasing decoder are
// only valid until buf is reused.
func ReadFrameInto(r io.Reader, hdr *[FrameHeaderSize]byte, buf []byte, limit int) ([]byte, error) {
	if hdr == nil {
		hdr = new([FrameHeaderSize]byte)
	}
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err // io.EOF only when no byte was read
	}
	n, err := FrameLen(*hdr, limit)
	if err != nil {
		return nil, err
	}
	if buf != nil && cap(buf) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// BeginFrame appends a placeholder length prefix to e and returns its
// offset, to be passed to EndFrame once the frame's body has been encoded.
// Frames may be appended back to back in one Encoder.
func BeginFrame(e *jute.Encoder) int {
	off := e.Len()
	e.WriteInt(0)
	return off
}

// EndFrame patches the length prefix at off (from BeginFrame) with the number
// of bytes encoded since, and returns that body length.
func EndFrame(e *jute.Encoder, off int) int {
	n := e.Len() - off - FrameHeaderSize
	e.PutIntAt(off, int32(n))
	return n
}

// AppendFrame appends to e one frame holding hdr followed by body; either may
// be nil. It returns the body length (without the prefix).
func AppendFrame(e *jute.Encoder, hdr, body Record) int {
	off := BeginFrame(e)
	if hdr != nil {
		hdr.Encode(e)
	}
	if body != nil {
		body.Encode(e)
	}
	return EndFrame(e, off)
}

// AppendReply appends to e a reply frame: hdr followed by body (nil for
// none). Unlike AppendFrame it takes the header by concrete type, so a
// header built on the caller's stack stays there.
func AppendReply(e *jute.Encoder, hdr *ReplyHeader, body Record) int {
	off := BeginFrame(e)
	hdr.Encode(e)
	if body != nil {
		body.Encode(e)
	}
	return EndFrame(e, off)
}

// AppendRequest appends to e a request frame: hdr followed by body (nil for
// none).
func AppendRequest(e *jute.Encoder, hdr *RequestHeader, body Record) int {
	off := BeginFrame(e)
	hdr.Encode(e)
	if body != nil {
		body.Encode(e)
	}
	return EndFrame(e, off)
}
