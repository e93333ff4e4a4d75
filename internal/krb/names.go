package krb

import "strings"

// NameRules are ZooKeeper's mapping of an authenticated principal to the
// id of a sasl ACL (SaslServerCallbackHandler.handleAuthorizeCallback with
// its KerberosName and the DEFAULT auth_to_local rule).
type NameRules struct {
	// DefaultRealm is krb5.conf's default_realm (Java's
	// KerberosUtil.getDefaultRealm).
	DefaultRealm string
	// RemoveHost and RemoveRealm are kerberos.removeHostFromPrincipal
	// and kerberos.removeRealmFromPrincipal.
	RemoveHost, RemoveRealm bool
}

// ID returns the sasl id of principal ("name[/host]@REALM"), the
// authenticated initiator, as ZooKeeper 3.8 computes it:
//
//   - In the default realm the DEFAULT rule gives the short name, the
//     first component; then "/host" is added back unless RemoveHost, and
//     "@REALM" unless RemoveRealm. So "zk/h1@R" is "zk/h1@R", "zk@R",
//     "zk/h1" or "zk" by the two settings.
//   - In another realm no rule applies (ZooKeeper logs "No rules applied")
//     and the id is the authorization id the client sent, which ZooKeeper's
//     client sets to its full principal; zkgo takes the authenticated
//     principal itself, whatever the client sent, so the id is the full
//     principal and the two settings do not apply.
//   - A principal of three or more components does not parse as a
//     KerberosName and is the id as it is.
func (r NameRules) ID(principal string) string {
	name, realm := SplitRealm(principal)
	service, host, hasHost := strings.Cut(name, "/")
	if realm == "" || realm != r.DefaultRealm || strings.Contains(host, "/") {
		return principal
	}
	id := service
	if hasHost && !r.RemoveHost {
		id += "/" + host
	}
	if !r.RemoveRealm {
		id += "@" + realm
	}
	return id
}
