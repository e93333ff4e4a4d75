package faultnet

import (
	"bytes"
	"encoding/binary"
)

// Raft transport constants the splitter recognises (raftnode/tcp.go).
const (
	// RaftMagic starts the payload of the hello frame of a raft message
	// stream: the only connections whose frames the frame faults touch.
	RaftMagic = "zkgoraft"
	// MaxFrameBytes bounds a frame the splitter assembles. A longer
	// length turns the direction into an opaque stream for good: the
	// length is never trusted beyond it, and frames are assembled as
	// their bytes arrive, never allocated from the length.
	MaxFrameBytes = 64 << 20

	// maxHelloBytes bounds the hello frame's length (raftnode's
	// maxControlFrame): a first length above it cannot be a hello.
	maxHelloBytes = 1 << 10
	// helloToOffset is where the hello payload holds the receiver's id
	// (magic 8, version 4, cluster 8, sender 8). Receiver 0 marks a
	// probe (raftnode/probe.go), which stays opaque.
	helloToOffset = 8 + 4 + 8 + 8
	// frameCapHint caps the first allocation of a frame's buffer; it
	// grows as the frame's bytes arrive.
	frameCapHint = 64 << 10
)

// unit is what a direction's reader hands its writer: bytes to deliver
// together (or an end of stream), and when.
type unit struct {
	kind unitKind
	// b is owned by the unit (never the reader's buffer).
	b []byte
	// first marks the first frame of its direction (the hello, or the
	// ack): frame faults never touch it.
	first bool
}

// splitter cuts one direction's byte stream into units. It is a pure
// state machine, fed by that direction's reader goroutine only.
//
// The dialer's direction starts in modeUndecided: it holds the first
// bytes while they can still be a raft hello (a length of at most
// maxHelloBytes whose payload starts with RaftMagic) and decides as soon
// as they cannot, or when the whole hello is in: modeFrames for a raft
// message stream, modeOpaque for anything else (snapshot streams, probes,
// clients, TLS). Held bytes are never lost: deciding opaque emits them as
// a chunk. The listener's direction is given its mode before its first
// bytes (see conn.go): the listener speaks only after the hello, so the
// dialer's direction has decided by then.
type splitter struct {
	mode streamMode
	// sawFirst: the direction's first frame has been emitted.
	sawFirst bool

	// held is the undecided prefix (modeUndecided), or the frame being
	// assembled, header included (modeFrames).
	held []byte
	// need is how many more bytes the frame in held wants (modeFrames,
	// held not empty); 0 while its header is incomplete.
	need int
}

// newSplitter returns a splitter starting in mode (modeUndecided for the
// dialer's direction).
func newSplitter(mode streamMode) *splitter { return &splitter{mode: mode} }

// feed cuts p into units and hands each to emit, in stream order. p is
// only read during the call; emitted units own their bytes. Bytes that do
// not complete a unit are held for the next feed (or flush).
func (s *splitter) feed(p []byte, emit func(unit)) {
	for len(p) > 0 {
		switch s.mode {
		case modeOpaque:
			emit(unit{kind: unitChunk, b: bytes.Clone(p)})
			return
		case modeUndecided:
			p = s.feedUndecided(p, emit)
		case modeFrames:
			p = s.feedFrames(p, emit)
		default:
			panic("faultnet: splitter in " + s.mode.String())
		}
	}
}

// flush emits whatever is held as a chunk: the source has ended, so the
// destination gets every byte the source sent.
func (s *splitter) flush(emit func(unit)) {
	if len(s.held) > 0 {
		emit(unit{kind: unitChunk, b: s.held})
	}
	s.held, s.need = nil, 0
}

// feedUndecided takes from p the bytes the classification needs, decides
// if it can, and returns the rest of p.
func (s *splitter) feedUndecided(p []byte, emit func(unit)) []byte {
	want := 4 - len(s.held)
	if len(s.held) >= 4 {
		want = 4 + int(binary.BigEndian.Uint32(s.held)) - len(s.held)
	}
	take := min(want, len(p))
	s.held = append(s.held, p[:take]...)
	p = p[take:]
	switch s.classify() {
	case modeOpaque:
		s.mode = modeOpaque
		emit(unit{kind: unitChunk, b: s.held})
		s.held = nil
	case modeFrames:
		s.mode = modeFrames
		s.sawFirst = true
		emit(unit{kind: unitFrame, b: s.held, first: true})
		s.held = nil
	}
	return p
}

// classify looks at the held prefix: modeUndecided while it may still be
// a raft hello that is not a probe's.
func (s *splitter) classify() streamMode {
	h := s.held
	// The smallest length the known high-order bytes allow.
	var lenBytes [4]byte
	copy(lenBytes[:], h)
	n := int(binary.BigEndian.Uint32(lenBytes[:]))
	if n > maxHelloBytes {
		return modeOpaque
	}
	if len(h) < 4 {
		return modeUndecided
	}
	if n < helloToOffset+8 {
		return modeOpaque
	}
	got := h[4:]
	if k := min(len(got), len(RaftMagic)); !bytes.Equal(got[:k], []byte(RaftMagic[:k])) {
		return modeOpaque
	}
	if len(got) < n {
		return modeUndecided
	}
	if binary.BigEndian.Uint64(got[helloToOffset:]) == 0 {
		return modeOpaque // a probe: one request and one answer
	}
	return modeFrames
}

// feedFrames assembles frames from p and returns the rest of p: empty,
// or everything after a length over MaxFrameBytes (the direction is
// opaque from there).
func (s *splitter) feedFrames(p []byte, emit func(unit)) []byte {
	if s.need == 0 {
		take := min(4-len(s.held), len(p))
		s.held = append(s.held, p[:take]...)
		p = p[take:]
		if len(s.held) < 4 {
			return p
		}
		n := binary.BigEndian.Uint32(s.held)
		if n > MaxFrameBytes {
			s.mode = modeOpaque
			emit(unit{kind: unitChunk, b: s.held})
			s.held = nil
			return p
		}
		if n > 0 {
			s.need = int(n)
			held := make([]byte, 4, 4+min(int(n), frameCapHint))
			copy(held, s.held)
			s.held = held
			return p
		}
	} else {
		take := min(s.need, len(p))
		s.held = append(s.held, p[:take]...)
		p = p[take:]
		s.need -= take
		if s.need > 0 {
			return p
		}
	}
	emit(unit{kind: unitFrame, b: s.held, first: !s.sawFirst})
	s.sawFirst = true
	s.held = nil
	return p
}
