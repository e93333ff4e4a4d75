package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// quorumJAAS is the JAAS file of ZooKeeper's quorum SASL guide
// (DIGEST-MD5): the users peers are checked against, and the credentials
// a member authenticates with.
func quorumJAAS(password string) string {
	return `QuorumServer {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_test="test";
};
QuorumLearner {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="test"
       password="` + password + `";
};
`
}

// quorumSASLKeys turns quorum SASL on and requires it both ways: the last
// stage of ZooKeeper's rolling switch-on.
const quorumSASLKeys = `quorum.auth.enableSasl=true
quorum.auth.learnerRequireSasl=true
quorum.auth.serverRequireSasl=true
quorum.auth.learner.saslLoginContext=QuorumLearner
quorum.auth.server.saslLoginContext=QuorumServer
quorum.cnxn.threads.size=20
`

// writeJAAS writes a JAAS file beside mb's zoo.cfg and points the
// member's JVM flags at it.
func (mb *member) writeJAAS(text string) {
	mb.t.Helper()
	path := filepath.Join(filepath.Dir(mb.cfg), "jaas.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		mb.t.Fatal(err)
	}
	mb.jvmFlags = []string{"-Djava.security.auth.login.config=" + path}
}

// Quorum SASL as ZooKeeper's guide configures it, on three machines: the
// ensemble forms and replicates; a member whose password is wrong is
// kept out (it neither leads nor follows, and has none of the data) and
// joins once its password is right. Same script, same files, on zkgo
// and on Apache ZooKeeper.
func TestQuorumSASLDigest(t *testing.T) {
	eachImpl(t, 3*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		_, ms := threeMachines(t, false)
		e := configure(t, im, ms, 1, func(int) string {
			return quorumSASLKeys + lines(1, ms[0].ip4, ms[1].ip4, ms[2].ip4)
		})
		for i, mb := range e {
			password := "test"
			if i == 2 {
				password = "wrong"
			}
			mb.writeJAAS(quorumJAAS(password))
		}
		e[0].start()
		e[1].start()
		e[2].start()
		e[:2].waitLeader(ctx, t)
		writeThenRead(ctx, t, e[0], e[1], "/sasl")
		// The two let nothing of theirs reach the third: a few more
		// writes, then it still serves nothing.
		for _, p := range []string{"/sasl-2", "/sasl-3"} {
			writeThenRead(ctx, t, e[1], e[0], p)
		}
		if mode := e[2].mode(ctx); mode == "leader" || mode == "follower" {
			t.Fatalf("%s: the member with a wrong password is a %s", im, mode)
		}
		if im == zkgo {
			for _, mb := range e {
				if !strings.Contains(mb.output(), "quorum SASL") {
					t.Errorf("server.%d does not say why it refused or was refused:\n%s", mb.id, lastLines(mb.output(), 20))
				}
			}
		}
		e[2].kill()
		e[2].writeJAAS(quorumJAAS("test"))
		e[2].start()
		e.waitLeader(ctx, t)
		writeThenRead(ctx, t, e[0], e[2], "/sasl-4")
	})
}
