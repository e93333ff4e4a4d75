package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

// frame returns body with its length prefix.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// encode returns the records' encoding, back to back.
func encode(recs ...proto.Record) []byte {
	var e jute.Encoder
	for _, r := range recs {
		r.Encode(&e)
	}
	return e.Bytes()
}

func TestHandshake(t *testing.T) {
	passwd := bytes.Repeat([]byte{7}, proto.PasswdLen)
	granted := proto.ConnectResponse{TimeOut: 6000, SessionID: 0x1234, Passwd: passwd, HasReadOnly: true}
	roGranted := granted
	roGranted.ReadOnly = true
	refused := proto.ConnectResponse{Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true}
	tests := []struct {
		name string
		req  proto.ConnectRequest
		opts Options
		// wantReq is the ConnectRequest the server must receive.
		wantReq proto.ConnectRequest
		// answer is what the server writes after reading the request;
		// nil: it closes; hang: it writes nothing and waits.
		answer   []byte
		hang     bool
		closeNow bool // the server closes before the client writes
		want     proto.ConnectResponse
		step     HandshakeStep // 0: success
		wantErr  error
	}{
		{
			name:    "new session",
			req:     proto.ConnectRequest{TimeOut: 10000},
			wantReq: proto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true},
			answer:  frame(encode(&granted)),
			want:    granted,
		},
		{
			name:    "resume read-only",
			req:     proto.ConnectRequest{LastZxidSeen: 99, TimeOut: 4000, SessionID: 0x1234, Passwd: passwd, ReadOnly: true},
			wantReq: proto.ConnectRequest{LastZxidSeen: 99, TimeOut: 4000, SessionID: 0x1234, Passwd: passwd, ReadOnly: true, HasReadOnly: true},
			answer:  frame(encode(&roGranted)),
			want:    roGranted,
		},
		{
			name:    "refused",
			req:     proto.ConnectRequest{TimeOut: 4000, SessionID: 0x1234, Passwd: passwd},
			wantReq: proto.ConnectRequest{TimeOut: 4000, SessionID: 0x1234, Passwd: passwd, HasReadOnly: true},
			answer:  frame(encode(&refused)),
			want:    refused,
			step:    StepRefused,
			wantErr: ErrSessionRefused,
		},
		{
			name:    "closed before answering",
			req:     proto.ConnectRequest{TimeOut: 10000},
			wantReq: proto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true},
			step:    StepRead,
			wantErr: io.EOF,
		},
		{
			name:    "closed inside the answer",
			req:     proto.ConnectRequest{TimeOut: 10000},
			wantReq: proto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true},
			answer:  frame(encode(&granted))[:10],
			step:    StepRead,
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "answer over the bound",
			req:     proto.ConnectRequest{TimeOut: 10000},
			opts:    Options{MaxFrame: 1 << 20, MaxConnectFrame: 16},
			wantReq: proto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true},
			answer:  frame(encode(&granted)),
			step:    StepRead,
			wantErr: proto.ErrFrameTooLarge,
		},
		{
			name:    "answer over MaxFrame",
			req:     proto.ConnectRequest{TimeOut: 10000},
			opts:    Options{MaxFrame: 36},
			wantReq: proto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true},
			answer:  frame(encode(&granted)),
			step:    StepRead,
			wantErr: proto.ErrFrameTooLarge,
		},
		{
			name:    "negative length",
			req:     proto.ConnectRequest{TimeOut: 10000},
			wantReq: proto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true},
			answer:  []byte{0xff, 0xff, 0xff, 0xfe},
			step:    StepRead,
			wantErr: proto.ErrNegativeFrameLength,
		},
		{
			name:    "short answer",
			req:     proto.ConnectRequest{TimeOut: 10000},
			wantReq: proto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true},
			answer:  frame([]byte{0, 0, 0, 0, 0, 0}),
			step:    StepDecode,
			wantErr: jute.ErrShortBuffer,
		},
		{
			name:    "deadline",
			req:     proto.ConnectRequest{TimeOut: 10000},
			wantReq: proto.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, proto.PasswdLen), HasReadOnly: true},
			hang:    true,
			step:    StepRead,
			wantErr: os.ErrDeadlineExceeded,
		},
		{
			name:     "write fails",
			req:      proto.ConnectRequest{TimeOut: 10000},
			closeNow: true,
			step:     StepWrite,
			wantErr:  io.ErrClosedPipe,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer server.Close()
			got := make(chan []byte, 1)
			release := make(chan struct{})
			defer close(release)
			if tc.closeNow {
				server.Close()
				close(got)
			} else {
				go func() {
					defer close(got)
					f, err := proto.ReadFrame(server, nil, 1<<20)
					if err != nil {
						return
					}
					got <- f
					if tc.hang {
						<-release
						return
					}
					if tc.answer != nil {
						server.Write(tc.answer)
					}
					server.Close()
				}()
			}
			c := NewConn(client, tc.opts)
			deadline := time.Now().Add(100 * time.Millisecond)
			resp, err := c.Handshake(tc.req, deadline)
			if f, ok := <-got; ok && !bytes.Equal(f, encode(&tc.wantReq)) {
				t.Errorf("server read %x, want %x", f, encode(&tc.wantReq))
			}
			if tc.step == 0 {
				if err != nil {
					t.Fatalf("Handshake: %v", err)
				}
				if !equalResponse(resp, tc.want) {
					t.Fatalf("response %+v, want %+v", resp, tc.want)
				}
				// The deadline is cleared: past it, a read finds the
				// server's close, not the deadline.
				time.Sleep(time.Until(deadline) + 10*time.Millisecond)
				if _, err := c.ReadFrame(); err != io.EOF {
					t.Fatalf("read after the deadline: %v, want EOF", err)
				}
				return
			}
			var he *HandshakeError
			if !errors.As(err, &he) || he.Step != tc.step || !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v (%#v), want step %d wrapping %v", err, err, tc.step, tc.wantErr)
			}
			if tc.step == StepRefused && !equalResponse(resp, tc.want) {
				t.Fatalf("refused response %+v, want %+v", resp, tc.want)
			}
			// A failed handshake closes the connection.
			if _, err := client.Write([]byte{0}); !errors.Is(err, io.ErrClosedPipe) {
				t.Fatalf("write after a failed handshake: %v", err)
			}
		})
	}
}

func equalResponse(a, b proto.ConnectResponse) bool {
	return bytes.Equal(encode(&a), encode(&b)) && a.HasReadOnly == b.HasReadOnly
}

func TestHandshakeError(t *testing.T) {
	for _, tc := range []struct {
		err  *HandshakeError
		want string
	}{
		{&HandshakeError{StepWrite, io.ErrClosedPipe}, "handshake: writing the connect request: io: read/write on closed pipe"},
		{&HandshakeError{StepRead, io.EOF}, "handshake: reading the connect response: EOF"},
		{&HandshakeError{StepDecode, jute.ErrShortBuffer}, "handshake: bad connect response: jute: short buffer"},
		{&HandshakeError{StepRefused, ErrSessionRefused}, "handshake: server refused the session"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%d: %q, want %q", tc.err.Step, got, tc.want)
		}
	}
}

// streamConn is a net.Conn whose reads come from r; writes are discarded.
type streamConn struct {
	net.Conn // nil: any other method panics
	r        io.Reader
}

func (c *streamConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// repeatReader yields b over and over.
type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.b[r.off:])
		n += k
		r.off = (r.off + k) % len(r.b)
	}
	return n, nil
}

func TestReadReply(t *testing.T) {
	ev := proto.WatcherEvent{Type: proto.EventNodeCreated, State: proto.StateSyncConnected, Path: "/a"}
	reply := encode(&proto.ReplyHeader{Xid: 5, Zxid: 77, Err: proto.ErrOk}, &proto.GetDataResponse{Data: []byte("x")})
	tests := []struct {
		name    string
		input   []byte
		opts    Options
		want    proto.ReplyHeader
		kind    Kind
		wantErr error
	}{
		{name: "reply", input: frame(reply), want: proto.ReplyHeader{Xid: 5, Zxid: 77}, kind: KindReply},
		{name: "notification", input: frame(encode(&proto.ReplyHeader{Xid: -1, Zxid: -1}, &ev)), want: proto.ReplyHeader{Xid: -1, Zxid: -1}, kind: KindNotification},
		{name: "ping", input: frame(encode(&proto.ReplyHeader{Xid: -2})), want: proto.ReplyHeader{Xid: -2}, kind: KindPing},
		{name: "auth", input: frame(encode(&proto.ReplyHeader{Xid: -4, Err: proto.ErrAuthFailed})), want: proto.ReplyHeader{Xid: -4, Err: proto.ErrAuthFailed}, kind: KindAuth},
		{name: "set watches", input: frame(encode(&proto.ReplyHeader{Xid: -8})), want: proto.ReplyHeader{Xid: -8}, kind: KindSetWatches},
		{name: "at the bound", input: frame(reply), opts: Options{MaxFrame: len(reply)}, want: proto.ReplyHeader{Xid: 5, Zxid: 77}},
		{name: "over the bound", input: frame(reply), opts: Options{MaxFrame: len(reply) - 1}, wantErr: proto.ErrFrameTooLarge},
		{name: "huge length", input: []byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3}, wantErr: proto.ErrFrameTooLarge},
		{name: "negative length", input: []byte{0x80, 0, 0, 0}, wantErr: proto.ErrNegativeFrameLength},
		{name: "minus one", input: []byte{0xff, 0xff, 0xff, 0xff}, wantErr: proto.ErrNegativeFrameLength},
		{name: "short frame", input: frame(reply)[:len(reply)], wantErr: io.ErrUnexpectedEOF},
		{name: "short length", input: []byte{0, 0}, wantErr: io.ErrUnexpectedEOF},
		{name: "end of stream", input: nil, wantErr: io.EOF},
		{name: "short header", input: frame(reply[:15]), wantErr: ErrShortHeader},
		{name: "empty frame", input: frame(nil), wantErr: ErrShortHeader},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConn(&streamConn{r: bytes.NewReader(tc.input)}, tc.opts)
			h, d, err := c.ReadReply()
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || d != nil {
					t.Fatalf("ReadReply: %v, %v; want %v", err, d, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadReply: %v", err)
			}
			if h != tc.want || KindOf(h.Xid) != tc.kind {
				t.Fatalf("header %+v (kind %d), want %+v (kind %d)", h, KindOf(h.Xid), tc.want, tc.kind)
			}
			switch tc.kind {
			case KindReply:
				var r proto.GetDataResponse
				r.Decode(d)
				if d.Finish() != nil || string(r.Data) != "x" {
					t.Fatalf("body %+v: %v", r, d.Err())
				}
			case KindNotification:
				var got proto.WatcherEvent
				got.Decode(d)
				if d.Finish() != nil || got != ev {
					t.Fatalf("event %+v: %v", got, d.Err())
				}
			}
		})
	}
}

// TestFrameBoundAllocates: a length over the bound is refused before a
// buffer is made for it.
func TestFrameBoundAllocates(t *testing.T) {
	input := []byte{0x7f, 0xff, 0xff, 0xff} // 2 GiB - 1
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		c := NewConn(&streamConn{r: bytes.NewReader(input)}, Options{MaxFrame: 1 << 30, KeepBuffer: 1})
		if _, err := c.ReadFrame(); !errors.Is(err, proto.ErrFrameTooLarge) {
			t.Fatalf("over a 1 GiB bound: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing 10 frames of 2 GiB allocated %d bytes", grew)
	}
}

// TestReadReplyReusesBuffer: replies up to KeepBuffer are read without
// allocating; a larger one is read into a buffer of its own.
func TestReadReplyReusesBuffer(t *testing.T) {
	small := frame(encode(&proto.ReplyHeader{Xid: 1}, &proto.GetDataResponse{Data: make([]byte, 100)}))
	c := NewConn(&streamConn{r: &repeatReader{b: small}}, Options{})
	allocs := testing.AllocsPerRun(1000, func() {
		if _, _, err := c.ReadReply(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ReadReply allocates %v times per reply", allocs)
	}

	big := frame(make([]byte, 32<<10))
	c = NewConn(&streamConn{r: &repeatReader{b: big}}, Options{KeepBuffer: 8 << 10})
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := c.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Fatalf("a frame over KeepBuffer: %v allocations per frame, want 1", allocs)
	}
	if cap(c.buf) > 8<<10 {
		t.Fatalf("kept a %d-byte buffer over KeepBuffer", cap(c.buf))
	}
}

func TestBuffered(t *testing.T) {
	two := append(frame([]byte("abcd")), frame([]byte("efghij"))...)
	c := NewConn(&streamConn{r: bytes.NewReader(two)}, Options{})
	if c.Buffered() {
		t.Fatal("Buffered before any read")
	}
	if f, err := c.ReadFrame(); err != nil || string(f) != "abcd" {
		t.Fatalf("first frame %q, %v", f, err)
	}
	if !c.Buffered() {
		t.Fatal("the second frame was read with the first, but is not Buffered")
	}
	if f, err := c.ReadFrame(); err != nil || string(f) != "efghij" {
		t.Fatalf("second frame %q, %v", f, err)
	}
	if c.Buffered() {
		t.Fatal("Buffered with nothing left")
	}

	// A partial frame, and a huge length, are not buffered.
	for _, in := range [][]byte{frame([]byte("abcd"))[:6], {0x80, 0, 0, 0, 1}} {
		c = NewConn(&streamConn{r: bytes.NewReader(in)}, Options{})
		c.br.Peek(len(in))
		if c.Buffered() {
			t.Fatalf("%x: Buffered", in)
		}
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		xid  int32
		want Kind
	}{
		{1, KindReply}, {0, KindReply}, {0x7fffffff, KindReply}, {-3, KindReply},
		{proto.XidNotification, KindNotification}, {proto.XidPing, KindPing},
		{proto.XidAuth, KindAuth}, {proto.XidSetWatches, KindSetWatches},
	} {
		if got := KindOf(tc.xid); got != tc.want {
			t.Errorf("KindOf(%d) = %d, want %d", tc.xid, got, tc.want)
		}
	}
}

func TestReservedXid(t *testing.T) {
	for _, tc := range []struct {
		op   proto.OpCode
		xid  int32
		want bool
	}{
		{proto.OpPing, proto.XidPing, true},
		{proto.OpAuth, proto.XidAuth, true},
		{proto.OpSetWatches, proto.XidSetWatches, true},
		{proto.OpSetWatches2, proto.XidSetWatches, true},
		{proto.OpSasl, 0, false},
		{proto.OpGetData, 0, false},
		{proto.OpCloseSession, 0, false},
	} {
		xid, ok := ReservedXid(tc.op)
		if xid != tc.xid || ok != tc.want {
			t.Errorf("ReservedXid(%v) = %d, %v; want %d, %v", tc.op, xid, ok, tc.xid, tc.want)
		}
	}
}

func TestAppendRequest(t *testing.T) {
	var e jute.Encoder
	AppendRequest(&e, 7, proto.OpGetData, &proto.GetDataRequest{Path: "/a", Watch: true})
	AppendRequest(&e, proto.XidPing, proto.OpPing, nil)
	want := []byte{
		0, 0, 0, 15, // length
		0, 0, 0, 7, 0, 0, 0, 4, // xid, getData
		0, 0, 0, 2, '/', 'a', 1, // path, watch
		0, 0, 0, 8,
		0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11, // ping
	}
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("%x\nwant %x", e.Bytes(), want)
	}
	var e2 jute.Encoder
	AppendRequest(&e2, 7, proto.OpGetData, &proto.GetDataRequest{})
	allocs := testing.AllocsPerRun(100, func() {
		e2.Reset(e2.Bytes())
		AppendRequest(&e2, 7, proto.OpPing, nil)
	})
	if allocs != 0 {
		t.Fatalf("AppendRequest allocates %v times", allocs)
	}
}

func TestPending(t *testing.T) {
	var q Pending[int]
	if v, ok := q.Pop(); ok || v != 0 {
		t.Fatalf("Pop of empty: %d, %v", v, ok)
	}
	if q.Drain() != nil {
		t.Fatal("Drain of empty is not nil")
	}
	// Interleave pushes and pops so that the ring wraps, then grows while
	// wrapped.
	var want []int
	next := 0
	for round := range 20 {
		for range round + 3 {
			q.Push(next)
			want = append(want, next)
			next++
		}
		for range 2 {
			v, ok := q.Pop()
			if !ok || v != want[0] {
				t.Fatalf("Pop = %d, %v; want %d", v, ok, want[0])
			}
			want = want[1:]
		}
		if q.Len() != len(want) {
			t.Fatalf("Len = %d, want %d", q.Len(), len(want))
		}
	}
	if got := q.Drain(); !slices.Equal(got, want) {
		t.Fatalf("Drain = %v\nwant %v", got, want)
	}
	if q.Len() != 0 {
		t.Fatalf("Len after Drain = %d", q.Len())
	}

	// Pop clears its slot, so that the queue keeps nothing alive.
	var p Pending[*int]
	p.Push(new(int))
	p.Pop()
	if slices.ContainsFunc(p.buf, func(v *int) bool { return v != nil }) {
		t.Fatal("a popped pointer stays in the ring")
	}
}
