package queue

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestPriorityInfix(t *testing.T) {
	tests := []struct {
		priority int32
		want     string
	}{
		// DistributedPriorityQueue.priorityToString
		{0, "100000000"},
		{1, "100000001"},
		{10, "10000000A"},
		{-1, "0FFFFFFFF"},
		{-10, "0FFFFFFF6"},
		{math.MaxInt32, "17FFFFFFF"},
		{math.MinInt32, "080000000"},
	}
	for _, tt := range tests {
		if got := PriorityInfix(tt.priority); got != tt.want {
			t.Errorf("PriorityInfix(%d) = %q, want %q", tt.priority, got, tt.want)
		}
	}
	// Name order is priority order.
	ps := []int32{5, math.MinInt32, -1, 0, math.MaxInt32, -10, 3}
	var names []string
	for _, p := range ps {
		names = append(names, itemPrefix+PriorityInfix(p)+"0000000001")
	}
	slices.Sort(names)
	slices.Sort(ps)
	for i, p := range ps {
		if names[i][len(itemPrefix):len(itemPrefix)+9] != PriorityInfix(p) {
			t.Fatalf("sorted names %v do not follow priorities %v", names, ps)
		}
	}
}

func TestDelayNames(t *testing.T) {
	tests := []struct {
		name string
		want int64 // Unix ms
	}{
		{"queue-|18B2F1A0C00|0000000003", 0x18B2F1A0C00},
		{"queue-|0000000A|0000000003", 10},
		{"queue-0000000003", 0},           // requeued by Curator: due now
		{"queue-|zz|0000000003", 0},       // not hex
		{"queue-||0000000003", 0},         // empty
		{"|5|", 0},                        // the first | at index 0 does not count (Curator's index1 > 0)
		{"queue-|1|junk|2|0000000001", 2}, // the last two | count
	}
	for _, tt := range tests {
		if got := DueTime(tt.name).UnixMilli(); got != tt.want {
			t.Errorf("DueTime(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
	due := time.UnixMilli(0x18B2F1A0C00)
	if got := DelayInfix(due); got != "|18B2F1A0C00|" {
		t.Errorf("DelayInfix = %q", got)
	}
	if got := DelayInfix(time.UnixMilli(10)); got != "|0000000A|" {
		t.Errorf("DelayInfix(10ms) = %q (Java's %%08X pads to 8 digits)", got)
	}
}

func TestIDNames(t *testing.T) {
	if got := IDInfix("a/b|c"); got != "|a_b_c|" {
		t.Errorf("IDInfix = %q", got)
	}
	tests := []struct {
		name, id, rest string
		ok             bool
	}{
		{"queue-|job-1|0000000007", "job-1", "queue-0000000007", true},
		{"queue-||0000000007", "", "queue-0000000007", true},
		{"queue-0000000007", "queue-0000000007", "queue-0000000007", false},
		{"queue-|x0000000007", "queue-|x0000000007", "queue-|x0000000007", false},
	}
	for _, tt := range tests {
		id, rest, ok := ParseID(tt.name)
		if id != tt.id || rest != tt.rest || ok != tt.ok {
			t.Errorf("ParseID(%q) = %q %q %v, want %q %q %v", tt.name, id, rest, ok, tt.id, tt.rest, tt.ok)
		}
	}
}

func TestRequeueName(t *testing.T) {
	tests := []struct{ name, want string }{
		{"queue-0000000007", "queue-"},
		{"queue-1000000050000000012", "queue-100000005"},
		{"queue-|18B2F1A0C00|0000000003", "queue-|18B2F1A0C00|"},
		{"queue-|job|0000000003", "queue-|job|"},
		{"queue-x", "queue-"},
	}
	for _, tt := range tests {
		if got := requeueName(tt.name); got != tt.want {
			t.Errorf("requeueName(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSortItems(t *testing.T) {
	tests := []struct {
		kind kind
		in   []string
		want []string
	}{
		{fifo, []string{"queue-0000000002", "lock", "queue-0000000001", "_c_x-queue-0000000000"},
			[]string{"queue-0000000001", "queue-0000000002"}},
		{priority, []string{"queue-1000000050000000001", "queue-0FFFFFFFF0000000002", "queue-1000000000000000003"},
			[]string{"queue-0FFFFFFFF0000000002", "queue-1000000000000000003", "queue-1000000050000000001"}},
		{delay, []string{"queue-|0000000B|0000000001", "queue-|0000000A|0000000003", "queue-0000000004", "queue-|0000000A|0000000002"},
			[]string{"queue-0000000004", "queue-|0000000A|0000000002", "queue-|0000000A|0000000003", "queue-|0000000B|0000000001"}},
		{byID, []string{"queue-|b|0000000001", "queue-|a|0000000003", "queue-|zz|0000000002"},
			[]string{"queue-|b|0000000001", "queue-|zz|0000000002", "queue-|a|0000000003"}},
	}
	for _, tt := range tests {
		if got := sortItems(tt.kind, slices.Clone(tt.in)); !slices.Equal(got, tt.want) {
			t.Errorf("sortItems(%d, %v) = %v, want %v", tt.kind, tt.in, got, tt.want)
		}
	}
}

func TestEnvelope(t *testing.T) {
	tests := []struct {
		name   string
		values [][]byte
		data   []byte
	}{
		{"one", [][]byte{[]byte("a")}, []byte{0, 1, 0, 1, 1, 0, 0, 0, 1, 'a', 2}},
		{"two, one empty", [][]byte{{}, []byte("bc")}, []byte{0, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 2, 'b', 'c', 2}},
		{"none", nil, []byte{0, 1, 0, 1, 2}},
	}
	for _, tt := range tests {
		if got := Encode(tt.values); !bytes.Equal(got, tt.data) {
			t.Errorf("%s: Encode = %x, want %x", tt.name, got, tt.data)
		}
		got, err := Decode(tt.data)
		if err != nil || len(got) != len(tt.values) {
			t.Fatalf("%s: Decode = %q %v", tt.name, got, err)
		}
		for i := range got {
			if !bytes.Equal(got[i], tt.values[i]) {
				t.Errorf("%s: value %d = %q, want %q", tt.name, i, got[i], tt.values[i])
			}
		}
	}
	bad := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"wrong version", []byte{0, 1, 0, 2, 2}},
		{"no end", []byte{0, 1, 0, 1}},
		{"bad opcode", []byte{0, 1, 0, 1, 3}},
		{"short length", []byte{0, 1, 0, 1, 1, 0, 0}},
		{"negative length", []byte{0, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 2}},
		{"length past end", []byte{0, 1, 0, 1, 1, 0, 0, 0, 9, 'a', 2}},
		{"value without end", []byte{0, 1, 0, 1, 1, 0, 0, 0, 1, 'a'}},
	}
	for _, tt := range bad {
		if _, err := Decode(tt.data); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode(%x) = %v, want ErrCorrupt", tt.name, tt.data, err)
		}
	}
	// Bytes after the end marker are ignored, as by Curator's reader.
	if got, err := Decode([]byte{0, 1, 0, 1, 2, 9, 9}); err != nil || len(got) != 0 {
		t.Errorf("trailing bytes: %v %v", got, err)
	}
}

// FuzzDecode: Decode never panics, and what it decodes encodes to the
// bytes it read.
func FuzzDecode(f *testing.F) {
	f.Add(Encode([][]byte{[]byte("a")}))
	f.Add(Encode([][]byte{{}, []byte("bc"), nil}))
	f.Fuzz(func(t *testing.T, data []byte) {
		values, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc := Encode(values)
		if !bytes.Equal(enc, data[:len(enc)]) {
			t.Fatalf("Decode(%x) = %q, which encodes to %x", data, values, enc)
		}
	})
}
