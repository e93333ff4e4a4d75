package curator_test

import (
	"fmt"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
	"os"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/interop/curator"
)

var (
	apache    *apachezk.Server
	apacheErr error
)

func TestMain(m *testing.M) {
	// The Apache server also has SASL users (sasl_test.go).
	opts := apachezk.Options{}
	jaasDir, err := os.MkdirTemp("", "curator-jaas-")
	if err == nil {
		opts.SystemProperties, opts.ExtraConfig, err = apacheSASLOptions(jaasDir)
	}
	apacheSASL = err == nil
	apache, apacheErr = apachezk.Start(opts)
	if apacheErr != nil {
		fmt.Fprintln(os.Stderr, apachezk.SkipMessage(apacheErr))
	}
	code := m.Run()
	if apache != nil {
		if err := apache.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if jaasDir != "" {
		os.RemoveAll(jaasDir)
	}
	curator.Cleanup()
	os.Exit(code)
}

// TestCuratorAgainstApacheZooKeeper validates the check program itself: every
// scenario must pass against the reference implementation.
func TestCuratorAgainstApacheZooKeeper(t *testing.T) {
	apachezk.SkipIfUnavailable(t, apacheErr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache ZooKeeper log:\n%s", apache.LogTail())
		}
	})
	curator.RunCuratorCheck(t, apache.Addr(), fmt.Sprintf("/curator-check-%d", time.Now().UnixNano()))
}

// TestCuratorAgainstZkgo runs the same Curator program (LeaderLatch,
// LeaderSelector, InterProcessMutex, InterProcessReadWriteLock, CuratorCache)
// against an in-process zkgo server.
func TestCuratorAgainstZkgo(t *testing.T) {
	srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
		o.MaxSessionTimeout = 60 * time.Second
		o.ContainerCheckInterval = 100 * time.Millisecond
	}))
	curator.RunCuratorCheck(t, srv.Addr(), "/curator-check")
}
