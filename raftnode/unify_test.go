package raftnode

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/tests/framework/tlstest"
)

// peerTLSConfigs returns the accepting and dialling TLS configurations of
// a member whose certificate and trust store are in f.
func peerTLSConfigs(t *testing.T, f *tlstest.Files) (srv, cli *tls.Config) {
	t.Helper()
	o := tlsconf.Options{KeyStore: tlsconf.Store{Location: f.Path("member")}, TrustStore: tlsconf.Store{Location: f.Path("ca")},
		ClientAuth: "need", HostnameVerification: true}
	srv, err := tlsconf.ServerConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	cli, err = tlsconf.ClientConfig(o, "")
	if err != nil {
		t.Fatal(err)
	}
	return srv, cli
}

// newTCPWith starts a transport with the given TLS settings.
func newTCPWith(t *testing.T, id uint64, adjust func(*TCPConfig)) (*TCPTransport, *recorder) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := TCPConfig{ID: id, ClusterID: 7, Listener: ln, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond}
	adjust(&cfg)
	tr, err := NewTCPTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if err := tr.Start(rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return tr, rec
}

// ZooKeeper's portUnification: during the rolling switch between plaintext
// and TLS, a member takes both plaintext and TLS peers on its peer port;
// without it, a TLS member refuses a plaintext one.
func TestTCPPortUnification(t *testing.T) {
	files := tlstest.WriteFiles(t, t.TempDir(), "member")
	srv, cli := peerTLSConfigs(t, files)
	unified, urec := newTCPWith(t, 1, func(c *TCPConfig) { c.ServerTLS, c.AcceptPlaintext = srv, true })
	tlsOnly, trec := newTCPWith(t, 2, func(c *TCPConfig) { c.ServerTLS = srv })

	plain, prec := newTCPWith(t, 3, func(*TCPConfig) {})
	secure, _ := newTCPWith(t, 4, func(c *TCPConfig) { c.ServerTLS, c.ClientTLS = srv, cli })

	for _, from := range []*TCPTransport{plain, secure} {
		from.AddPeer(1, unified.Addr().String())
		id := from.id.Load()
		from.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: id, To: 1, Term: id}})
		if m := recv(t, urec.msgs, "a message on the unified port"); m.From != id {
			t.Fatalf("got a message from %d, want %d", m.From, id)
		}
	}

	// The TLS-only member refuses the plaintext dialler, takes the TLS one.
	plain.AddPeer(2, tlsOnly.Addr().String())
	plain.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 3, To: 2}})
	if id := recv(t, prec.unreachable, "unreachable"); id != 2 {
		t.Fatalf("unreachable %d", id)
	}
	secure.AddPeer(2, tlsOnly.Addr().String())
	secure.Send([]raftpb.Message{{Type: raftpb.MsgHeartbeat, From: 4, To: 2}})
	if m := recv(t, trec.msgs, "a message over TLS"); m.From != 4 {
		t.Fatalf("got a message from %d", m.From)
	}
	select {
	case m := <-trec.msgs:
		t.Fatalf("the TLS-only member took %v", m)
	default:
	}

	// A unified port closes a connection that sends nothing.
	c, err := net.Dial("tcp", unified.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a silent connection got an answer")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a silent connection to the unified port was kept open")
	}
}
