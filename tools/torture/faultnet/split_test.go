package faultnet

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// splitAll feeds stream to a new splitter in chunks of at most step
// bytes, flushes it, and returns the units.
func splitAll(mode streamMode, stream []byte, step int) (units []unit, final streamMode) {
	s := newSplitter(mode)
	emit := func(u unit) { units = append(units, u) }
	for len(stream) > 0 {
		k := min(step, len(stream))
		s.feed(stream[:k], emit)
		stream = stream[k:]
	}
	final = s.mode
	s.flush(emit)
	return units, final
}

func concat(units []unit) []byte {
	var b []byte
	for _, u := range units {
		b = append(b, u.b...)
	}
	return b
}

func TestSplitterClassifies(t *testing.T) {
	raft, _ := msgs(1, 3)
	oversized := binary.BigEndian.AppendUint32(nil, MaxFrameBytes+1)
	tests := []struct {
		name   string
		stream []byte
		want   streamMode
		frames int // whole frames emitted
	}{
		{"raft stream", append(hello(RaftMagic, 1, 2), raft...), modeFrames, 4},
		{"raft hello alone", hello(RaftMagic, 1, 2), modeFrames, 1},
		{"probe", append(hello(RaftMagic, 1, 0), frame([]byte("req"))...), modeOpaque, 0},
		{"snapshot stream", append(hello("zkgosnp2", 1, 2), raft...), modeOpaque, 0},
		{"old snapshot stream", append(hello("zkgosnap", 1, 2), raft...), modeOpaque, 0},
		{"long first length (TLS record)", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 1, 2, 3}, modeOpaque, 0},
		{"first length over a hello's", append(binary.BigEndian.AppendUint32(nil, maxHelloBytes+1), RaftMagic...), modeOpaque, 0},
		{"first frame too short for a hello", frame([]byte(RaftMagic)), modeOpaque, 0},
		{"client connect", frame(make([]byte, 44)), modeOpaque, 0},
		{"oversized frame after the hello", append(append(hello(RaftMagic, 1, 2), raft...), append(oversized, "tail"...)...), modeOpaque, 4},
		{"empty frame", append(hello(RaftMagic, 1, 2), frame(nil)...), modeFrames, 2},
		{"partial hello", hello(RaftMagic, 1, 2)[:20], modeUndecided, 0},
	}
	for _, tt := range tests {
		for _, step := range []int{1, 3, 7, len(tt.stream)} {
			units, mode := splitAll(modeUndecided, tt.stream, step)
			if mode != tt.want {
				t.Errorf("%s, step %d: mode %v, want %v", tt.name, step, mode, tt.want)
			}
			if got := concat(units); !bytes.Equal(got, tt.stream) {
				t.Errorf("%s, step %d: units carry %x, want %x", tt.name, step, got, tt.stream)
			}
			frames := 0
			for i, u := range units {
				if u.kind == unitFrame {
					frames++
					if u.first != (i == 0) {
						t.Errorf("%s, step %d: unit %d first=%v", tt.name, step, i, u.first)
					}
				}
			}
			if frames != tt.frames {
				t.Errorf("%s, step %d: %d frames, want %d", tt.name, step, frames, tt.frames)
			}
		}
	}
}

// The listener's direction is given its mode: the ack is its first
// frame.
func TestSplitterFollower(t *testing.T) {
	stream, _ := msgs(1, 2)
	units, mode := splitAll(modeFrames, stream, 5)
	if mode != modeFrames || len(units) != 2 || !units[0].first || units[1].first {
		t.Fatalf("units %+v, mode %v", units, mode)
	}
	units, _ = splitAll(modeOpaque, stream, 5)
	for _, u := range units {
		if u.kind != unitChunk {
			t.Fatalf("opaque stream gave %v", u.kind)
		}
	}
}

// FuzzSplitter checks, for any stream and chunking, that the units
// carry exactly the stream's bytes, that every frame unit is one whole
// frame within MaxFrameBytes, and that only the first frame is marked
// first.
func FuzzSplitter(f *testing.F) {
	raft, _ := msgs(1, 3)
	f.Add(append(hello(RaftMagic, 1, 2), raft...), uint8(1))
	f.Add(append(hello(RaftMagic, 1, 0), raft...), uint8(5))
	f.Add(append(hello("zkgosnp2", 1, 2), raft...), uint8(200))
	f.Add([]byte{0, 0, 0, 0}, uint8(2))
	f.Fuzz(func(t *testing.T, stream []byte, step uint8) {
		units, _ := splitAll(modeUndecided, stream, int(step)+1)
		if got := concat(units); !bytes.Equal(got, stream) {
			t.Fatalf("units carry %x, want %x", got, stream)
		}
		for i, u := range units {
			if u.kind != unitFrame {
				continue
			}
			if len(u.b) < 4 || int(binary.BigEndian.Uint32(u.b)) != len(u.b)-4 || len(u.b)-4 > MaxFrameBytes {
				t.Fatalf("unit %d is not one frame: %x", i, u.b)
			}
			if u.first != (i == 0) {
				t.Fatalf("unit %d first=%v", i, u.first)
			}
		}
	})
}
