package zk

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// The SASL users of both test servers: zkgo's from SASLOptions, Apache's
// from the JAAS file TestMain gives its JVM (apacheSASLOptions).
var testSASLUsers = map[string]string{"bob": "bobsecret", "alice": "alicesecret"}

const testJAAS = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bobsecret"
    user_alice="alicesecret";
};
`

// apacheSASLOptions writes the JAAS file for the package's Apache JVM into
// dir and returns the system properties and zoo.cfg entries that enable
// SASL DIGEST-MD5 with the sasl ACL provider.
func apacheSASLOptions(dir string) (props, cfg map[string]string, err error) {
	p := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(p, []byte(testJAAS), 0o600); err != nil {
		return nil, nil, err
	}
	return map[string]string{"java.security.auth.login.config": p},
		map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"}, nil
}

func zkgoSASLEnv(t *testing.T, fn func(*server.Options)) (*env, *zktest.Server) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.MaxSessionTimeout = 30 * time.Second
		o.SASL.Users = testSASLUsers
		if fn != nil {
			fn(o)
		}
	}))
	return &env{name: "zkgo", addr: srv.Addr(), maxTimeout: 30 * time.Second}, srv
}

func TestSASL(t *testing.T) {
	t.Run("zkgo", func(t *testing.T) {
		e, _ := zkgoSASLEnv(t, nil)
		testSASL(t, e, &netCtl{addr: e.addr}, true)
	})
	t.Run("apache", func(t *testing.T) {
		e := apacheEnv(t)
		if !apacheSASL {
			t.Skip("Apache ZooKeeper was started without SASL")
		}
		// ZooKeeper 3.8's SaslServerCallbackHandler keeps the last known
		// user name in a field shared by all connections and does not
		// clear it for an unknown name: an unknown user with the password
		// of the user authenticated last gets in (as sasl:<unknown>).
		// zkgo refuses unknown users; that case is checked on zkgo only.
		testSASL(t, e, &netCtl{}, false)
	})
}

// testSASL checks DIGEST-MD5 against a server whose users are
// testSASLUsers: the identity, sasl ACL enforcement, a reconnection (which
// authenticates again), and refused credentials (an unknown user only if
// unknownRefused).
func testSASL(t *testing.T, e *env, n *netCtl, unknownRefused bool) {
	ctx := testCtx(t)
	bob := connect(t, e.addr, WithSASL("bob", "bobsecret"), WithDialer(n.dial))
	who, err := bob.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(who, proto.ClientInfo{AuthScheme: "sasl", User: "bob"}) {
		t.Fatalf("whoAmI = %+v", who)
	}
	root := testRoot(t, bob)
	bobACL := []proto.ACL{{Perms: proto.PermAll, ID: proto.Id{Scheme: "sasl", ID: "bob"}}}
	p := root + "/bob"
	if _, err := bob.Create(ctx, p, []byte("b"), bobACL, proto.ModePersistent); err != nil {
		t.Fatal(err)
	}
	acls, _, err := bob.GetACL(ctx, p)
	if err != nil || !slices.Equal(acls, bobACL) {
		t.Fatalf("getACL = %+v, %v", acls, err)
	}

	anon := connect(t, e.addr)
	alice := connect(t, e.addr, WithSASL("alice", "alicesecret"))
	for _, c := range []*Conn{anon, alice} {
		if _, _, err := c.Get(ctx, p); !errors.Is(err, ErrNoAuth) {
			t.Errorf("other reads: %v", err)
		}
		if _, err := c.Set(ctx, p, nil, -1); !errors.Is(err, ErrNoAuth) {
			t.Errorf("other writes: %v", err)
		}
	}

	// A new connection of the same session authenticates again.
	states := recordStates(bob)
	n.cut()
	states.wait(t, 0, StateReconnected)
	if data, _, err := bob.Get(ctx, p); err != nil || string(data) != "b" {
		t.Fatalf("after reconnecting: %q %v", data, err)
	}
	if err := bob.Delete(ctx, p, -1); err != nil {
		t.Fatal(err)
	}
	bob.Delete(ctx, root, -1)

	bad := [][2]string{{"bob", "wrong"}, {"bob", ""}, {"alice", "bobsecret"}}
	if unknownRefused {
		bad = append(bad, [2]string{"eve", "bobsecret"})
	}
	for _, cred := range bad {
		c, err := Connect(ctx, e.addr, WithSASL(cred[0], cred[1]), WithSessionTimeout(10*time.Second))
		if err == nil {
			c.Close()
			t.Fatalf("%s/%s: connected", cred[0], cred[1])
		}
		var ze *Error
		if !errors.Is(err, ErrAuthFailed) || !errors.As(err, &ze) || ze.Op != "sasl" {
			t.Fatalf("%s/%s: err = %v", cred[0], cred[1], err)
		}
	}
}

func TestSASLNotConfiguredZkgo(t *testing.T) {
	srv := zktest.Start(t)
	_, err := Connect(testCtx(t), srv.Addr(), WithSASL("bob", "bobsecret"))
	if !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("err = %v", err)
	}
}

func TestSASLEnforcedZkgo(t *testing.T) {
	e, _ := zkgoSASLEnv(t, func(o *server.Options) { o.EnforceAuthSchemes = []string{"sasl"} })
	ctx := testCtx(t)
	c := connect(t, e.addr, WithSASL("bob", "bobsecret"))
	if _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	// Without SASL the first request is refused and the connection closed.
	anon := connect(t, e.addr, WithConnectBackoff(time.Millisecond, 10*time.Millisecond))
	if _, err := anon.Exists(ctx, "/"); !errors.Is(err, ErrSessionClosedRequireSaslAuth) {
		t.Fatalf("unauthenticated: %v", err)
	}
	// A failed exchange says so too, and still counts as AuthFailed.
	_, err := Connect(ctx, e.addr, WithSASL("bob", "wrong"))
	if !errors.Is(err, ErrAuthFailed) || !errors.Is(err, ErrSessionClosedRequireSaslAuth) {
		t.Fatalf("bad password: %v", err)
	}
}

// A server that refuses SASL on a reconnection ends the Conn: StateLost,
// and operations fail with ErrAuthFailed (the Java client's AUTH_FAILED).
func TestSASLRefusedOnReconnect(t *testing.T) {
	_, srv := zkgoSASLEnv(t, nil)
	// After the first connection, dials reach a fake server that accepts
	// the session and refuses SASL.
	fake := fakeSASLRefuser(t)
	n := &netCtl{addr: srv.Addr()}
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) > 1 {
			addr = fake
		}
		return n.dial(ctx, network, addr)
	}
	ctx := testCtx(t)
	c := connect(t, srv.Addr(), WithSASL("bob", "bobsecret"), WithDialer(dial))
	states := recordStates(c)
	n.cut()
	states.wait(t, 0, StateLost)
	if _, err := c.Exists(ctx, "/"); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("after refusal: %v", err)
	}
}

// fakeSASLRefuser is a server that accepts any session and answers the
// first request with AuthFailed and a null token, as ZooKeeper answers a
// failed SASL step. It returns its address.
func fakeSASLRefuser(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(nc)
				frame, err := proto.ReadFrame(br, nil, 1<<20)
				if err != nil {
					return
				}
				var req proto.ConnectRequest
				req.Decode(jute.NewDecoder(frame))
				var e jute.Encoder
				proto.AppendFrame(&e, nil, &proto.ConnectResponse{TimeOut: req.TimeOut, SessionID: req.SessionID, Passwd: req.Passwd, HasReadOnly: true})
				nc.Write(e.Bytes())
				frame, err = proto.ReadFrame(br, nil, 1<<20)
				if err != nil {
					return
				}
				var h proto.RequestHeader
				h.Decode(jute.NewDecoder(frame))
				e.Reset(nil)
				proto.AppendReply(&e, &proto.ReplyHeader{Xid: h.Xid, Err: proto.ErrAuthFailed}, &proto.SetSASLResponse{})
				nc.Write(e.Bytes())
			}()
		}
	}()
	return ln.Addr().String()
}
