// Package wire is the client side of ZooKeeper's wire protocol one level
// above package proto: the connect handshake over a net.Conn, request
// framing, reading reply frames within a bound into a reused buffer, and
// telling notifications, pings and auth replies from ordinary replies.
//
// It holds no session logic. Package zk (the client), the load generator
// (tools/bench) and the differential tests' raw client (rawzk) build their
// own concurrency on it: a Conn is read by one goroutine, while requests may
// be written to the net.Conn from any.
//
// A session starts with NewConn and Handshake, then writes requests framed by
// AppendRequest and reads replies with ReadReply:
//
//	wc := wire.NewConn(nc, wire.Options{})
//	sess, err := wc.Handshake(proto.ConnectRequest{TimeOut: 10000}, time.Now().Add(10*time.Second))
//	...
//	var e jute.Encoder
//	wire.AppendRequest(&e, 1, proto.OpExists, &proto.ExistsRequest{Path: "/"})
//	nc.Write(e.Bytes())
//	h, d, err := wc.ReadReply() // h.Xid == 1; decode the body from d
package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

// Defaults of Options.
const (
	// DefaultReadBuffer is the size of the buffered reader over the socket.
	DefaultReadBuffer = 64 << 10
	// DefaultKeepBuffer is the largest frame buffer kept between reads.
	DefaultKeepBuffer = 64 << 10
)

// Options configure a Conn. The zero value is ZooKeeper's defaults.
type Options struct {
	// MaxFrame bounds the length of every reply frame (jute.maxbuffer);
	// a longer one is an error, found before anything is allocated.
	// 0 means jute.DefaultMaxBuffer.
	MaxFrame int
	// MaxConnectFrame bounds the ConnectResponse frame; 0 means MaxFrame.
	MaxConnectFrame int
	// ReadBuffer is the size of the buffered reader over the connection;
	// 0 means DefaultReadBuffer.
	ReadBuffer int
	// KeepBuffer is the largest frame buffer kept for the next read: a
	// larger frame is read into a buffer of its own, dropped after. 0 means
	// DefaultKeepBuffer.
	KeepBuffer int
}

// Conn is the reading side of a client's connection to a ZooKeeper server,
// and its connect handshake. Handshake, Buffered, ReadFrame and ReadReply
// must be called from one goroutine at a time; requests may be written to
// the net.Conn (NetConn) concurrently.
type Conn struct {
	nc         net.Conn
	br         *bufio.Reader
	maxFrame   int
	maxConnect int
	keep       int
	hdr        [proto.FrameHeaderSize]byte
	buf        []byte       // the frame buffer reused by ReadFrame: the first frame's size, then grown (up to keep)
	d          jute.Decoder // over the last frame, returned by ReadReply
}

// NewConn returns a Conn reading from nc, which is connected (and, for a
// secure client port, wrapped by the caller in TLS: tls.Client or a
// tls.Dialer) but has not started the ZooKeeper handshake.
func NewConn(nc net.Conn, o Options) *Conn {
	if o.MaxFrame <= 0 {
		o.MaxFrame = jute.DefaultMaxBuffer
	}
	if o.MaxConnectFrame <= 0 {
		o.MaxConnectFrame = o.MaxFrame
	}
	if o.ReadBuffer <= 0 {
		o.ReadBuffer = DefaultReadBuffer
	}
	if o.KeepBuffer <= 0 {
		o.KeepBuffer = DefaultKeepBuffer
	}
	return &Conn{
		nc:         nc,
		br:         bufio.NewReaderSize(nc, o.ReadBuffer),
		maxFrame:   o.MaxFrame,
		maxConnect: o.MaxConnectFrame,
		keep:       o.KeepBuffer,
	}
}

// NetConn returns the connection Conn reads from.
func (c *Conn) NetConn() net.Conn { return c.nc }

// HandshakeStep names the step of the connect handshake that failed.
type HandshakeStep uint8

// The steps of the connect handshake.
const (
	StepWrite   HandshakeStep = iota + 1 // writing the ConnectRequest
	StepRead                             // reading the ConnectResponse frame
	StepDecode                           // decoding the ConnectResponse
	StepRefused                          // the server refused the session (Err is ErrSessionRefused)
)

// ErrSessionRefused means the server answered the ConnectRequest with a
// session timeout of 0: the session to resume has expired (or is unknown to
// it), or it refused a new one.
var ErrSessionRefused = errors.New("server refused the session")

// HandshakeError is the error of a failed Handshake: which step failed and
// why. Err is the socket's error for StepWrite and StepRead (io.EOF if the
// server closed before answering, proto.ErrFrameTooLarge, a timeout...),
// the decoder's for StepDecode and ErrSessionRefused for StepRefused.
type HandshakeError struct {
	Step HandshakeStep
	Err  error
}

func (e *HandshakeError) Error() string {
	switch e.Step {
	case StepWrite:
		return "handshake: writing the connect request: " + e.Err.Error()
	case StepRead:
		return "handshake: reading the connect response: " + e.Err.Error()
	case StepDecode:
		return "handshake: bad connect response: " + e.Err.Error()
	}
	return "handshake: " + e.Err.Error()
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// Handshake opens or resumes a session: it writes req as the first frame,
// always in the 3.4+ form that carries the read-only flag (req.ReadOnly asks
// for a session a read-only server may serve), then reads and decodes the
// server's ConnectResponse, whose ReadOnly field reports a read-only server.
// A nil req.Passwd is sent as proto.PasswdLen zero bytes, what a new session
// sends.
//
// A non-zero deadline bounds the write and the read (net.Conn.SetDeadline),
// and is cleared when Handshake succeeds; with a zero deadline Handshake
// leaves the connection's deadlines alone.
//
// If Handshake fails it closes the connection and returns a
// *HandshakeError. A response with a timeout of 0 is a failure
// (ErrSessionRefused), returned with the response.
func (c *Conn) Handshake(req proto.ConnectRequest, deadline time.Time) (proto.ConnectResponse, error) {
	var resp proto.ConnectResponse
	fail := func(step HandshakeStep, err error) (proto.ConnectResponse, error) {
		c.nc.Close()
		return resp, &HandshakeError{Step: step, Err: err}
	}
	if !deadline.IsZero() {
		c.nc.SetDeadline(deadline)
	}
	if req.Passwd == nil {
		req.Passwd = make([]byte, proto.PasswdLen)
	}
	req.HasReadOnly = true
	var e jute.Encoder
	proto.AppendFrame(&e, nil, &req)
	if _, err := c.nc.Write(e.Bytes()); err != nil {
		return fail(StepWrite, err)
	}
	frame, err := c.readFrame(c.maxConnect)
	if err != nil {
		return fail(StepRead, err)
	}
	c.d.Reset(frame, false)
	resp.Decode(&c.d)
	if err := c.d.Err(); err != nil {
		return fail(StepDecode, err)
	}
	if resp.TimeOut <= 0 {
		return fail(StepRefused, ErrSessionRefused)
	}
	if !deadline.IsZero() {
		c.nc.SetDeadline(time.Time{})
	}
	return resp, nil
}

// Buffered reports whether a whole frame is already buffered, so that the
// next ReadFrame or ReadReply makes no system call: a reader sets a read
// deadline, or flushes its queued writes, only when it is false.
func (c *Conn) Buffered() bool {
	n := c.br.Buffered()
	if n < proto.FrameHeaderSize {
		return false
	}
	hdr, _ := c.br.Peek(proto.FrameHeaderSize)
	return int64(n-proto.FrameHeaderSize) >= int64(binary.BigEndian.Uint32(hdr))
}

// ReadFrame reads one frame and returns its body, which is valid until the
// next read. A length over Options.MaxFrame (proto.ErrFrameTooLarge) or a
// negative one (proto.ErrNegativeFrameLength) is an error found before
// anything is allocated; io.EOF means the server closed between frames,
// io.ErrUnexpectedEOF inside one.
func (c *Conn) ReadFrame() ([]byte, error) { return c.readFrame(c.maxFrame) }

func (c *Conn) readFrame(limit int) ([]byte, error) {
	frame, err := proto.ReadFrameInto(c.br, &c.hdr, c.buf, limit)
	if err != nil {
		return nil, err
	}
	if cap(frame) <= c.keep {
		c.buf = frame[:0]
	}
	return frame, nil
}

// ErrShortHeader means a reply frame is shorter than a ReplyHeader.
var ErrShortHeader = errors.New("short reply header")

// ReadReply reads one reply frame and decodes its header. The returned
// decoder is positioned at the body (a proto.WatcherEvent for a
// notification, the response record for an ordinary reply whose Err is
// proto.ErrOk) and is valid until the next read; it copies what it decodes,
// so decoded records outlive it. The errors are ReadFrame's, and
// ErrShortHeader.
func (c *Conn) ReadReply() (proto.ReplyHeader, *jute.Decoder, error) {
	var h proto.ReplyHeader
	frame, err := c.ReadFrame()
	if err != nil {
		return h, nil, err
	}
	c.d.Reset(frame, false)
	h.Decode(&c.d)
	if c.d.Err() != nil {
		return h, nil, fmt.Errorf("%w: %d bytes", ErrShortHeader, len(frame))
	}
	return h, &c.d, nil
}

// Kind tells what a reply is from its xid.
type Kind uint8

// The kinds of replies.
const (
	// KindReply is an ordinary reply, to the request with the same xid;
	// a session's ordinary replies come in the order of its requests.
	// SASL requests carry ordinary xids, so their replies are of this kind.
	KindReply Kind = iota
	// KindNotification is a watch notification (xid -1): a
	// proto.WatcherEvent no request asked for.
	KindNotification
	// KindPing is the reply to a ping (xid -2).
	KindPing
	// KindAuth is the reply to an auth packet (xid -4); servers may send it
	// out of order with ordinary replies, and send no other reply to it.
	KindAuth
	// KindSetWatches is the reply to a setWatches request (xid -8),
	// in order with ordinary replies.
	KindSetWatches
)

// KindOf returns the kind of a reply with the given xid.
func KindOf(xid int32) Kind {
	switch xid {
	case proto.XidNotification:
		return KindNotification
	case proto.XidPing:
		return KindPing
	case proto.XidAuth:
		return KindAuth
	case proto.XidSetWatches:
		return KindSetWatches
	}
	return KindReply
}

// ReservedXid returns the xid the protocol reserves for op: proto.XidPing
// for OpPing, proto.XidAuth for OpAuth, proto.XidSetWatches for
// OpSetWatches and OpSetWatches2. ok is false for every other op, whose
// requests carry the session's own increasing xids.
func ReservedXid(op proto.OpCode) (xid int32, ok bool) {
	switch op {
	case proto.OpPing:
		return proto.XidPing, true
	case proto.OpAuth:
		return proto.XidAuth, true
	case proto.OpSetWatches, proto.OpSetWatches2:
		return proto.XidSetWatches, true
	}
	return 0, false
}

// AppendRequest appends to e one request frame: its length prefix, the
// RequestHeader (xid, op) and body (nil for none). Frames may be appended
// back to back and written in one call.
func AppendRequest(e *jute.Encoder, xid int32, op proto.OpCode, body proto.Record) {
	proto.AppendRequest(e, &proto.RequestHeader{Xid: xid, Type: op}, body)
}
