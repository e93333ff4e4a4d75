package zkdata

import (
	"bufio"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"slices"
)

// errEOF marks input that ended inside a value. Readers turn it into a
// FormatError (snapshots) or a torn tail (logs).
var errEOF = errors.New("input ends early")

// checkedReader reads jute values from a stream, keeping the Adler-32 of
// every byte consumed (as java.util.zip.CheckedInputStream does) and the
// offset for error messages. Errors are sticky: after the first, reads
// return zero values and err tells.
type checkedReader struct {
	br    *bufio.Reader
	sum   hash.Hash32
	off   int64
	buf   []byte
	err   error
	short bool // err is errEOF
}

func newCheckedReader(r io.Reader) *checkedReader {
	return &checkedReader{br: bufio.NewReaderSize(r, 64<<10), sum: adler32.New()}
}

// read returns the next n bytes, valid until the next read. The buffer grows
// only as bytes arrive, so a forged length costs at most about twice the
// input behind it.
func (r *checkedReader) read(n int) []byte {
	if r.err != nil {
		return nil
	}
	buf := r.buf[:0]
	for len(buf) < n {
		chunk := n - len(buf)
		if len(buf)+chunk > cap(buf) {
			chunk = min(chunk, max(len(buf), 64<<10))
		}
		buf = slices.Grow(buf, chunk)
		m, err := io.ReadFull(r.br, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			r.buf = buf
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				r.err, r.short = errEOF, true
			} else {
				r.err = err
			}
			return nil
		}
	}
	r.buf = buf
	r.sum.Write(buf)
	r.off += int64(n)
	return buf
}

func (r *checkedReader) int32() int32 {
	b := r.read(4)
	if b == nil {
		return 0
	}
	return int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
}

func (r *checkedReader) int64() int64 {
	b := r.read(8)
	if b == nil {
		return 0
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return int64(v)
}

// buffer reads a length-prefixed buffer (-1: nil). A length over limit, or
// negative other than -1, sets err to a limit error.
func (r *checkedReader) buffer(limit int, what string) []byte {
	n := r.int32()
	if r.err != nil {
		return nil
	}
	if n == -1 {
		return nil
	}
	if n < 0 || int64(n) > int64(limit) {
		r.err = &limitError{what: what, n: int64(n), limit: int64(limit)}
		return nil
	}
	if n == 0 {
		return []byte{} // empty, not null
	}
	b := r.read(int(n))
	if b == nil {
		return nil
	}
	return slices.Clone(b)
}

// str reads a length-prefixed string (-1: "", as the null string).
func (r *checkedReader) str(limit int, what string) string {
	n := r.int32()
	if r.err != nil || n == -1 {
		return ""
	}
	if n < 0 || int64(n) > int64(limit) {
		r.err = &limitError{what: what, n: int64(n), limit: int64(limit)}
		return ""
	}
	return string(r.read(int(n)))
}

// atEOF reports whether the input is exhausted (nothing consumed).
func (r *checkedReader) atEOF() bool {
	if r.err != nil {
		return false
	}
	_, err := r.br.Peek(1)
	return err == io.EOF
}

// limitError is a length or count over a limit.
type limitError struct {
	what     string
	n, limit int64
}

func (e *limitError) Error() string {
	return fmt.Sprintf("%s %d outside [0, %d]", e.what, e.n, e.limit)
}

// checkedWriter writes jute values through a bufio.Writer, keeping the
// Adler-32 of every byte written (java.util.zip.CheckedOutputStream).
type checkedWriter struct {
	bw  *bufio.Writer
	sum hash.Hash32
	b   [8]byte
	err error
}

func newCheckedWriter(w io.Writer) *checkedWriter {
	return &checkedWriter{bw: bufio.NewWriterSize(w, 64<<10), sum: adler32.New()}
}

func (w *checkedWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	w.sum.Write(p)
	_, w.err = w.bw.Write(p)
}

func (w *checkedWriter) int32(v int32) {
	w.b[0], w.b[1], w.b[2], w.b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	w.write(w.b[:4])
}

func (w *checkedWriter) int64(v int64) {
	for i := range 8 {
		w.b[i] = byte(v >> (56 - 8*i))
	}
	w.write(w.b[:8])
}

func (w *checkedWriter) buffer(p []byte) {
	if p == nil {
		w.int32(-1)
		return
	}
	w.int32(int32(len(p)))
	w.write(p)
}

func (w *checkedWriter) str(s string) {
	w.int32(int32(len(s)))
	if w.err == nil {
		w.sum.Write([]byte(s))
		_, w.err = w.bw.WriteString(s)
	}
}

// seal writes the Adler-32 of everything written so far as a long, then
// the string "/" (SnapStream.sealStream).
func (w *checkedWriter) seal() {
	w.int64(int64(w.sum.Sum32()))
	w.str("/")
}
