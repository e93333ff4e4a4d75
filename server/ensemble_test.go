package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/internal/tlstest"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// lockedBuffer is a bytes.Buffer for a logger written from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A member of another ensemble — a zoo.cfg that lists one of this
// ensemble's members by mistake — is refused by the peer handshake, and
// says so on both sides; the ensemble's identity is recorded in every
// member's data directory.
func TestEnsembleRefusesStranger(t *testing.T) {
	var logs lockedBuffer
	c := startCluster(t, 3, 0, func(o *server.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	c.leader()
	for i := range 3 {
		b, err := os.ReadFile(filepath.Join(c.dirs[i], "zkgo", "ENSEMBLE"))
		if err != nil || !strings.HasPrefix(string(b), "ensemble ") {
			t.Fatalf("member %d: ENSEMBLE %q, %v", i+1, b, err)
		}
	}
	// The stranger believes member 1 of this ensemble is its member 1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	otherAddr := fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t))
	var strangerLogs lockedBuffer
	stranger, err := server.New(server.Options{
		Addr: "127.0.0.1:0", TickTime: 50 * time.Millisecond, DataDir: t.TempDir(), NoSync: true,
		ServerID: 2, PeerListener: ln,
		Peers:  []server.Peer{{ID: 1, Addr: c.peers[0].Addr}, {ID: 2, Addr: ln.Addr().String()}, {ID: 3, Addr: otherAddr}},
		Logger: slog.New(slog.NewTextHandler(&strangerLogs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "refused a peer connection") || !strings.Contains(strangerLogs.String(), "peer refused the connection") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged\n--- ensemble ---\n%s\n--- stranger ---\n%s", tail(logs.String()), tail(strangerLogs.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "cluster") {
		t.Fatalf("the refusal does not name the ensemble mismatch:\n%s", tail(logs.String()))
	}
	if stranger.Mode() == "leader" || c.members[0].Mode() == "" {
		t.Fatal("the stranger leads")
	}
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// The ensemble's identity is fixed at first start: a member restarted
// with a zoo.cfg whose member list changed since (here, an extra
// observer line) keeps the recorded identity and rejoins.
func TestEnsembleIdentityRecordedAtFirstStart(t *testing.T) {
	c := startCluster(t, 3, 0)
	lead := c.leader()
	m := (lead + 1) % 3
	before, err := os.ReadFile(filepath.Join(c.dirs[m], "zkgo", "ENSEMBLE"))
	if err != nil {
		t.Fatal(err)
	}
	c.members[m].Close()
	c.members[m] = nil
	ln, err := net.Listen("tcp", c.peers[m].Addr)
	if err != nil {
		t.Fatal(err)
	}
	spareAddr := fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t))
	peers := append(slices.Clone(c.peers), server.Peer{ID: 9, Addr: spareAddr, Observer: true})
	c.opts = append(c.opts, func(o *server.Options) {
		if o.ServerID == int64(m+1) {
			o.Peers = peers
		}
	})
	c.start(m, ln)
	after, err := os.ReadFile(filepath.Join(c.dirs[m], "zkgo", "ENSEMBLE"))
	if err != nil || string(after) != string(before) {
		t.Fatalf("ENSEMBLE changed: %q → %q (%v)", before, after, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := zk.Connect(ctx, c.addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Create(ctx, "/after-restart", []byte("r"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	c.waitNode(m, "/after-restart", "r")
}

// sslQuorum: members talk over mutual TLS; a member whose certificate the
// others' trust store does not accept cannot join, and the refusal is
// logged.
func TestPeerTLS(t *testing.T) {
	files := tlstest.WriteFiles(t, t.TempDir(), "member")
	strangers := tlstest.WriteFiles(t, t.TempDir(), "member")
	peerTLS := func(f *tlstest.Files) (srv, cli *tls.Config) {
		o := tlsconf.Options{KeyStore: tlsconf.Store{Location: f.Path("member")}, TrustStore: tlsconf.Store{Location: files.Path("ca")},
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
	var logs lockedBuffer
	c := startCluster(t, 3, 0, func(o *server.Options) {
		f := files
		if o.ServerID == 3 {
			f = strangers // signed by another CA
		}
		o.PeerServerTLS, o.PeerClientTLS = peerTLS(f)
		if o.ServerID != 3 {
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
	})
	lead := c.leader()
	if lead == 2 {
		t.Fatal("the member with a foreign certificate leads")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := zk.Connect(ctx, c.addr(lead))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Create(ctx, "/over-tls", []byte("t"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	c.waitNode((lead+1)%2, "/over-tls", "t") // the other trusted member
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "refused a peer connection") || !strings.Contains(logs.String(), "certificate") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal of the foreign certificate logged:\n%s", tail(logs.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	found := false
	c.members[2].Tree(func(tr *tree.Tree) { found = tr.Get("/over-tls") != nil })
	if found {
		t.Fatal("the member with a foreign certificate got the write")
	}
}
