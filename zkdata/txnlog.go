package zkdata

import (
	"errors"
	"fmt"
	"hash/adler32"
	"io"
)

// logEnd says how a log ended.
type logEnd int

const (
	endClean logEnd = iota // EOF or zero padding at a record boundary
	endTorn                // a record cut short, or not ended by 'B'
)

// readLog reads the transaction log r (named name) as ZooKeeper's
// FileTxnIterator does and calls fn with every transaction, in file order,
// and the offset of its record. It returns how the log ended and the offset
// of the end. A checksum mismatch, an impossible length or a transaction
// that does not decode is a *FormatError wrapping ErrBadLog; an error from
// fn is returned as is.
func readLog(r io.Reader, name string, l limits, fn func(t *txn, at int64) error) (logEnd, int64, error) {
	cr := newCheckedReader(r)
	bad := func(at int64, limit bool, format string, args ...any) error {
		return &FormatError{File: name, Offset: at, Msg: fmt.Sprintf(format, args...), kind: ErrBadLog, limit: limit}
	}
	magic, version, _ := cr.int32(), cr.int32(), cr.int64()
	if cr.err != nil {
		if cr.short {
			// A log cut inside its header holds no transaction.
			return endTorn, 0, nil
		}
		return 0, 0, fmt.Errorf("zkdata: reading %s: %w", name, cr.err)
	}
	if magic != logMagic {
		return 0, 0, bad(0, false, "magic %#08x, want %#08x (\"ZKLG\")", uint32(magic), logMagic)
	}
	if version != fileVersion {
		return 0, 0, bad(4, false, "version %d, want %d", version, fileVersion)
	}
	for {
		at := cr.off
		if cr.atEOF() {
			return endClean, at, nil
		}
		sum := cr.int64()
		n := cr.int32()
		if cr.err != nil {
			return ended(cr, at, name)
		}
		// Logs are preallocated with zeros: a zero length is the end.
		// A -1 (null) length ends the log too in ZooKeeper's reader.
		if n == 0 || n == -1 {
			if sum == 0 && n == 0 {
				return endClean, at, nil
			}
			return endTorn, at, nil
		}
		if n < 0 || int(n) > l.buf {
			return 0, at, bad(at+8, true, "record length %d outside [1, %d]", n, l.buf)
		}
		b := cr.read(int(n))
		if b == nil {
			return ended(cr, at, name)
		}
		// Check the checksum on the entry before the reader's buffer is
		// reused for the end marker.
		ok := int64(adler32.Checksum(b)) == sum
		var t txn
		var derr error
		if ok {
			t, derr = decodeTxn(b)
		}
		eor := cr.read(1)
		if eor == nil {
			return ended(cr, at, name)
		}
		if eor[0] != 'B' {
			return endTorn, at, nil
		}
		if !ok {
			return 0, at, bad(at, false, "checksum mismatch: Adler-32 %#x recorded, entry of %d bytes sums to %#x", sum, n, adler32.Checksum(b))
		}
		if derr != nil {
			return 0, at, bad(at+12, false, "%v", derr)
		}
		if err := fn(&t, at); err != nil {
			return 0, at, err
		}
	}
}

// ended handles the reader's error inside a record at at: input ending
// there is a torn tail.
func ended(cr *checkedReader, at int64, name string) (logEnd, int64, error) {
	if cr.short || errors.Is(cr.err, errEOF) {
		return endTorn, at, nil
	}
	return 0, at, fmt.Errorf("zkdata: reading %s: %w", name, cr.err)
}
