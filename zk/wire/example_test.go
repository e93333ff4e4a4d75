package wire_test

import (
	"fmt"
	"log"
	"net"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk/wire"
	"github.com/zkgo/zkgo/zktest"
)

// A session by hand: the handshake, two pipelined requests in one write,
// and their replies, matched by xid.
func Example() {
	srv, err := zktest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	nc, err := net.DialTimeout("tcp", srv.Addr(), 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	wc := wire.NewConn(nc, wire.Options{})
	sess, err := wc.Handshake(proto.ConnectRequest{TimeOut: 10000}, time.Now().Add(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	// The server chose the timeout (within its bounds) and the session.
	fmt.Println("session:", sess.SessionID != 0, "read-only:", sess.ReadOnly)

	var e jute.Encoder
	open := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "world", ID: "anyone"}}}
	wire.AppendRequest(&e, 1, proto.OpCreate, &proto.CreateRequest{Path: "/hello", Data: []byte("world"), ACL: open})
	wire.AppendRequest(&e, 2, proto.OpGetData, &proto.GetDataRequest{Path: "/hello"})
	if _, err := nc.Write(e.Bytes()); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		h, d, err := wc.ReadReply()
		if err != nil {
			log.Fatal(err)
		}
		if wire.KindOf(h.Xid) != wire.KindReply || h.Err != proto.ErrOk {
			log.Fatalf("reply %+v", h)
		}
		switch h.Xid {
		case 1:
			var r proto.CreateResponse
			r.Decode(d)
			fmt.Println("created", r.Path)
		case 2:
			var r proto.GetDataResponse
			r.Decode(d)
			fmt.Printf("%s: %s (version %d)\n", "/hello", r.Data, r.Stat.Version)
		}
	}
	// Output:
	// session: true read-only: false
	// created /hello
	// /hello: world (version 0)
}
