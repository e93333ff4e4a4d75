package shared

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/zkgo/zkgo/zk"
)

// EncodeCount returns n as Curator's SharedCount stores it: 4 bytes,
// big-endian (ByteBuffer.putInt).
func EncodeCount(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// DecodeCount reads a SharedCount: the first 4 bytes, big-endian (as
// ByteBuffer.getInt, which ignores any further bytes). Fewer than 4 bytes
// are ErrCorrupt.
func DecodeCount(b []byte) (int32, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("%w: count of %d bytes, want 4", ErrCorrupt, len(b))
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// Count is a 32-bit integer shared through a node (Curator's SharedCount).
// Its methods are safe for concurrent use. A node whose data does not
// decode leaves Get at the last count that did, and is reported by an
// Event whose Err wraps ErrCorrupt.
type Count struct{ c *cell[int32] }

// NewCount returns the shared count at path; seed is written if the node
// does not exist when Start runs.
func NewCount(src zk.Sessions, path string, seed int32, opts ...Option) *Count {
	return &Count{c: newCell(src.Current(), path, seed, EncodeCount, DecodeCount, buildOptions(opts))}
}

// Start creates the node with the seed count if it does not exist (its
// missing parents as containers), reads it and starts following it.
func (c *Count) Start(ctx context.Context) error { return c.c.start(ctx) }

// Get returns the latest count seen (the seed before Start).
func (c *Count) Get() int32 { return c.c.versioned().Value }

// Versioned returns the latest count seen with its version and zxid, to
// pass to TrySet.
func (c *Count) Versioned() Versioned[int32] { return c.c.versioned() }

// Set writes n unconditionally.
func (c *Count) Set(ctx context.Context, n int32) error { return c.c.set(ctx, n) }

// TrySet writes n only if the node still holds prev; see Value.TrySet.
// A loop of Versioned and TrySet(prev, prev.Value+1) until it succeeds is
// a counter that never loses an increment.
func (c *Count) TrySet(ctx context.Context, prev Versioned[int32], n int32) (bool, error) {
	return c.c.trySet(ctx, prev, n)
}

// Events returns the stream of changes; see Value.Events.
func (c *Count) Events() <-chan Event[int32] { return c.c.eventStream() }

// Err returns why the Count stopped following its node, or nil.
func (c *Count) Err() error { return c.c.err() }

// Close stops following the node and closes Events. The node stays.
func (c *Count) Close() error {
	c.c.close()
	return nil
}
