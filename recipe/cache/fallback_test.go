package cache

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/recipetest"
	"github.com/zkgo/zkgo/zk"
)

// oldServer is a connection to a server that, like ZooKeeper before 3.6,
// answers addWatch with Unimplemented: it keeps addWatch requests from the
// server and answers them itself, in their place among the replies.
type oldServer struct {
	net.Conn // to the server
	pr       *io.PipeReader
	pw       *io.PipeWriter

	mu       sync.Mutex // guards the fields below and writes to pw
	pending  []int64    // xids awaiting replies; fakes are xid|1<<32
	wbuf     []byte
	greeted  bool // the ConnectRequest went through
	lastZxid int64
}

const fake = int64(1) << 32

func dialOldServer(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	o := &oldServer{Conn: nc, pr: pr, pw: pw}
	go o.readServer()
	return o, nil
}

func (o *oldServer) Read(p []byte) (int, error) { return o.pr.Read(p) }

func (o *oldServer) Close() error {
	o.pr.Close()
	return o.Conn.Close()
}

// readServer passes the server's frames on, each fake reply right after
// the reply it follows.
func (o *oldServer) readServer() {
	br := bufio.NewReader(o.Conn)
	first := true
	for {
		frame, err := proto.ReadFrame(br, nil, 1<<24)
		if err != nil {
			o.pw.CloseWithError(err)
			return
		}
		o.mu.Lock()
		o.emit(frame)
		if !first && len(frame) >= 16 {
			xid := int32(binary.BigEndian.Uint32(frame))
			if z := int64(binary.BigEndian.Uint64(frame[4:])); z > 0 {
				o.lastZxid = z
			}
			if xid != proto.XidNotification && xid != proto.XidAuth && len(o.pending) > 0 {
				o.pending = o.pending[1:]
				o.flushFakes()
			}
		}
		first = false
		o.mu.Unlock()
	}
}

func (o *oldServer) emit(frame []byte) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(frame)))
	o.pw.Write(append(hdr[:], frame...))
}

// flushFakes answers the addWatch requests now at the head of the queue.
func (o *oldServer) flushFakes() {
	for len(o.pending) > 0 && o.pending[0]&fake != 0 {
		var f [16]byte
		binary.BigEndian.PutUint32(f[:], uint32(int32(o.pending[0])))
		binary.BigEndian.PutUint64(f[4:], uint64(o.lastZxid))
		code := int32(proto.ErrUnimplemented)
		binary.BigEndian.PutUint32(f[12:], uint32(code))
		o.emit(f[:])
		o.pending = o.pending[1:]
	}
}

func (o *oldServer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.wbuf = append(o.wbuf, p...)
	for len(o.wbuf) >= 4 {
		size := int(binary.BigEndian.Uint32(o.wbuf))
		if len(o.wbuf) < 4+size {
			break
		}
		frame := o.wbuf[:4+size]
		o.wbuf = o.wbuf[4+size:]
		if !o.greeted {
			o.greeted = true
		} else if size >= 8 {
			xid := int32(binary.BigEndian.Uint32(frame[4:]))
			if proto.OpCode(int32(binary.BigEndian.Uint32(frame[8:]))) == proto.OpAddWatch {
				o.pending = append(o.pending, int64(uint32(xid))|fake)
				if len(o.pending) == 1 {
					o.flushFakes()
				}
				continue
			}
			if xid != proto.XidAuth {
				o.pending = append(o.pending, int64(xid))
			}
		}
		if _, err := o.Conn.Write(frame); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// TestFallbackOnUnimplemented: against a server without addWatch the
// caches use one-shot watches by themselves.
func TestFallbackOnUnimplemented(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		c, w := e.Connect(t, zk.WithDialer(dialOldServer)), e.Connect(t)
		r := e.Root
		if _, err := c.AddWatch(ctx, r, zk.AddWatchPersistentRecursive); !errors.Is(err, zk.ErrUnimplemented) {
			t.Fatalf("addWatch through the old server: %v", err)
		}
		create(t, w, r, "r")
		create(t, w, r+"/a", "a")
		tc := NewTree(c, r)
		evs := tc.Events()
		if err := tc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		expect(t, evs, want{Created, r, "r"}, want{Created, r + "/a", "a"}, want{Initialized, "", ""})
		if !tc.e.oneShot {
			t.Fatal("the cache did not fall back to one-shot watches")
		}
		create(t, w, r+"/a/b", "b")
		expect(t, evs, want{Created, r + "/a/b", "b"})
		set(t, w, r+"/a", "a2")
		expect(t, evs, want{Changed, r + "/a", "a2"})
		nc := NewNode(c, r+"/a/b")
		nevs := nc.Events()
		if err := nc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		expect(t, nevs, want{Created, r + "/a/b", "b"}, want{Initialized, "", ""})
		del(t, w, r+"/a/b")
		expect(t, nevs, want{Deleted, r + "/a/b", "b"})
		expect(t, evs, want{Deleted, r + "/a/b", "b"})
		requireTree(t, tc, w, r, unlimited)
	})
}
