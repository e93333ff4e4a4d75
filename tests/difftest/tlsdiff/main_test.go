package tlsdiff

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/zktest"
)

// Settings shared by both servers.
const (
	tickTime      = 100 * time.Millisecond
	superUser     = "super"
	superPassword = "test"
	clientAuth    = "want"
)

var (
	certs     *pki
	apache    *apachezk.Server
	apacheErr error
	zkgo      *zktest.Server
	zkgoErr   error

	apacheStartTime time.Duration
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tlsdiff-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if certs, err = writeCerts(dir); err != nil {
		fmt.Fprintln(os.Stderr, "certificates:", err)
		return 1
	}
	superDigest := apachezk.SuperDigest(superUser, superPassword)

	netty, err := apachezk.NettyJars()
	if err != nil {
		apacheErr = err
	} else {
		start := time.Now()
		apache, apacheErr = apachezk.Start(apachezk.Options{
			TickTime:         tickTime,
			SuperDigest:      superDigest,
			SecureClientPort: true,
			ExtraClasspath:   netty,
			ExtraConfig: map[string]string{
				"ssl.keyStore.location":   certs.keyStore,
				"ssl.keyStore.type":       "PEM",
				"ssl.trustStore.location": certs.trustStore,
				"ssl.trustStore.type":     "PEM",
				"ssl.clientAuth":          clientAuth,
				"ssl.authProvider":        "x509",
				"authProvider.x509":       "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
			},
			SystemProperties: map[string]string{
				"zookeeper.serverCnxnFactory":                    "org.apache.zookeeper.server.NettyServerCnxnFactory",
				"zookeeper.X509AuthenticationProvider.superUser": superSubject,
			},
		})
		apacheStartTime = time.Since(start)
	}
	if apacheErr != nil {
		fmt.Fprintln(os.Stderr, apachezk.SkipMessage(apacheErr))
	} else {
		tc, err := tlsconf.ServerConfig(tlsconf.Options{
			KeyStore:   tlsconf.Store{Location: certs.keyStore, Type: "PEM"},
			TrustStore: tlsconf.Store{Location: certs.trustStore, Type: "PEM"},
			ClientAuth: clientAuth,
		})
		if err != nil {
			zkgoErr = err
		} else {
			zkgo, zkgoErr = zktest.New(
				zktest.WithTickTime(tickTime),
				zktest.WithSuperDigest(superDigest),
				zktest.WithOptions(func(o *server.Options) {
					o.TLS, o.SecureAddr = tc, "127.0.0.1:0"
					o.X509SuperUser = superSubject
				}),
			)
		}
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
	return code
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
