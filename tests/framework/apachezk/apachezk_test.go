package apachezk

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestSuperDigest(t *testing.T) {
	// Value printed by Apache's DigestAuthenticationProvider main for
	// "super:test".
	if got, want := SuperDigest("super", "test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU="; got != want {
		t.Fatalf("SuperDigest = %q, want %q", got, want)
	}
}

func TestStartRuokStop(t *testing.T) {
	start := time.Now()
	s, err := Start(Options{
		ExtendedTypes: true,
		SuperDigest:   SuperDigest("super", "test"),
	})
	SkipIfUnavailable(t, err)
	t.Logf("Apache ZooKeeper %s serving on %s after %v", s.Version(), s.Addr(), time.Since(start).Round(time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			s.Stop()
		}
	}()

	if r, err := s.FourLetterWord("ruok"); err != nil || r != "imok" {
		t.Fatalf("ruok = %q, %v\n%s", r, err, s.LogTail())
	}
	if !strings.HasPrefix(s.Version(), "3.8") {
		t.Errorf("version %q, want 3.8.x", s.Version())
	}
	conf, err := s.FourLetterWord("conf")
	if err != nil {
		t.Fatalf("conf: %v", err)
	}
	for _, want := range []string{"tickTime=100", "maxSessionTimeout=60000", "clientPort="} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf output lacks %q:\n%s", want, conf)
		}
	}
	envi, err := s.FourLetterWord("envi")
	if err != nil {
		t.Fatalf("envi: %v", err)
	}
	if !strings.Contains(envi, "java.version=") {
		t.Errorf("envi output unexpected:\n%s", envi)
	}
	if !strings.Contains(s.LogTail(), "ZooKeeperServer") {
		t.Errorf("log tail does not look like a ZooKeeper log:\n%s", s.LogTail())
	}

	dir := s.Dir()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s still exists after Stop (err=%v)", dir, err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Errorf("port %s still accepts connections after Stop", s.Addr())
	}
}

func TestNotInstalled(t *testing.T) {
	t.Setenv(ClasspathEnv, "")
	_, err := Start(Options{Java: "/nonexistent/java"})
	if err == nil {
		t.Fatal("Start with a missing java succeeded")
	}
	// A missing java executable given explicitly is a start failure,
	// but a missing java in PATH is ErrNotInstalled.
	t.Setenv("PATH", t.TempDir())
	t.Setenv("JAVA_HOME", "")
	_, err = Start(Options{})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Start without java in PATH: err = %v, want ErrNotInstalled", err)
	}
	if msg := SkipMessage(err); !strings.HasPrefix(msg, "skipping: Apache ZooKeeper 3.8 not installed (apt-get install zookeeper)") {
		t.Errorf("SkipMessage = %q", msg)
	}
}

func TestQuorumOfOneAndSecurePort(t *testing.T) {
	netty, err := NettyJars()
	if err != nil {
		SkipIfUnavailable(t, err)
	}
	s, err := Start(Options{
		QuorumOfOne:      true,
		SecureClientPort: true,
		ExtraClasspath:   netty,
		ExtraConfig:      map[string]string{"reconfigEnabled": "true"},
		SystemProperties: map[string]string{"zookeeper.serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory"},
	})
	if err != nil {
		SkipIfUnavailable(t, err)
		t.Fatal(err)
	}
	defer s.Stop()
	r, err := s.FourLetterWord("srvr")
	if err != nil || !strings.Contains(r, "Mode: leader") {
		t.Fatalf("srvr = %q, %v; want a one-member quorum's leader", r, err)
	}
	if s.SecureAddr() == "" {
		t.Fatal("no secure address")
	}
}
