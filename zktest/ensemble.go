package zktest

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/server"
)

// Ensemble is an ensemble of in-process members over TCP on 127.0.0.1,
// configured as zoo.cfg files would configure them (server.N lines with
// fixed client addresses, the dynamic configuration text), each with its
// own data directory. Unlike StartCluster's, its members talk over real
// peer connections, so servers can join it by reconfig.
type Ensemble struct {
	t testing.TB
	// Members are the servers (nil for those not started).
	Members []*server.Server
	// ClientAddrs are the members' client addresses.
	ClientAddrs []string
	// Config holds every server's line (Config.Servers), started or not.
	Config *config.Config
	opts   []Option
	lns    []net.Listener
	// clns are the client ports' listeners, open from the start so that
	// no other socket takes a port before its member starts.
	clns []net.Listener
}

// StartEnsemble configures n servers and starts the first `start`, whose
// configuration lists only those; the others can be started later with
// Start (knowing the started ones and themselves, as a server added by
// reconfig is). Everything is closed when the test ends.
func StartEnsemble(t testing.TB, n, start int, opts ...Option) *Ensemble {
	t.Helper()
	e := &Ensemble{t: t, Members: make([]*server.Server, n), ClientAddrs: make([]string, n), lns: make([]net.Listener, n), clns: make([]net.Listener, n), opts: opts}
	var text strings.Builder
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		e.lns[i] = ln
		cln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		e.clns[i] = cln
		e.ClientAddrs[i] = cln.Addr().String()
		fmt.Fprintf(&text, "server.%d=127.0.0.1:%d:%d;%s\n", i+1, ln.Addr().(*net.TCPAddr).Port, FreePort(t), e.ClientAddrs[i])
	}
	fmt.Fprintf(&text, "tickTime=100\nadmin.enableServer=false\ndataDir=%s\n", t.TempDir())
	cfg, _, err := config.Parse(strings.NewReader(text.String()), "zoo.cfg")
	if err != nil {
		t.Fatal(err)
	}
	e.Config = cfg
	t.Cleanup(func() {
		for _, m := range e.Members {
			if m != nil {
				m.Close()
			}
		}
		for _, ln := range append(e.lns, e.clns...) {
			ln.Close()
		}
	})
	for i := range start {
		e.Start(i, start)
	}
	return e
}

// Start starts member i (0-based) with a configuration that lists the
// first `known` servers and itself.
func (e *Ensemble) Start(i, known int) {
	e.t.Helper()
	servers := e.Config.Servers[:known]
	if i >= known {
		servers = append(servers[:known:known], e.Config.Servers[i])
	}
	var peers []server.Peer
	for _, sv := range servers {
		peers = append(peers, server.Peer{ID: sv.ID, Addr: fmt.Sprintf("%s:%d", sv.Host, sv.PeerPort), Observer: sv.Role == config.Observer})
	}
	o := server.Options{
		Addr: e.ClientAddrs[i], TickTime: 100 * time.Millisecond, DataDir: e.t.TempDir(), NoSync: true,
		ServerID: int64(i + 1), Peers: peers, PeerListener: e.lns[i], ClientListener: e.clns[i], ConfigText: config.ServersText(servers, e.Config.Version),
		FourLetterWords: []string{"*"},
		IdleAfter:       2 * time.Millisecond, // as zktest.New
		Logger:          slog.New(slog.NewTextHandler(logOutput(), nil)).With("member", i+1),
	}
	for _, fn := range e.opts {
		fn(&o)
	}
	s, err := server.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.Members[i] = s
}

// Line returns server i's dynamic configuration line
// ("server.N=host:peer:election:participant;clientAddr:port"), as a
// reconfig adds it.
func (e *Ensemble) Line(i int) string {
	for _, l := range strings.Split(e.Config.DynamicText(), "\n") {
		if strings.HasPrefix(l, fmt.Sprintf("server.%d=", i+1)) {
			return l
		}
	}
	return ""
}
