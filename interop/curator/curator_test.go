package curator_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/apachezk"
	"github.com/zkgo/zkgo/interop/curator"
)

var (
	apache    *apachezk.Server
	apacheErr error
)

func TestMain(m *testing.M) {
	apache, apacheErr = apachezk.Start(apachezk.Options{})
	if apacheErr != nil {
		fmt.Fprintln(os.Stderr, apachezk.SkipMessage(apacheErr))
	}
	code := m.Run()
	if apache != nil {
		if err := apache.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
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

// HOOK(zkgo): once the in-process zkgo server package exists, add here
// (or in any other test package) a test that starts it on 127.0.0.1 and makes
// the same single call with its address, e.g.
//
//	func TestCuratorAgainstZkgo(t *testing.T) {
//		srv := startZkgo(t) // in-process server listening on 127.0.0.1:0
//		curator.RunCuratorCheck(t, srv.Addr(), "/curator-check")
//	}
//
// The Java program is compiled only once per test process (curator.Shared),
// so the second test costs only its run time (~3-4s).
