package config

import (
	"strings"
	"testing"
)

// The quorum SASL keys as ZooKeeper's documentation writes them, with
// the JAAS sections it documents (DIGEST-MD5), load; requiring SASL
// without enabling it, or enabling it without the credentials of either
// side, does not start.
func TestQuorumAuth(t *testing.T) {
	const keys = "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true\n" +
		"quorum.auth.learner.saslLoginContext=QuorumLearner\nquorum.auth.server.saslLoginContext=QuorumServer\nquorum.cnxn.threads.size=20\n"
	e := newSASLEnv(t, ptr(quorumOnlyJAAS), keys)
	c, w, err := e.load(t, "-Djava.security.auth.login.config=JAAS")
	if err != nil {
		t.Fatal(err)
	}
	qa := c.QuorumAuth
	if !qa.EnableSASL || !qa.LearnerRequire || !qa.ServerRequire || qa.ServerUsers["test"] != "test" || len(qa.ServerUsers) != 1 ||
		qa.LearnerUser != "test" || qa.LearnerPassword != "test" {
		t.Fatalf("QuorumAuth = %+v (warnings %v)", qa, w)
	}
	for _, tc := range []struct{ jaas, extra, want string }{
		{quorumOnlyJAAS, "quorum.auth.serverRequireSasl=true\n", "needs quorum.auth.enableSasl=true"},
		{quorumOnlyJAAS, "quorum.auth.learnerRequireSasl=true\n", "needs quorum.auth.enableSasl=true"},
		{clientOnlyJAAS, "quorum.auth.enableSasl=true\n", "no section QuorumServer"},
		{quorumOnlyJAAS, "quorum.auth.enableSasl=true\nquorum.auth.learner.saslLoginContext=Elsewhere\n", "no section Elsewhere"},
		{"QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required; };\nQuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required username=\"a\" password=\"b\"; };",
			"quorum.auth.enableSasl=true\n", "neither"},
	} {
		e := newSASLEnv(t, ptr(tc.jaas), tc.extra)
		if _, _, err := e.load(t, "-Djava.security.auth.login.config=JAAS"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.extra, err, tc.want)
		}
	}
	e = newSASLEnv(t, nil, "quorum.auth.enableSasl=true\n")
	if _, _, err := e.load(t, ""); err == nil || !strings.Contains(err.Error(), "needs a JAAS file") {
		t.Errorf("without a JAAS file: err = %v", err)
	}
	// Off (the default, or false): nothing is read.
	e = newSASLEnv(t, nil, "quorum.auth.enableSasl=false\n")
	if c, _, err := e.load(t, ""); err != nil || c.QuorumAuth.EnableSASL {
		t.Errorf("enableSasl=false: %+v, %v", c.QuorumAuth, err)
	}
}

// The Kerberos form of the quorum sections (ZooKeeper's guide): the
// Krb5LoginModule entries are kept for the server to log in with.
func TestQuorumAuthKerberosSections(t *testing.T) {
	const jaas = `QuorumServer {
       com.sun.security.auth.module.Krb5LoginModule required
       useKeyTab=true
       keyTab="/path/to/keytab"
       storeKey=true
       useTicketCache=false
       debug=false
       principal="zkquorum/fully.qualified.domain.name@EXAMPLE.COM";
};
QuorumLearner {
       com.sun.security.auth.module.Krb5LoginModule required
       useKeyTab=true
       keyTab="/path/to/keytab"
       storeKey=true
       useTicketCache=false
       debug=false
       principal="learner/fully.qualified.domain.name@EXAMPLE.COM";
};`
	e := newSASLEnv(t, ptr(jaas), "quorum.auth.enableSasl=true\nquorum.auth.kerberos.servicePrincipal=zkquorum/_HOST\n")
	c, _, err := e.load(t, "-Djava.security.auth.login.config=JAAS")
	if err != nil {
		t.Fatal(err)
	}
	qa := c.QuorumAuth
	if qa.ServerKerberos == nil || qa.ServerKerberos.Options["principal"] != "zkquorum/fully.qualified.domain.name@EXAMPLE.COM" ||
		qa.LearnerKerberos == nil || qa.LearnerKerberos.Options["principal"] != "learner/fully.qualified.domain.name@EXAMPLE.COM" ||
		qa.ServicePrincipal != "zkquorum/_HOST" || len(qa.ServerUsers) != 0 {
		t.Fatalf("QuorumAuth = %+v", qa)
	}
}

// zkgo.snapshot.maxBytes bounds snapshots (and the disk a leader's
// snapshot stream may fill); nonsense is refused.
func TestMaxSnapshotBytes(t *testing.T) {
	for text, want := range map[string]int64{"": 0, "zkgo.snapshot.maxBytes=1048576\n": 1 << 20} {
		c, _, err := parseString(t, "dataDir=/d\nclientPort=2181\n"+text)
		if err != nil || c.MaxSnapshotBytes != want {
			t.Errorf("%q: MaxSnapshotBytes %d, %v; want %d", text, c.MaxSnapshotBytes, err, want)
		}
	}
	for _, bad := range []string{"0", "-1", "lots"} {
		if _, _, err := parseString(t, "dataDir=/d\nclientPort=2181\nzkgo.snapshot.maxBytes="+bad+"\n"); err == nil {
			t.Errorf("zkgo.snapshot.maxBytes=%s accepted", bad)
		}
	}
}
