package difftest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/zktest"
)

// Settings shared by both servers.
const (
	tickTime               = 100 * time.Millisecond
	minSessionTimeout      = 200 * time.Millisecond
	maxSessionTimeout      = 10 * time.Second
	containerCheckInterval = 100 * time.Millisecond
	superUser              = "super"
	superPassword          = "test"
)

var (
	apache    *apachezk.Server
	apacheErr error
	zkgo      *zktest.Server
	zkgoErr   error

	apacheStartTime time.Duration
)

func TestMain(m *testing.M) {
	superDigest := apachezk.SuperDigest(superUser, superPassword)
	start := time.Now()
	apache, apacheErr = apachezk.Start(apachezk.Options{
		TickTime:               tickTime,
		MinSessionTimeout:      minSessionTimeout,
		MaxSessionTimeout:      maxSessionTimeout,
		ExtendedTypes:          true,
		ContainerCheckInterval: containerCheckInterval,
		SuperDigest:            superDigest,
		// zkgo enforces hard quota limits by default; Apache only with this.
		SystemProperties: map[string]string{"zookeeper.enforceQuota": "true"},
		// For admin_test.go, which compares the commands' JSON.
		AdminServer: true,
	})
	apacheStartTime = time.Since(start)
	if apacheErr != nil {
		fmt.Fprintln(os.Stderr, apachezk.SkipMessage(apacheErr))
	} else {
		zkgo, zkgoErr = zktest.New(
			zktest.WithTickTime(tickTime),
			zktest.WithExtendedTypes(),
			zktest.WithSuperDigest(superDigest),
			zktest.WithContainerCheckInterval(containerCheckInterval),
			zktest.WithOptions(func(o *server.Options) {
				o.MinSessionTimeout = minSessionTimeout
				o.MaxSessionTimeout = maxSessionTimeout
				o.EnforceQuota = true
				o.AdminAddr = "127.0.0.1:0"
			}),
		)
		if zkgoErr != nil {
			fmt.Fprintf(os.Stderr, "starting zkgo: %v\n", zkgoErr)
		}
	}
	code := m.Run()
	if zkgo != nil {
		zkgo.Close()
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

// requireServers skips (or fails) the test when Apache ZooKeeper is not
// available, and fails it when zkgo did not start.
func requireServers(t *testing.T) {
	t.Helper()
	apachezk.SkipIfUnavailable(t, apacheErr)
	if zkgoErr != nil {
		t.Fatalf("zkgo did not start: %v", zkgoErr)
	}
}
