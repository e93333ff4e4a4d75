package raftnode

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Fuzz targets of what a peer sends before raft sees it: the hello (and
// the auth frames before it), and a snapshot stream. Run a campaign with
//
//	go test -run XXX -fuzz '^FuzzAccept$' -fuzztime 60s ./raftnode/
//
// As normal tests they run their seeds.

func frame(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return append(out, b...)
}

// FuzzParseHello: parseHello never panics, and what it accepts has a
// known magic and a sender and receiver it read from the bytes.
func FuzzParseHello(f *testing.F) {
	tr := &TCPTransport{cfg: TCPConfig{Instance: 7}}
	tr.id.Store(1)
	tr.cluster.Store(0xc1)
	for _, frm := range []uint64{0, FormationPending, 0x1234} {
		tr.formation.Store(frm)
		f.Add(tr.hello(helloMagic, 2))
		f.Add(tr.hello(snapMagic2, 2))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := parseHello(b)
		if !ok {
			return
		}
		if h.magic != helloMagic && h.magic != snapMagic && h.magic != snapMagic2 {
			t.Fatalf("accepted magic %q", h.magic)
		}
		if h.from != binary.BigEndian.Uint64(b[20:]) || h.to != binary.BigEndian.Uint64(b[28:]) {
			t.Fatal("sender or receiver not read from the hello")
		}
	})
}

// helloFor is the version 1 hello of member from to member to.
func helloFor(cluster, from, to uint64) []byte {
	t := &TCPTransport{}
	t.id.Store(from)
	t.cluster.Store(cluster)
	return t.hello(helloMagic, to)
}

// acceptOnce runs a transport's accept on one end of a pipe whose other
// end sends in and reads whatever comes back; it returns when accept
// does, which its deadline bounds.
func acceptOnce(t *TCPTransport, in []byte) {
	srv, cli := net.Pipe()
	defer srv.Close()
	go func() {
		defer cli.Close()
		go io.Copy(io.Discard, cli)
		cli.SetWriteDeadline(time.Now().Add(time.Second))
		cli.Write(in)
	}()
	t.accept(srv)
}

// fuzzTransport is a started transport (no listener) with quorum SASL
// (DIGEST-MD5 stand-in: a one-round mechanism) and probes answered.
func fuzzTransport() *TCPTransport {
	t := &TCPTransport{cfg: TCPConfig{DialTimeout: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Probe: func(req []byte, _ *tls.ConnectionState) []byte { return []byte("{}") },
		Auth: &PeerAuth{
			NewServer: func(mech string) (AuthServer, error) { return &echoAuth{}, nil },
			Authorize: func(from uint64, principal string) error { return nil },
		}}}
	t.log = t.cfg.Logger
	t.ctx = context.Background()
	t.id.Store(1)
	t.cluster.Store(0xc1)
	t.started = true
	return t
}

// echoAuth authenticates a dialer whose second token is "secret".
type echoAuth struct {
	n    int
	done bool
}

func (a *echoAuth) Next(tok []byte) ([]byte, error) {
	a.n++
	if a.n == 2 && string(tok) == "secret" {
		a.done = true
	}
	return []byte("challenge"), nil
}
func (a *echoAuth) Done() bool        { return a.done }
func (a *echoAuth) Principal() string { return "peer" }

// FuzzAccept: whatever a dialer sends — auth frames, a hello, garbage,
// frames cut short — accept answers or gives up within its deadline,
// never panics, and lets in only a well-formed hello of this cluster to
// this member.
func FuzzAccept(f *testing.F) {
	good := helloFor(0xc1, 2, 1)
	f.Add(frame(good))
	f.Add(append(frame(append([]byte(authMagic+"\x04MECH"), "first"...)), append(frame([]byte("secret")), frame(good)...)...))
	f.Add(frame(append([]byte(authMagic), 0xff)))
	f.Add(frame(helloFor(0xc1, 0, 0)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	tr := fuzzTransport()
	f.Fuzz(func(t *testing.T, in []byte) {
		acceptOnce(tr, in)
	})
}

// FuzzSnapshotStream: a snapshot stream of any bytes after the handshake
// never panics the receiver and ends within the deadlines.
func FuzzSnapshotStream(f *testing.F) {
	m := raftpb.Message{Type: raftpb.MsgSnap, From: 2, To: 1, Term: 3,
		Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 10, Term: 3}}}
	hdr, _ := m.Marshal()
	data := []byte("snapshot data")
	var stream bytes.Buffer
	stream.Write(frame(hdr))
	stream.Write(frame(binary.BigEndian.AppendUint64(nil, uint64(len(data)))))
	stream.Write(frame(data))
	stream.Write(frame(nil))
	stream.Write(frame(binary.BigEndian.AppendUint32(nil, 0)))
	f.Add(stream.Bytes())
	f.Add(frame(hdr))
	tr := fuzzTransport()
	tr.cfg.WriteTimeout = 50 * time.Millisecond
	tr.h = sinkHandler{}
	f.Fuzz(func(t *testing.T, in []byte) {
		srv, cli := net.Pipe()
		go func() {
			defer cli.Close()
			go io.Copy(io.Discard, cli)
			cli.SetWriteDeadline(time.Now().Add(time.Second))
			cli.Write(in)
		}()
		tr.receiveSnapshot(srv, 2, true, tr.log)
		srv.Close()
	})
}

// sinkHandler takes whatever a transport delivers and keeps nothing.
type sinkHandler struct{}

func (sinkHandler) Process(ctx context.Context, m raftpb.Message) error  { return nil }
func (sinkHandler) ReportUnreachable(id uint64)                          {}
func (sinkHandler) ReportSnapshot(id uint64, status raft.SnapshotStatus) {}
func (sinkHandler) ReportProposalLost(id uint64)                         {}
func (sinkHandler) ProcessSnapshot(ctx context.Context, m raftpb.Message, data io.Reader) error {
	_, err := io.Copy(io.Discard, data)
	return err
}
