package gozk

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// rawConn is a minimal hand-written ZooKeeper client used where
// go-zookeeper validates or hides something client-side (invalid paths,
// unknown flags, create2 stats, handshake fields). It deliberately does not
// use zkgo's own jute/proto packages: the point is an independent encoding.
type rawConn struct {
	t   *testing.T
	nc  net.Conn
	xid int32

	// From the connect response.
	timeout   int32
	sessionID int64
	passwd    []byte
}

// Jute opcodes.
const (
	opCreate          = 1
	opExists          = 3
	opGetData         = 4
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
	opCloseSession    = -11
)

type enc struct{ b []byte }

func (e *enc) int(v int32)  { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) long(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *enc) buf(v []byte) {
	if v == nil {
		e.int(-1)
		return
	}
	e.int(int32(len(v)))
	e.b = append(e.b, v...)
}
func (e *enc) str(s string) { e.int(int32(len(s))); e.b = append(e.b, s...) }
func (e *enc) acls(l []zk.ACL) {
	e.int(int32(len(l)))
	for _, a := range l {
		e.int(a.Perms)
		e.str(a.Scheme)
		e.str(a.ID)
	}
}

type dec struct {
	b   []byte
	err bool
}

func (d *dec) need(n int) bool {
	if len(d.b) < n {
		d.err = true
		return false
	}
	return true
}
func (d *dec) int() int32 {
	if !d.need(4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(d.b))
	d.b = d.b[4:]
	return v
}
func (d *dec) long() int64 {
	if !d.need(8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}
func (d *dec) buf() []byte {
	n := d.int()
	if n < 0 || !d.need(int(n)) {
		return nil
	}
	v := append([]byte{}, d.b[:n]...)
	d.b = d.b[n:]
	return v
}
func (d *dec) str() string { return string(d.buf()) }
func (d *dec) stat() zk.Stat {
	return zk.Stat{
		Czxid: d.long(), Mzxid: d.long(), Ctime: d.long(), Mtime: d.long(),
		Version: d.int(), Cversion: d.int(), Aversion: d.int(),
		EphemeralOwner: d.long(), DataLength: d.int(), NumChildren: d.int(),
		Pzxid: d.long(),
	}
}

func (r *rawConn) writeFrame(body []byte) {
	r.t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = append(frame, body...)
	r.nc.SetWriteDeadline(time.Now().Add(eventWait))
	if _, err := r.nc.Write(frame); err != nil {
		r.t.Fatalf("raw write: %v", err)
	}
}

// readFrame returns the next frame, or nil and the error.
func (r *rawConn) readFrame() ([]byte, error) {
	r.nc.SetReadDeadline(time.Now().Add(eventWait))
	var hdr [4]byte
	if _, err := io.ReadFull(r.nc, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 1<<20 {
		r.t.Fatalf("raw: frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.nc, b); err != nil {
		return nil, err
	}
	return b, nil
}

// rawHandshake dials addr and sends a connect request; it returns the
// connection and the decoded response (which may be a rejection).
func rawHandshake(t *testing.T, addr string, timeoutMs int32, sessionID int64, passwd []byte) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, eventWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	r := &rawConn{t: t, nc: nc}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	var e enc
	e.int(0) // protocolVersion
	e.long(0)
	e.int(timeoutMs)
	e.long(sessionID)
	e.buf(passwd)
	e.bool(false) // readOnly
	r.writeFrame(e.b)
	b, err := r.readFrame()
	if err != nil {
		t.Fatalf("raw connect: %v", err)
	}
	d := dec{b: b}
	d.int() // protocolVersion
	r.timeout = d.int()
	r.sessionID = d.long()
	r.passwd = d.buf()
	if d.err {
		t.Fatalf("raw connect: short response %x", b)
	}
	return r
}

// rawDial opens a new session and fails the test if the server refuses.
func rawDial(t *testing.T, addr string) *rawConn {
	t.Helper()
	r := rawHandshake(t, addr, int32(sessionTimeout/time.Millisecond), 0, nil)
	if r.sessionID == 0 {
		t.Fatalf("raw connect: server refused a new session")
	}
	t.Cleanup(func() {
		var e enc
		r.xid++
		e.int(r.xid)
		e.int(opCloseSession)
		r.nc.SetWriteDeadline(time.Now().Add(time.Second))
		r.nc.Write(binary.BigEndian.AppendUint32(nil, uint32(len(e.b))))
		r.nc.Write(e.b)
	})
	return r
}

// call sends one request and returns the reply's error code and body,
// skipping watch notifications and pings.
func (r *rawConn) call(op int32, body []byte) (int32, *dec) {
	r.t.Helper()
	r.xid++
	var e enc
	e.int(r.xid)
	e.int(op)
	e.b = append(e.b, body...)
	r.writeFrame(e.b)
	for {
		b, err := r.readFrame()
		if err != nil {
			r.t.Fatalf("raw op %d: %v", op, err)
		}
		d := &dec{b: b}
		xid := d.int()
		d.long() // zxid
		code := d.int()
		if d.err {
			r.t.Fatalf("raw op %d: short reply %x", op, b)
		}
		if xid != r.xid {
			continue // notification (-1), ping (-2)
		}
		return code, d
	}
}

func createBody(path string, data []byte, acl []zk.ACL, flags int32) []byte {
	var e enc
	e.str(path)
	e.buf(data)
	e.acls(acl)
	e.int(flags)
	return e.b
}

func createTTLBody(path string, data []byte, acl []zk.ACL, flags int32, ttl int64) []byte {
	var e enc
	e.str(path)
	e.buf(data)
	e.acls(acl)
	e.int(flags)
	e.long(ttl)
	return e.b
}

func pathWatchBody(path string) []byte {
	var e enc
	e.str(path)
	e.bool(false)
	return e.b
}
