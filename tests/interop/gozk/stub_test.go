package gozk

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
)

// stubServer speaks just enough of the protocol for the client
// benchmarks: it grants every session and answers getData, setData, ping
// and closeSession at once from canned replies, without any state. Its
// cost per request is one frame read and one frame written, so with it
// the benchmark measures the clients rather than a server (-bench.server
// stub).
type stubServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	next  atomic.Int64
}

func startStub(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &stubServer{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	tb.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return ln.Addr().String()
}

func (s *stubServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *stubServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	var hdr [proto.FrameHeaderSize]byte
	frame, err := proto.ReadFrame(br, &hdr, 1<<20)
	if err != nil {
		return
	}
	var req proto.ConnectRequest
	req.Decode(jute.NewDecoder(frame))
	var e jute.Encoder
	proto.AppendFrame(&e, nil, &proto.ConnectResponse{
		TimeOut: max(req.TimeOut, 2000), SessionID: 0x5700 + s.next.Add(1),
		Passwd: make([]byte, proto.PasswdLen), HasReadOnly: req.HasReadOnly,
	})
	if _, err := c.Write(e.Bytes()); err != nil {
		return
	}
	stat := proto.Stat{Czxid: 2, Mzxid: 3, Version: 1, DataLength: 100, Pzxid: 2}
	get := &proto.GetDataResponse{Data: make([]byte, 100), Stat: stat}
	set := &proto.SetDataResponse{Stat: stat}
	var buf []byte
	zxid := int64(3)
	for {
		frame, err := proto.ReadFrameInto(br, &hdr, buf, 1<<20)
		if err != nil {
			return
		}
		buf = frame[:0]
		var h proto.RequestHeader
		h.Decode(jute.NewDecoder(frame))
		rh := proto.ReplyHeader{Xid: h.Xid, Zxid: zxid}
		var body proto.Record
		switch h.Type {
		case proto.OpGetData:
			body = get
		case proto.OpSetData:
			zxid++
			rh.Zxid = zxid
			body = set
		case proto.OpPing, proto.OpCloseSession:
		default:
			rh.Err = proto.ErrUnimplemented
		}
		e.Reset(e.Bytes())
		proto.AppendReply(&e, &rh, body)
		if _, err := bw.Write(e.Bytes()); err != nil {
			return
		}
		if h.Type == proto.OpCloseSession {
			bw.Flush()
			return
		}
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
