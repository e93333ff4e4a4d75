package curator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// apacheSASL: the package's Apache server has the users of saslJAAS.
var apacheSASL bool

var saslUsers = map[string]string{"bob": "bobsecret", "alice": "alicesecret"}

const saslJAAS = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bobsecret"
    user_alice="alicesecret";
};
`

// apacheSASLOptions writes the server JAAS file into dir and returns the
// JVM system properties and zoo.cfg entries that enable SASL DIGEST-MD5
// with the sasl ACL provider.
func apacheSASLOptions(dir string) (props, cfg map[string]string, err error) {
	p := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(p, []byte(saslJAAS), 0o600); err != nil {
		return nil, nil, err
	}
	return map[string]string{"java.security.auth.login.config": p},
		map[string]string{"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"}, nil
}

// checkJavaSASL runs the Java client as bob against addr, checks with the
// Go client that the node it made is bob's alone, then runs it with a wrong
// password.
func checkJavaSASL(t *testing.T, addr string) {
	path := fmt.Sprintf("/sasl-java-%d", time.Now().UnixNano())
	curator.RunSASLCheck(t, addr, "bob", "bobsecret", path, true)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, opts := range [][]zk.Option{nil, {zk.WithSASL("alice", "alicesecret")}} {
		c, err := zk.Connect(ctx, addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = c.Get(ctx, path)
		c.Close()
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("another client reads %s: %v", path, err)
		}
	}
	bob, err := zk.Connect(ctx, addr, zk.WithSASL("bob", "bobsecret"))
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if data, _, err := bob.Get(ctx, path); err != nil || string(data) != "sasl" {
		t.Errorf("Go client as bob reads %s: %q %v", path, data, err)
	}
	if err := bob.Delete(ctx, path, -1); err != nil {
		t.Error(err)
	}

	curator.RunSASLCheck(t, addr, "bob", "wrong", "/unused", false)
}

// TestSASLJavaClientAgainstZkgo: an unchanged ZooKeeper Java client with a
// JAAS "Client" section authenticates to zkgo with DIGEST-MD5.
func TestSASLJavaClientAgainstZkgo(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) { o.SASL.Users = saslUsers }))
		checkJavaSASL(t, srv.Addr())
	})
	t.Run("enforced", func(t *testing.T) {
		srv := zktest.Start(t, zktest.WithOptions(func(o *server.Options) {
			o.SASL.Users = saslUsers
			o.EnforceAuthSchemes = []string{"sasl"}
		}))
		curator.RunSASLCheck(t, srv.Addr(), "bob", "bobsecret", "/enforced", true)
	})
}

// TestSASLJavaClientAgainstApacheZooKeeper validates SaslCheck.java against
// the reference server.
func TestSASLJavaClientAgainstApacheZooKeeper(t *testing.T) {
	apachezk.SkipIfUnavailable(t, apacheErr)
	if !apacheSASL {
		t.Skip("Apache ZooKeeper was started without SASL")
	}
	checkJavaSASL(t, apache.Addr())
}
