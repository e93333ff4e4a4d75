package kerberos_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/interop/curator"
)

// checkCurator runs CuratorSaslCheck against addr: Curator logs in as
// client (JAAS section "Client") and makes a node with the ACL
// sasl:client@ZKGO.TEST through its ACLProvider; a second Curator client
// logged in as other (section "Other") gets NoAuth reading it.
func checkCurator(t *testing.T, addr string) string {
	jaas := clientJAAS(clientKT, clientPrincipal) + jaasSection("Other", otherKT, otherPrincipal)
	path := fmt.Sprintf("/krb-curator-%d", time.Now().UnixNano())
	return curator.RunCuratorSASLCheck(t, addr, jaas, []string{krb5Flag}, path, clientPrincipal, "Other", otherPrincipal)
}

// TestCurator: Apache Curator authenticates with Kerberos to zkgo and to
// Apache ZooKeeper, with the same outcome.
func TestCurator(t *testing.T) {
	sameOnBoth(t, "Curator", checkCurator)
}
