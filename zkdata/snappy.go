package zkdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
)

// ZooKeeper's ".snappy" snapshots are written by snappy-java's
// SnappyOutputStream, whose stream format is its own (neither Snappy's
// framing format nor a bare block):
//
//	stream = header chunk*
//	header = magic (8 bytes: 0x82 "SNAPPY" 0x00) | version int (1) |
//	         compatible version int (1)
//	chunk  = length int | a Snappy block (raw format) of that many bytes
//
// SnappyOutputStream cuts its input into 32 KiB blocks. SnappyInputStream
// also accepts a second header where a chunk length is expected (streams
// written one after the other): the length then reads as the first four
// magic bytes. The input ends cleanly before a chunk length. The reader
// below does the same, decoding blocks with klauspost/compress/snappy.

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10
	// maxXerialChunk bounds a chunk, compressed or not. snappy-java's
	// writer never makes blocks this large; the bound keeps a forged
	// length from costing memory.
	maxXerialChunk = 16 << 20
)

var errXerial = errors.New("bad snappy-java stream")

// xerialReader decompresses a snappy-java stream.
type xerialReader struct {
	r       io.Reader
	hdr     [xerialHeaderSize]byte
	chunk   []byte
	out     []byte
	pos     int
	started bool
	done    bool
}

func newXerialReader(r io.Reader) *xerialReader { return &xerialReader{r: r} }

func (x *xerialReader) Read(p []byte) (int, error) {
	for x.pos == len(x.out) {
		if x.done {
			return 0, io.EOF
		}
		if err := x.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, x.out[x.pos:])
	x.pos += n
	return n, nil
}

// fill decodes the next chunk into out.
func (x *xerialReader) fill() error {
	if !x.started {
		x.started = true
		if _, err := io.ReadFull(x.r, x.hdr[:]); err != nil || !bytes.Equal(x.hdr[:8], xerialMagic) {
			return fmt.Errorf("%w: no snappy-java header", errXerial)
		}
	}
	var lb [4]byte
	n, err := io.ReadFull(x.r, lb[:])
	if n < 4 {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			x.done = true
			return nil
		}
		return err
	}
	size := int32(binary.BigEndian.Uint32(lb[:]))
	if bytes.Equal(lb[:], xerialMagic[:4]) {
		// A concatenated stream: the rest of its header, then chunks.
		if _, err := io.ReadFull(x.r, x.hdr[4:]); err != nil {
			return fmt.Errorf("%w: cut concatenated header", errXerial)
		}
		if !bytes.Equal(x.hdr[4:8], xerialMagic[4:]) || int32(binary.BigEndian.Uint32(x.hdr[8:12])) < 1 {
			return fmt.Errorf("%w: bad concatenated header", errXerial)
		}
		x.out, x.pos = x.out[:0], 0
		return nil
	}
	if size < 0 || size > maxXerialChunk {
		return fmt.Errorf("%w: chunk of %d bytes", errXerial, size)
	}
	if cap(x.chunk) < int(size) {
		x.chunk = make([]byte, size)
	}
	x.chunk = x.chunk[:size]
	if _, err := io.ReadFull(x.r, x.chunk); err != nil {
		return fmt.Errorf("%w: chunk cut short", errXerial)
	}
	dl, err := snappy.DecodedLen(x.chunk)
	if err != nil || dl > maxXerialChunk {
		return fmt.Errorf("%w: bad block (%d bytes decoded, %v)", errXerial, dl, err)
	}
	if cap(x.out) < dl {
		x.out = make([]byte, dl)
	}
	out, err := snappy.Decode(x.out[:dl], x.chunk)
	if err != nil {
		return fmt.Errorf("%w: %v", errXerial, err)
	}
	x.out, x.pos = out, 0
	return nil
}

// xerialWriter compresses into a snappy-java stream, as
// SnappyOutputStream with its default block size writes it.
type xerialWriter struct {
	w     io.Writer
	in    []byte
	enc   []byte
	wrote bool
	err   error
}

func newXerialWriter(w io.Writer) *xerialWriter {
	return &xerialWriter{w: w, in: make([]byte, 0, xerialBlockSize)}
}

func (x *xerialWriter) header() {
	if x.wrote || x.err != nil {
		return
	}
	x.wrote = true
	var h [xerialHeaderSize]byte
	copy(h[:], xerialMagic)
	binary.BigEndian.PutUint32(h[8:], 1)
	binary.BigEndian.PutUint32(h[12:], 1)
	_, x.err = x.w.Write(h[:])
}

func (x *xerialWriter) Write(p []byte) (int, error) {
	x.header()
	n := 0
	for len(p) > 0 && x.err == nil {
		m := min(len(p), xerialBlockSize-len(x.in))
		x.in = append(x.in, p[:m]...)
		p, n = p[m:], n+m
		if len(x.in) == xerialBlockSize {
			x.flushBlock()
		}
	}
	return n, x.err
}

func (x *xerialWriter) flushBlock() {
	if len(x.in) == 0 || x.err != nil {
		return
	}
	x.enc = snappy.Encode(x.enc[:cap(x.enc)], x.in)
	var lb [4]byte
	binary.BigEndian.PutUint32(lb[:], uint32(len(x.enc)))
	if _, x.err = x.w.Write(lb[:]); x.err == nil {
		_, x.err = x.w.Write(x.enc)
	}
	x.in = x.in[:0]
}

// Close writes the last block (and the header of an empty stream).
func (x *xerialWriter) Close() error {
	x.header()
	x.flushBlock()
	return x.err
}
