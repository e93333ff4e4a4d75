package config

import (
	"fmt"
	"strings"

	"github.com/zkgo/zkgo/internal/boundedfile"
)

// Kerberos (SASL GSSAPI) for clients, as ZooKeeper 3.8 configures it: the
// server's keytab and principal in a Krb5LoginModule entry of the JAAS
// server section,
//
//	Server {
//	    com.sun.security.auth.module.Krb5LoginModule required
//	    useKeyTab=true keyTab="/etc/zookeeper/zk.keytab"
//	    storeKey=true useTicketCache=false
//	    principal="zookeeper/zk1.example.com@EXAMPLE.COM";
//	};
//
// krb5.conf from -Djava.security.krb5.conf (zoo.cfg: zkgo.krb5.conf),
// else KRB5_CONFIG, else /etc/krb5.conf, or the realm and KDC from
// -Djava.security.krb5.realm and -Djava.security.krb5.kdc (zkgo.krb5.realm,
// zkgo.krb5.kdc), and the id mapping from kerberos.removeHostFromPrincipal
// and kerberos.removeRealmFromPrincipal (zoo.cfg or
// -Dzookeeper.kerberos.*). The credentials themselves are built by
// internal/krb (cmd/zkgo, from ServerEntry's options), which does not
// import this package.

// Kerberos is the Kerberos part of the configuration.
type Kerberos struct {
	// Krb5Conf (zkgo.krb5.conf, -Djava.security.krb5.conf) is the
	// krb5.conf; "" for KRB5_CONFIG or /etc/krb5.conf.
	Krb5Conf string
	// Realm and KDC (zkgo.krb5.realm and zkgo.krb5.kdc,
	// -Djava.security.krb5.realm and -kdc) replace krb5.conf, as in Java;
	// both or neither.
	Realm, KDC string
	// RemoveHostFromPrincipal and RemoveRealmFromPrincipal
	// (kerberos.removeHostFromPrincipal, kerberos.removeRealmFromPrincipal)
	// shorten the sasl id of an authenticated principal.
	RemoveHostFromPrincipal, RemoveRealmFromPrincipal bool
	// ServerEntry is the Krb5LoginModule entry of the JAAS server section
	// (Load); nil without one: no GSSAPI.
	ServerEntry *JAASEntry
	// JAASFile is the JAAS file ServerEntry comes from, resolved.
	JAASFile string
}

// Krb5LoginModule is the JAAS login module of Kerberos credentials.
const Krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"

// isKerberosKey reports whether k is one of the keys kerberosProperty
// parses.
func isKerberosKey(k string) bool {
	switch k {
	case "kerberos.removeHostFromPrincipal", "kerberos.removeRealmFromPrincipal",
		"security.auth_to_local", "zkgo.krb5.conf", "zkgo.krb5.realm", "zkgo.krb5.kdc":
		return true
	}
	return false
}

// kerberosProperty parses a key of isKerberosKey.
func (p *parser) kerberosProperty(pr property) error {
	c, v := p.c, pr.value
	switch pr.key {
	case "kerberos.removeHostFromPrincipal":
		c.Kerberos.RemoveHostFromPrincipal = p.javaBool(pr)
	case "kerberos.removeRealmFromPrincipal":
		c.Kerberos.RemoveRealmFromPrincipal = p.javaBool(pr)
	case "security.auth_to_local":
		// KerberosName's rules; zkgo has only the DEFAULT rule, and
		// other rules would give other ids than ZooKeeper's.
		if strings.TrimSpace(v) != "DEFAULT" {
			return p.errorf(pr, "Kerberos auth_to_local rules other than DEFAULT are not supported by zkgo; refusing to map principals to other ids than ZooKeeper would")
		}
	case "zkgo.krb5.conf":
		c.Kerberos.Krb5Conf = v
	case "zkgo.krb5.realm":
		c.Kerberos.Realm = v
	case "zkgo.krb5.kdc":
		c.Kerberos.KDC = v
	}
	return nil
}

// loadKerberosEntry finds the Krb5LoginModule entry of section in the
// JAAS file at path (which loadSASLUsers read and parsed without error).
func (c *Config) loadKerberosEntry(path, section string) error {
	data, err := boundedfile.ReadFile(path, "JAAS file", MaxJAASFileSize)
	if err != nil {
		return err
	}
	sections, err := ParseJAAS(string(data), path)
	if err != nil {
		return err
	}
	for _, e := range sections[section] {
		if e.Module == Krb5LoginModule {
			e := e
			c.Kerberos.ServerEntry, c.Kerberos.JAASFile = &e, path
			return nil
		}
	}
	return nil
}

// LoadKrb5Options reads the JAAS file at path and returns the options of
// the Krb5LoginModule entry of section, for krb.FromOptions (a Go client's
// JAAS file, zk.Kerberos.JAASFile).
func LoadKrb5Options(path, section string) (map[string]string, error) {
	data, err := boundedfile.ReadFile(path, "JAAS file", MaxJAASFileSize)
	if err != nil {
		return nil, err
	}
	sections, err := ParseJAAS(string(data), path)
	if err != nil {
		return nil, err
	}
	entries, ok := sections[section]
	if !ok {
		return nil, fmt.Errorf("%s: no JAAS section %q", path, section)
	}
	for _, e := range entries {
		if e.Module == Krb5LoginModule {
			return e.Options, nil
		}
	}
	return nil, fmt.Errorf("%s: section %s: no %s entry", path, section, Krb5LoginModule)
}

// checkKerberos validates what needs the whole configuration.
func (c *Config) checkKerberos() error {
	if (c.Kerberos.Realm == "") != (c.Kerberos.KDC == "") {
		return fmt.Errorf("java.security.krb5.realm and java.security.krb5.kdc (zkgo.krb5.realm, zkgo.krb5.kdc) must be set together, as in Java")
	}
	return nil
}
