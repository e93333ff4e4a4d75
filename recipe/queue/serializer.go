package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The data of a queue node is Curator's ItemSerializer envelope around the
// values it carries (one for Put, several for PutMulti):
//
//	int32   version, 0x00010001
//	repeated, once per value:
//	  byte    0x01 (ITEM_OPCODE)
//	  int32   length of the value
//	  [length]byte the value
//	byte    0x02 (EOF_OPCODE)
//
// Integers are big-endian (Java's DataOutputStream). Each value is what a
// Curator QueueSerializer<T> makes of one item: serialize(T) gives the
// bytes a Go consumer receives, deserialize(byte[]) reads the bytes a Go
// producer put. A Java peer with a QueueSerializer over byte[] (the
// identity) or String (UTF-8) exchanges values with Go unchanged.
const (
	envelopeVersion = 0x00010001
	opItem          = 0x01
	opEOF           = 0x02
)

// ErrCorrupt: a queue node's data is not a valid envelope.
var ErrCorrupt = errors.New("queue: corrupt item")

// Encode wraps values in Curator's item envelope.
func Encode(values [][]byte) []byte {
	n := 5
	for _, v := range values {
		n += 5 + len(v)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, envelopeVersion)
	for _, v := range values {
		b = append(b, opItem)
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return append(b, opEOF)
}

// Decode reads Curator's item envelope. The values share data's memory.
// Like Curator's reader, it ignores bytes after the EOF marker; a missing
// marker, an unknown opcode, a negative length or a length past the end
// are ErrCorrupt.
func Decode(data []byte) ([][]byte, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(data))
	}
	if v := binary.BigEndian.Uint32(data); v != envelopeVersion {
		return nil, fmt.Errorf("%w: version %#x, want %#x", ErrCorrupt, v, envelopeVersion)
	}
	rest := data[4:]
	var values [][]byte
	for {
		if len(rest) == 0 {
			return nil, fmt.Errorf("%w: no end marker", ErrCorrupt)
		}
		op := rest[0]
		rest = rest[1:]
		if op == opEOF {
			return values, nil
		}
		if op != opItem {
			return nil, fmt.Errorf("%w: opcode %#x", ErrCorrupt, op)
		}
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: truncated length", ErrCorrupt)
		}
		size := int32(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if size < 0 || int64(size) > int64(len(rest)) {
			return nil, fmt.Errorf("%w: value of %d bytes, %d left", ErrCorrupt, size, len(rest))
		}
		values = append(values, rest[:size:size])
		rest = rest[size:]
	}
}
