package reconfigdiff

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
)

// Settings shared by both servers.
const (
	tickTime          = 100 * time.Millisecond
	minSessionTimeout = 200 * time.Millisecond
	maxSessionTimeout = 10 * time.Second
	superUser         = "super"
	superPassword     = "test"
)

// A member is one of the two quorums of one: its client address and the
// ports of its server.1 line, which the scripts name $PEER, $ELECTION and
// $CLIENT, and a free port ($SPARE) for a script that moves one of them.
type member struct {
	addr                          string
	peer, election, client, spare int
}

var (
	apache    *apachezk.Server
	apacheErr error
	zkgo      *server.Server
	zkgoErr   error

	apacheMember, zkgoMember member
	apacheStartTime          time.Duration
)

func TestMain(m *testing.M) {
	superDigest := apachezk.SuperDigest(superUser, superPassword)
	start := time.Now()
	apache, apacheErr = apachezk.Start(apachezk.Options{
		QuorumOfOne:       true,
		TickTime:          tickTime,
		MinSessionTimeout: minSessionTimeout,
		MaxSessionTimeout: maxSessionTimeout,
		SuperDigest:       superDigest,
		ExtraConfig:       map[string]string{"reconfigEnabled": "true"},
	})
	apacheStartTime = time.Since(start)
	var dir string
	if apacheErr != nil {
		fmt.Fprintln(os.Stderr, apachezk.SkipMessage(apacheErr))
	} else {
		apacheMember, apacheErr = readMember(apache.Addr())
		if apacheErr == nil {
			apacheMember.spare, apacheErr = freePort()
		}
		if apacheErr == nil {
			dir, zkgoErr = os.MkdirTemp("", "reconfigdiff-")
			if zkgoErr == nil {
				zkgo, zkgoMember, zkgoErr = startZkgo(dir, superDigest)
			}
			if zkgoErr != nil {
				fmt.Fprintf(os.Stderr, "starting zkgo: %v\n", zkgoErr)
			}
		}
	}
	code := m.Run()
	if zkgo != nil {
		zkgo.Close()
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
	if apache != nil {
		if err := apache.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// startZkgo starts zkgo as Apache runs: a one-member ensemble
// (standaloneEnabled=false) with reconfigEnabled=true and the super
// digest, on a data directory under dir. The election port is named in
// the configuration only (zkgo elects over the peer port).
func startZkgo(dir, superDigest string) (*server.Server, member, error) {
	var m member
	peerLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, m, err
	}
	m.peer = peerLn.Addr().(*net.TCPAddr).Port
	if m.election, err = freePort(); err != nil {
		return nil, m, err
	}
	if m.client, err = freePort(); err != nil {
		return nil, m, err
	}
	if m.spare, err = freePort(); err != nil {
		return nil, m, err
	}
	m.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(m.client))
	logOut := io.Discard
	if os.Getenv("ZKGO_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	s, err := server.New(server.Options{
		Addr:              m.addr,
		TickTime:          tickTime,
		MinSessionTimeout: minSessionTimeout,
		MaxSessionTimeout: maxSessionTimeout,
		SuperDigest:       superDigest,
		DataDir:           dir,
		NoSync:            true,
		ServerID:          1,
		Peers:             []server.Peer{{ID: 1, Addr: peerLn.Addr().String()}},
		PeerListener:      peerLn,
		DisableStandalone: true,
		ReconfigEnabled:   true,
		ConfigText:        fmt.Sprintf("server.1=127.0.0.1:%d:%d:participant;127.0.0.1:%d\nversion=0", m.peer, m.election, m.client),
		FourLetterWords:   []string{"*"},
		Logger:            slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		peerLn.Close()
		return nil, m, err
	}
	if err := s.Start(); err != nil {
		return nil, m, err
	}
	// The member forms its ensemble of one in the background: wait until
	// it takes sessions.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := rawzk.Dial(m.addr, rawzk.Options{})
		if err == nil {
			c.Close()
			return s, m, nil
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, m, fmt.Errorf("zkgo took no session within 30s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var memberLineRE = regexp.MustCompile(`(?m)^server\.1=127\.0\.0\.1:(\d+):(\d+):participant;127\.0\.0\.1:(\d+)$`)

// readMember reads the ports of the server.1 line of /zookeeper/config.
func readMember(addr string) (member, error) {
	m := member{addr: addr}
	c, err := rawzk.Dial(addr, rawzk.Options{})
	if err != nil {
		return m, err
	}
	defer c.Close()
	resp := &proto.GetDataResponse{}
	h, err := c.Call(proto.OpGetData, &proto.GetDataRequest{Path: "/zookeeper/config"}, resp)
	if err == nil && h.Err != proto.ErrOk {
		err = fmt.Errorf("getData /zookeeper/config: %v", h.Err)
	}
	if err != nil {
		return m, err
	}
	f := memberLineRE.FindStringSubmatch(string(resp.Data))
	if f == nil {
		return m, fmt.Errorf("no server.1 line in /zookeeper/config: %q", resp.Data)
	}
	m.peer, _ = strconv.Atoi(f[1])
	m.election, _ = strconv.Atoi(f[2])
	m.client, _ = strconv.Atoi(f[3])
	return m, nil
}

// vars are the member's values of the scripts' variables.
func (m member) vars() map[string]string {
	return map[string]string{
		"PEER":     strconv.Itoa(m.peer),
		"ELECTION": strconv.Itoa(m.election),
		"CLIENT":   strconv.Itoa(m.client),
		"SPARE":    strconv.Itoa(m.spare),
	}
}

// requireServers skips (or fails) the test when Apache ZooKeeper is not
// available, and fails it when zkgo did not start.
func requireServers(t *testing.T) {
	t.Helper()
	apachezk.SkipIfUnavailable(t, apacheErr)
	if zkgoErr != nil {
		t.Fatalf("zkgo did not start: %v", zkgoErr)
	}
	if apacheErr == nil && zkgo == nil {
		t.Fatal(errors.New("zkgo did not start"))
	}
}
