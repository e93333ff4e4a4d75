package krb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkgo/zkgo/internal/boundedfile"
)

// Krb5LoginModule is the JAAS login module of Kerberos credentials.
const Krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"

// Bounds of the files this package reads.
const (
	maxKrb5ConfSize = 1 << 20
	maxKeytabSize   = 16 << 20
	maxCCacheSize   = 16 << 20
)

// Krb5ConfPath returns the krb5.conf to use: javaProp (the value of
// -Djava.security.krb5.conf) if set, else $KRB5_CONFIG (MIT's variable;
// its first file), else /etc/krb5.conf.
func Krb5ConfPath(javaProp string) string {
	if javaProp != "" {
		return javaProp
	}
	if env := os.Getenv("KRB5_CONFIG"); env != "" {
		first, _, _ := strings.Cut(env, ":")
		if first != "" {
			return first
		}
	}
	return "/etc/krb5.conf"
}

// Krb5Conf is a parsed krb5.conf.
type Krb5Conf struct {
	Path string
	c    *krbconfig.Config
}

// DefaultRealm is the default_realm of libdefaults.
func (k *Krb5Conf) DefaultRealm() string { return k.c.LibDefaults.DefaultRealm }

// LoadKrb5Conf reads and parses the krb5.conf at path.
func LoadKrb5Conf(path string) (*Krb5Conf, error) {
	data, err := boundedfile.ReadFile(path, "krb5.conf", maxKrb5ConfSize)
	if err != nil {
		return nil, err
	}
	c, err := krbconfig.NewFromString(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Krb5Conf{Path: path, c: c}, nil
}

// Krb5ConfFor is what Java makes of -Djava.security.krb5.realm and
// -Djava.security.krb5.kdc (both must be given): a configuration with that
// realm as the default and that KDC (a host or host:port; several
// separated by spaces).
func Krb5ConfFor(realm, kdc string) (*Krb5Conf, error) {
	if realm == "" || kdc == "" {
		return nil, errors.New("java.security.krb5.realm and java.security.krb5.kdc must be given together")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[libdefaults]\n default_realm = %s\n dns_lookup_kdc = false\n dns_lookup_realm = false\n[realms]\n %s = {\n", realm, realm)
	for _, k := range strings.Fields(kdc) {
		fmt.Fprintf(&b, "  kdc = %s\n", k)
	}
	b.WriteString(" }\n")
	c, err := krbconfig.NewFromString(b.String())
	if err != nil {
		return nil, err
	}
	return &Krb5Conf{Path: "-Djava.security.krb5.realm/kdc", c: c}, nil
}

// Credentials are one Kerberos identity: a principal with the keys of a
// keytab, or the tickets of a ticket cache. They are safe for concurrent
// use by any number of exchanges.
type Credentials struct {
	// Principal is the principal as configured, with its realm:
	// "zookeeper/zk1.example.com@EXAMPLE.COM", or "*" for an acceptor
	// that takes tickets for any principal of its keytab.
	Principal string
	// Initiator is JAAS's isInitiator: the credentials may start
	// exchanges (log in to the KDC). Acceptors need a keytab.
	Initiator bool

	conf   *Krb5Conf
	kt     *keytab.Keytab
	ccache *credentials.CCache
	name   string // principal without the realm
	realm  string

	mu sync.Mutex     // guards cl
	cl *client.Client // logged in on first use
}

// Options of a Krb5LoginModule entry that zkgo honours or that have no
// effect without a JVM (a warning names the others).
var knownOptions = []string{
	"useKeyTab", "keyTab", "principal", "storeKey", "useTicketCache",
	"ticketCache", "doNotPrompt", "isInitiator", "debug", "refreshKrb5Config",
	"renewTGT",
}

// FromOptions returns the credentials of a JAAS Krb5LoginModule entry,
// given the entry's options (name=value; config.JAASEntry.Options, as
// config.LoadKrb5Options finds them in a JAAS file). Relative keytab and
// ticket cache paths are taken relative to dir (the Java process's
// working directory; "" for this process's). Warnings name options zkgo
// ignores.
func FromOptions(options map[string]string, conf *Krb5Conf, dir string) (*Credentials, []string, error) {
	var warnings []string
	var unknown []string
	for k := range options {
		if !slices.Contains(knownOptions, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		warnings = append(warnings, fmt.Sprintf("%s options ignored by zkgo: %s", Krb5LoginModule, strings.Join(unknown, ", ")))
	}
	opt := func(k string) string { return options[k] }
	isTrue := func(k string) bool { return strings.EqualFold(opt(k), "true") }
	initiator := opt("isInitiator") == "" || isTrue("isInitiator")
	abs := func(p string) string {
		if p != "" && !filepath.IsAbs(p) && dir != "" {
			return filepath.Join(dir, p)
		}
		return p
	}
	switch {
	case isTrue("useKeyTab"):
		path := opt("keyTab")
		if path == "" {
			return nil, warnings, errors.New("useKeyTab=true without keyTab (zkgo does not read Java's default keytab)")
		}
		if opt("principal") == "" {
			return nil, warnings, errors.New("useKeyTab=true without principal")
		}
		if !initiator && !isTrue("storeKey") {
			// Java's acceptor finds no key in the Subject then.
			return nil, warnings, errors.New("isInitiator=false needs storeKey=true (the acceptor's keys come from the keytab)")
		}
		c, err := NewKeytabCredentials(opt("principal"), abs(path), conf)
		if err != nil {
			return nil, warnings, err
		}
		c.Initiator = initiator
		return c, warnings, nil
	case isTrue("useTicketCache"):
		if !initiator {
			return nil, warnings, errors.New("a ticket cache holds no keys to accept with: isInitiator=false needs useKeyTab=true")
		}
		path := abs(opt("ticketCache"))
		if path == "" {
			path = DefaultCCachePath()
		}
		c, err := NewCCacheCredentials(path, conf)
		if err != nil {
			return nil, warnings, err
		}
		if p := opt("principal"); p != "" && withRealm(p, conf) != c.Principal {
			return nil, warnings, fmt.Errorf("ticket cache %s holds %s, not %s", path, c.Principal, withRealm(p, conf))
		}
		return c, warnings, nil
	}
	return nil, warnings, errors.New("neither useKeyTab=true nor useTicketCache=true (zkgo cannot prompt for a password)")
}

// DefaultCCachePath is MIT's default ticket cache: $KRB5CCNAME (FILE:
// caches only), else /tmp/krb5cc_<uid>.
func DefaultCCachePath() string {
	if v := os.Getenv("KRB5CCNAME"); v != "" {
		if p, ok := strings.CutPrefix(v, "FILE:"); ok {
			return p
		}
		if !strings.Contains(v, ":") {
			return v
		}
	}
	return fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
}

// withRealm adds conf's default realm to a principal without one.
func withRealm(p string, conf *Krb5Conf) string {
	if p == "*" || strings.Contains(p, "@") || conf == nil {
		return p
	}
	return p + "@" + conf.DefaultRealm()
}

// NewKeytabCredentials returns the credentials of principal (its realm, if
// missing, is conf's default) with the keys of the keytab file at path.
// principal "*" accepts tickets for any principal of the keytab (Java's
// principal="*" for an acceptor).
func NewKeytabCredentials(principal, path string, conf *Krb5Conf) (*Credentials, error) {
	if conf == nil {
		return nil, errors.New("no krb5.conf")
	}
	data, err := boundedfile.ReadFile(path, "keytab", maxKeytabSize)
	if err != nil {
		return nil, err
	}
	kt := new(keytab.Keytab)
	if err := kt.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("keytab %s: %w", path, err)
	}
	principal = withRealm(principal, conf)
	c := &Credentials{Principal: principal, Initiator: true, conf: conf, kt: kt}
	if principal != "*" {
		c.name, c.realm = SplitRealm(principal)
		if c.realm == "" {
			return nil, fmt.Errorf("principal %q has no realm and krb5.conf %s has no default_realm", principal, conf.Path)
		}
		if !keytabHas(kt, c.name, c.realm) {
			return nil, fmt.Errorf("keytab %s has no key of %s", path, principal)
		}
	} else if len(kt.Entries) == 0 {
		return nil, fmt.Errorf("keytab %s is empty", path)
	}
	return c, nil
}

func keytabHas(kt *keytab.Keytab, name, realm string) bool {
	for _, e := range kt.Entries {
		if e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == name {
			return true
		}
	}
	return false
}

// NewCCacheCredentials returns the credentials of the MIT ticket cache
// file at path (kinit's): initiator only.
func NewCCacheCredentials(path string, conf *Krb5Conf) (*Credentials, error) {
	if conf == nil {
		return nil, errors.New("no krb5.conf")
	}
	data, err := boundedfile.ReadFile(path, "ticket cache", maxCCacheSize)
	if err != nil {
		return nil, err
	}
	cc := new(credentials.CCache)
	if err := cc.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("ticket cache %s: %w", path, err)
	}
	name := cc.GetClientPrincipalName().PrincipalNameString()
	realm := cc.GetClientRealm()
	return &Credentials{Principal: name + "@" + realm, Initiator: true, conf: conf, ccache: cc, name: name, realm: realm}, nil
}

// Conf is the krb5.conf of the credentials.
func (c *Credentials) Conf() *Krb5Conf { return c.conf }

// client returns the logged-in Kerberos client of initiator credentials,
// logging in (an AS exchange with the KDC for a keytab) the first time.
// A failed login is tried again at the next call.
func (c *Credentials) client() (*client.Client, error) {
	if !c.Initiator {
		return nil, fmt.Errorf("credentials of %s are not an initiator's (isInitiator=false)", c.Principal)
	}
	if c.Principal == "*" {
		return nil, errors.New(`principal "*" cannot initiate`)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl != nil {
		return c.cl, nil
	}
	var cl *client.Client
	if c.ccache != nil {
		var err error
		cl, err = client.NewFromCCache(c.ccache, c.conf.c, client.DisablePAFXFAST(true))
		if err != nil {
			return nil, fmt.Errorf("ticket cache of %s: %w", c.Principal, err)
		}
	} else {
		cl = client.NewWithKeytab(c.name, c.realm, c.kt, c.conf.c, client.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			return nil, fmt.Errorf("kerberos login of %s: %w", c.Principal, err)
		}
	}
	c.cl = cl
	return cl, nil
}

// Close ends the credentials' Kerberos session (its ticket renewal).
func (c *Credentials) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl != nil {
		c.cl.Destroy()
		c.cl = nil
	}
}

// SplitRealm splits "name@REALM" at its last '@'; realm is "" without one.
func SplitRealm(principal string) (name, realm string) {
	if i := strings.LastIndexByte(principal, '@'); i >= 0 {
		return principal[:i], principal[i+1:]
	}
	return principal, ""
}

// SplitServicePrincipal splits "service/host@REALM" (realm optional) into
// the service and host that NewInitiator takes, as ZooKeeper's
// SecurityUtils.createSaslClient does with its KerberosName.
func SplitServicePrincipal(p string) (service, host string, err error) {
	name, _ := SplitRealm(p)
	service, host, ok := strings.Cut(name, "/")
	if !ok || service == "" || host == "" || strings.Contains(host, "/") {
		return "", "", fmt.Errorf("service principal %q is not service/host[@REALM]", p)
	}
	return service, host, nil
}

// ExpandHost replaces the _HOST of a configured service principal with
// host in lower case (ZooKeeper's SecurityUtils.getServerPrincipal for
// quorum.auth.kerberos.servicePrincipal).
func ExpandHost(principal, host string) string {
	return strings.ReplaceAll(principal, "_HOST", strings.ToLower(host))
}
