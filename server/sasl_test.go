package server_test

import (
	"bufio"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/internal/sasl"
	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zktest"
)

var saslUsers = map[string]string{"bob": "bobsecret", "alice": "alicesecret", "admin": "adminsecret"}

func saslServer(t *testing.T, fn func(*server.Options)) *zktest.Server {
	t.Helper()
	return zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.SASL = server.SASLOptions{Users: saslUsers}
		if fn != nil {
			fn(o)
		}
	}))
}

// saslStep sends one token and returns the reply's code and token.
func saslStep(t *testing.T, c *rawzk.Conn, tok []byte) (proto.ErrCode, []byte) {
	t.Helper()
	var rsp proto.SetSASLResponse
	h, err := c.Call(proto.OpSasl, &proto.GetSASLRequest{Token: tok}, &rsp)
	if err != nil {
		t.Fatalf("sasl: %v", err)
	}
	return h.Err, rsp.Token
}

// saslLogin runs a whole DIGEST-MD5 exchange and fails the test unless it
// succeeds.
func saslLogin(t *testing.T, c *rawzk.Conn, user, pass string) {
	t.Helper()
	cli := sasl.NewClient(sasl.ClientConfig{User: user, Password: pass})
	tok := cli.Start()
	for !cli.Done() {
		code, out := saslStep(t, c, tok)
		if code != proto.ErrOk {
			t.Fatalf("sasl as %s: %v", user, code)
		}
		var err error
		if tok, err = cli.Next(out); err != nil {
			t.Fatalf("sasl as %s: %v", user, err)
		}
	}
}

func whoAmI(t *testing.T, c *rawzk.Conn) []proto.ClientInfo {
	t.Helper()
	var rsp proto.WhoAmIResponse
	if code := call(t, c, proto.OpWhoAmI, nil, &rsp); code != proto.ErrOk {
		t.Fatalf("whoAmI: %v", code)
	}
	return rsp.ClientInfo
}

// readFailure reads the reply to a failed SASL step: the code, and the
// token, which must be null so that Java clients fail their exchange.
func readFailure(t *testing.T, c *rawzk.Conn) proto.ErrCode {
	t.Helper()
	nc := c.NetConn()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [4]byte
	frame, err := proto.ReadFrame(bufio.NewReader(nc), &hdr, 1<<20)
	if err != nil {
		t.Fatalf("reading the failure reply: %v", err)
	}
	d := jute.NewDecoder(frame)
	var h proto.ReplyHeader
	h.Decode(d)
	var rsp proto.SetSASLResponse
	rsp.Decode(d)
	if err := d.Finish(); err != nil || rsp.Token != nil {
		t.Fatalf("failure reply %+v: token %q, %v", h, rsp.Token, err)
	}
	return h.Err
}

func TestSaslDigestMD5(t *testing.T) {
	srv := saslServer(t, nil)
	bob := dial(t, srv.Addr())
	saslLogin(t, bob, "bob", "bobsecret")
	if got := whoAmI(t, bob); !slices.Contains(got, proto.ClientInfo{AuthScheme: "sasl", User: "bob"}) {
		t.Fatalf("whoAmI = %+v", got)
	}

	// sasl:bob:cdrwa, set explicitly and through an "auth" ACL.
	bobACL := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: acl.SchemeSASL, ID: "bob"}}}
	if code := call(t, bob, proto.OpCreate, &proto.CreateRequest{Path: "/bob", Data: []byte("b"), ACL: bobACL}, nil); code != proto.ErrOk {
		t.Fatalf("create /bob: %v", code)
	}
	if code := call(t, bob, proto.OpCreate, &proto.CreateRequest{Path: "/creator", ACL: acl.CreatorAllACL}, nil); code != proto.ErrOk {
		t.Fatalf("create /creator: %v", code)
	}
	var acls proto.GetACLResponse
	if code := call(t, bob, proto.OpGetACL, &proto.GetACLRequest{Path: "/creator"}, &acls); code != proto.ErrOk ||
		!slices.Equal(acls.ACL, bobACL) {
		t.Fatalf("getACL /creator: %v %+v", code, acls.ACL)
	}
	var data proto.GetDataResponse
	if code := call(t, bob, proto.OpGetData, &proto.GetDataRequest{Path: "/bob"}, &data); code != proto.ErrOk || string(data.Data) != "b" {
		t.Fatalf("bob reads /bob: %v %q", code, data.Data)
	}

	anon := dial(t, srv.Addr())
	alice := dial(t, srv.Addr())
	saslLogin(t, alice, "alice", "alicesecret")
	for _, c := range []*rawzk.Conn{anon, alice} {
		for _, p := range []string{"/bob", "/creator"} {
			if code := call(t, c, proto.OpGetData, &proto.GetDataRequest{Path: p}, nil); code != proto.ErrNoAuth {
				t.Errorf("other reads %s: %v", p, code)
			}
			if code := call(t, c, proto.OpSetData, &proto.SetDataRequest{Path: p, Version: -1}, nil); code != proto.ErrNoAuth {
				t.Errorf("other writes %s: %v", p, code)
			}
		}
	}
}

func TestSaslSuperUser(t *testing.T) {
	srv := saslServer(t, func(o *server.Options) { o.SASL.SuperUser = "admin" })
	bob := dial(t, srv.Addr())
	saslLogin(t, bob, "bob", "bobsecret")
	bobACL := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: acl.SchemeSASL, ID: "bob"}}}
	if code := call(t, bob, proto.OpCreate, &proto.CreateRequest{Path: "/p", ACL: bobACL}, nil); code != proto.ErrOk {
		t.Fatalf("create: %v", code)
	}
	admin := dial(t, srv.Addr())
	saslLogin(t, admin, "admin", "adminsecret")
	if got := whoAmI(t, admin); !slices.Contains(got, proto.ClientInfo{AuthScheme: "super", User: ""}) {
		t.Fatalf("whoAmI = %+v", got)
	}
	if code := call(t, admin, proto.OpSetData, &proto.SetDataRequest{Path: "/p", Data: []byte("x"), Version: -1}, nil); code != proto.ErrOk {
		t.Fatalf("super writes: %v", code)
	}
}

func TestSaslFailuresCloseConnection(t *testing.T) {
	srv := saslServer(t, nil)
	tests := []struct {
		name string
		run  func(t *testing.T, c *rawzk.Conn)
	}{
		{"wrong password", func(t *testing.T, c *rawzk.Conn) {
			cli := sasl.NewClient(sasl.ClientConfig{User: "bob", Password: "wrong"})
			code, chal := saslStep(t, c, cli.Start())
			if code != proto.ErrOk {
				t.Fatalf("challenge: %v", code)
			}
			resp, err := cli.Next(chal)
			if err != nil {
				t.Fatal(err)
			}
			c.Send(proto.OpSasl, &proto.GetSASLRequest{Token: resp})
		}},
		{"unknown user", func(t *testing.T, c *rawzk.Conn) {
			cli := sasl.NewClient(sasl.ClientConfig{User: "eve", Password: "bobsecret"})
			_, chal := saslStep(t, c, cli.Start())
			resp, _ := cli.Next(chal)
			c.Send(proto.OpSasl, &proto.GetSASLRequest{Token: resp})
		}},
		{"initial response", func(t *testing.T, c *rawzk.Conn) {
			c.Send(proto.OpSasl, &proto.GetSASLRequest{Token: []byte("username=\"bob\"")})
		}},
		{"garbled response", func(t *testing.T, c *rawzk.Conn) {
			saslStep(t, c, []byte{})
			c.Send(proto.OpSasl, &proto.GetSASLRequest{Token: []byte("\x00\"\\")})
		}},
		{"oversized response", func(t *testing.T, c *rawzk.Conn) {
			saslStep(t, c, []byte{})
			c.Send(proto.OpSasl, &proto.GetSASLRequest{Token: []byte(strings.Repeat("a", sasl.MaxResponseSize+1))})
		}},
		{"bad record", func(t *testing.T, c *rawzk.Conn) {
			// A token length beyond the frame.
			var e jute.Encoder
			proto.AppendRequest(&e, &proto.RequestHeader{Xid: 1, Type: proto.OpSasl}, nil)
			e.WriteInt(1000)
			c.SendRaw(e.Bytes()[4:])
		}},
		{"again after success", func(t *testing.T, c *rawzk.Conn) {
			saslLogin(t, c, "bob", "bobsecret")
			c.Send(proto.OpSasl, &proto.GetSASLRequest{Token: []byte{}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, srv.Addr())
			tt.run(t, c)
			if code := readFailure(t, c); code != proto.ErrAuthFailed {
				t.Fatalf("code %v, want AuthFailed", code)
			}
			waitClosed(t, c)
		})
	}
}

func TestSaslNotConfigured(t *testing.T) {
	srv := zktest.Start(t)
	c := dial(t, srv.Addr())
	c.Send(proto.OpSasl, &proto.GetSASLRequest{Token: []byte{}})
	if code := readFailure(t, c); code != proto.ErrAuthFailed {
		t.Fatalf("code %v", code)
	}
	waitClosed(t, c)
}

func TestSaslEnforced(t *testing.T) {
	srv := saslServer(t, func(o *server.Options) { o.EnforceAuthSchemes = []string{"sasl"} })

	// Unauthenticated requests, pings included, close the connection.
	for _, op := range []proto.OpCode{proto.OpGetData, proto.OpPing, proto.OpCreate} {
		c := dial(t, srv.Addr())
		var req proto.Record
		switch op {
		case proto.OpGetData:
			req = &proto.GetDataRequest{Path: "/"}
		case proto.OpCreate:
			req = &proto.CreateRequest{Path: "/x", ACL: acl.OpenACLUnsafe}
		}
		h, err := c.Call(op, req, nil)
		if err != nil || h.Err != proto.ErrSessionClosedRequireSaslAuth {
			t.Fatalf("%v: %+v %v", op, h, err)
		}
		waitClosed(t, c)
	}
	// digest is not an enforced scheme: addauth is answered, the next
	// request refused.
	c := dial(t, srv.Addr())
	if h, err := c.Call(proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}, nil); err != nil || h.Err != proto.ErrOk {
		t.Fatalf("addauth: %+v %v", h, err)
	}
	if h, err := c.Call(proto.OpExists, &proto.ExistsRequest{Path: "/"}, nil); err != nil || h.Err != proto.ErrSessionClosedRequireSaslAuth {
		t.Fatalf("exists with digest only: %+v %v", h, err)
	}
	waitClosed(t, c)

	// Authenticated, everything works.
	c = dial(t, srv.Addr())
	saslLogin(t, c, "bob", "bobsecret")
	if code := call(t, c, proto.OpCreate, &proto.CreateRequest{Path: "/x", ACL: acl.OpenACLUnsafe}, nil); code != proto.ErrOk {
		t.Fatalf("create: %v", code)
	}
	if code := call(t, c, proto.OpPing, nil, nil); code != proto.ErrOk {
		t.Fatalf("ping: %v", code)
	}

	// A failed exchange is answered SessionClosedRequireSaslAuth.
	c = dial(t, srv.Addr())
	cli := sasl.NewClient(sasl.ClientConfig{User: "bob", Password: "wrong"})
	_, chal := saslStep(t, c, cli.Start())
	resp, _ := cli.Next(chal)
	c.Send(proto.OpSasl, &proto.GetSASLRequest{Token: resp})
	if code := readFailure(t, c); code != proto.ErrSessionClosedRequireSaslAuth {
		t.Fatalf("failed exchange: %v", code)
	}
	waitClosed(t, c)
}

func TestSaslEnforcedDigest(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.EnforceAuthSchemes = []string{"digest", "sasl"}; o.SASL.Users = saslUsers }))
	c := dial(t, srv.Addr())
	if h, err := c.Call(proto.OpAuth, &proto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}, nil); err != nil || h.Err != proto.ErrOk {
		t.Fatalf("addauth: %+v %v", h, err)
	}
	if code := call(t, c, proto.OpExists, &proto.ExistsRequest{Path: "/"}, nil); code != proto.ErrOk {
		t.Fatalf("exists: %v", code)
	}
}

func TestSaslOptionsValidated(t *testing.T) {
	tests := []struct {
		name string
		o    server.Options
		err  string
	}{
		{"sasl without users", server.Options{EnforceAuthSchemes: []string{"sasl"}}, "no SASL users"},
		{"digest disabled", server.Options{EnforceAuthSchemes: []string{"digest"}, DisableDigestAuth: true}, "digest authentication is disabled"},
		{"unknown", server.Options{EnforceAuthSchemes: []string{"x509"}}, `"x509" is not available`},
	}
	for _, tt := range tests {
		tt.o.Addr = "127.0.0.1:0"
		if _, err := server.New(tt.o); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}
