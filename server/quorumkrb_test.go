package server_test

import (
	"log/slog"
	"testing"

	"github.com/zkgo/zkgo/internal/krb"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tests/framework/testkdc"
	"github.com/zkgo/zkgo/tree"
)

// Quorum SASL with Kerberos against a real KDC: every member's service
// principal is zkquorum/<its host> (quorum.auth.kerberos.servicePrincipal
// zkquorum/_HOST); the ensemble forms and replicates. A member whose
// principal names another host authenticates but is refused as the
// server it claims to be; with its own principal it joins.
func TestQuorumSASLKerberos(t *testing.T) {
	kdc := testkdc.New(t)
	conf, err := krb.LoadKrb5Conf(kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	creds := func(principal string) *krb.Credentials {
		t.Helper()
		c, err := krb.NewKeytabCredentials(testkdc.Principal(principal), kdc.Keytab(t, principal), conf)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	own := creds("zkquorum/127.0.0.1")
	other := creds("zkquorum/elsewhere.example")
	qa := func(learner *krb.Credentials) server.QuorumAuthOptions {
		return server.QuorumAuthOptions{Enable: true, LearnerRequire: true, ServerRequire: true,
			ServerKerberos: own, LearnerKerberos: learner, ServicePrincipal: "zkquorum/_HOST"}
	}
	logs := []*lockedBuffer{{}, {}, {}}
	auth := []server.QuorumAuthOptions{qa(own), qa(own), qa(other)}
	c := startCluster(t, 3, 0, func(o *server.Options) {
		i := o.ServerID - 1
		o.QuorumAuth = auth[i]
		o.Logger = slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	defer func() {
		if t.Failed() {
			for i, l := range logs {
				t.Logf("--- member %d ---\n%s", i+1, tail(l.String()))
			}
		}
	}()
	lead := c.createOnLeader("/k", "x")
	if lead == 2 {
		t.Fatal("the member with another host's principal leads")
	}
	c.waitNode(1-lead, "/k", "x")
	waitLogs(t, logs[lead], "is not server.3's", logs[2], "is not server.3's")
	_ = 0
	c.members[2].Tree(func(tr *tree.Tree) {
		if tr.Get("/k") != nil {
			t.Fatal("the member with another host's principal has the ensemble's data")
		}
	})
	c.members[2].Close()
	c.members[2] = nil
	auth[2] = qa(own)
	c.restart(2)
	c.waitNode(2, "/k", "x")
}
