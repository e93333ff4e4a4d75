package curator_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/interop/curator"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// TestEnsembleTracker: Curator's EnsembleTracker (on by default) reads
// /zookeeper/config from a zkgo ensemble and rewrites its connection string
// from the client addresses there. Curator is given one member only; it
// must end up with all three, and keep working when that member stops.
func TestEnsembleTracker(t *testing.T) {
	const n = 3
	var cfgText strings.Builder
	clientAddrs := make([]string, n)
	peerLns := make([]net.Listener, n)
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peerLns[i] = ln
		clientAddrs[i] = fmt.Sprintf("127.0.0.1:%d", zktest.FreePort(t))
		fmt.Fprintf(&cfgText, "server.%d=127.0.0.1:%d:%d;%s\n", i+1, ln.Addr().(*net.TCPAddr).Port, zktest.FreePort(t), clientAddrs[i])
	}
	fmt.Fprintf(&cfgText, "tickTime=100\ndataDir=%s\n", t.TempDir())
	cfg, _, err := config.Parse(strings.NewReader(cfgText.String()), "zoo.cfg")
	if err != nil {
		t.Fatal(err)
	}
	var peers []server.Peer
	for _, sv := range cfg.Servers {
		peers = append(peers, server.Peer{ID: sv.ID, Addr: fmt.Sprintf("%s:%d", sv.Host, sv.PeerPort)})
	}
	members := make([]*server.Server, n)
	for i := 0; i < n; i++ {
		s, err := server.New(server.Options{
			Addr: clientAddrs[i], TickTime: 100 * time.Millisecond, DataDir: t.TempDir(), NoSync: true,
			ServerID: int64(i + 1), Peers: peers, PeerListener: peerLns[i], ConfigText: cfg.DynamicText(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		members[i] = s
		defer func() {
			if members[i] != nil {
				members[i].Close()
			}
		}()
	}
	java := curator.StartPeer(t, clientAddrs[0])
	want := slices.Clone(clientAddrs)
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := strings.Split(java.Do(t, "connect-string"), ",")
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Curator's connection string %v, want %v (/zookeeper/config:\n%s)", got, want, cfg.DynamicText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The member Curator was given goes away; Curator goes on through the
	// others it learnt from /zookeeper/config.
	members[0].Close()
	members[0] = nil
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		if java.Do(t, "mutex-acquire /ensemble-lock 5000") == "LOCKED" {
			java.Want(t, "OK", "mutex-release /ensemble-lock")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("Curator could not take a lock after the member it was given stopped")
}
