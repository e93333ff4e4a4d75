// Package rawzk is a minimal ZooKeeper protocol client for tests and
// benchmarks: it sends exact request records and returns exact replies,
// so differential tests can compare servers byte for byte and benchmarks
// measure the server rather than a client library.
//
// A Conn is used by one goroutine at a time, except that Send and Recv may
// be used from two different goroutines for pipelining.
package rawzk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk/wire"
)

// Conn is a raw protocol connection with an established session.
type Conn struct {
	nc      net.Conn
	wc      *wire.Conn // nc's reading side (Recv)
	enc     jute.Encoder
	xid     int32
	Session proto.ConnectResponse
	// Events collects watch notifications received by Call/Recv.
	Events []proto.WatcherEvent
}

// Options for Dial.
type Options struct {
	Timeout   time.Duration // session timeout to ask for; default 10s
	SessionID int64         // resume this session
	Passwd    []byte
	LastZxid  int64
	ReadOnly  bool
	// TLS, if set, runs the connection over TLS with this configuration
	// (a secure client port); the TLS handshake completes before the
	// ConnectRequest is sent.
	TLS *tls.Config
	// Dial, if set, opens the TCP connection (a test's own network).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Dial connects and performs the handshake.
func Dial(addr string, o Options) (*Conn, error) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	var nc net.Conn
	var err error
	switch {
	case o.Dial != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		nc, err = o.Dial(ctx, "tcp", addr)
		cancel()
		if err == nil && o.TLS != nil {
			nc = tls.Client(nc, o.TLS)
		}
	case o.TLS != nil:
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: o.TLS}
		nc, err = d.Dial("tcp", addr)
	default:
		nc, err = net.DialTimeout("tcp", addr, 5*time.Second)
	}
	if err != nil {
		return nil, err
	}
	// Replies up to 16 MiB (a ConnectResponse up to jute.maxbuffer).
	wc := wire.NewConn(nc, wire.Options{MaxFrame: 16 << 20, MaxConnectFrame: jute.DefaultMaxBuffer})
	sess, err := wc.Handshake(proto.ConnectRequest{
		LastZxidSeen: o.LastZxid, TimeOut: int32(o.Timeout / time.Millisecond),
		SessionID: o.SessionID, Passwd: o.Passwd, ReadOnly: o.ReadOnly,
	}, time.Now().Add(10*time.Second))
	if errors.Is(err, wire.ErrSessionRefused) {
		return nil, ErrSessionExpired
	}
	if err != nil {
		return nil, fmt.Errorf("rawzk: %w", err)
	}
	return &Conn{nc: nc, wc: wc, Session: sess}, nil
}

// ErrSessionExpired is returned by Dial when the server refuses to resume a
// session.
var ErrSessionExpired = errors.New("rawzk: session expired")

// Close closes the TCP connection without closing the session.
func (c *Conn) Close() error { return c.nc.Close() }

// NetConn exposes the TCP connection.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Send writes one request with the next xid and returns the xid.
func (c *Conn) Send(op proto.OpCode, req proto.Record) (int32, error) {
	c.xid++
	return c.xid, c.SendXid(c.xid, op, req)
}

// SendXid writes one request with the given xid.
func (c *Conn) SendXid(xid int32, op proto.OpCode, req proto.Record) error {
	c.enc.Reset(c.enc.Bytes())
	wire.AppendRequest(&c.enc, xid, op, req)
	_, err := c.nc.Write(c.enc.Bytes())
	return err
}

// SendRaw writes an arbitrary frame body.
func (c *Conn) SendRaw(body []byte) error {
	c.enc.Reset(c.enc.Bytes())
	c.enc.WriteInt(int32(len(body)))
	b := append(c.enc.Bytes(), body...)
	_, err := c.nc.Write(b)
	return err
}

// Recv reads the next non-notification reply. If resp is non-nil and the
// reply has err 0 and a body, the body is decoded into resp. Notifications
// are appended to Events.
func (c *Conn) Recv(resp proto.Record) (proto.ReplyHeader, error) {
	for {
		h, d, err := c.wc.ReadReply()
		if err != nil {
			return h, err
		}
		if wire.KindOf(h.Xid) == wire.KindNotification {
			var ev proto.WatcherEvent
			ev.Decode(d)
			c.Events = append(c.Events, ev)
			continue
		}
		if resp != nil && h.Err == proto.ErrOk && d.Remaining() > 0 {
			resp.Decode(d)
			if err := d.Finish(); err != nil {
				return h, fmt.Errorf("rawzk: reply to xid %d: %w", h.Xid, err)
			}
		}
		return h, nil
	}
}

// RecvEvent waits for the next notification (returning one already
// collected first).
func (c *Conn) RecvEvent(timeout time.Duration) (proto.WatcherEvent, error) {
	if len(c.Events) > 0 {
		ev := c.Events[0]
		c.Events = c.Events[1:]
		return ev, nil
	}
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	defer c.nc.SetReadDeadline(time.Time{})
	h, d, err := c.wc.ReadReply()
	if err != nil {
		return proto.WatcherEvent{}, err
	}
	if wire.KindOf(h.Xid) != wire.KindNotification {
		return proto.WatcherEvent{}, fmt.Errorf("rawzk: expected a notification, got reply xid %d", h.Xid)
	}
	var ev proto.WatcherEvent
	ev.Decode(d)
	return ev, d.Err()
}

// Call sends one request and waits for its reply.
func (c *Conn) Call(op proto.OpCode, req, resp proto.Record) (proto.ReplyHeader, error) {
	xid, reserved := wire.ReservedXid(op)
	var err error
	if reserved {
		err = c.SendXid(xid, op, req)
	} else {
		xid, err = c.Send(op, req)
	}
	if err != nil {
		return proto.ReplyHeader{}, err
	}
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer c.nc.SetReadDeadline(time.Time{})
	h, err := c.Recv(resp)
	if err == nil && h.Xid != xid {
		err = fmt.Errorf("rawzk: reply xid %d, want %d", h.Xid, xid)
	}
	return h, err
}

// CloseSession sends closeSession and waits for the reply.
func (c *Conn) CloseSession() error {
	_, err := c.Call(proto.OpCloseSession, nil, nil)
	c.nc.Close()
	return err
}
