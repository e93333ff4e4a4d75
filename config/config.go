// Package config reads an unchanged Apache ZooKeeper zoo.cfg (and its
// dynamic configuration file and the myid file) into a Config.
//
// The rules follow ZooKeeper 3.8's QuorumPeerConfig and the system
// properties ZooKeeper lets zoo.cfg set: every key QuorumPeerConfig does not
// know itself becomes the Java system property "zookeeper."+key, so that,
// for example, "snapCount", "4lw.commands.whitelist" and
// "DigestAuthenticationProvider.superDigest" are read from zoo.cfg under
// those names. Keys zkgo honours are parsed; keys that only configure the
// Java server, and unknown keys, are accepted with one warning each. Keys
// that configure TLS are refused with an error, because serving without
// them would be less secure than the configuration asks for.
//
// SASL (DIGEST-MD5) users live in a JAAS file, as in ZooKeeper; since
// zkgo has no JVM command line, zoo.cfg names the file with the zkgo key
// zkgo.sasl.jaasConfig (see jaas.go). superUser, sasl.serverconfig,
// enforce.auth.enabled, enforce.auth.schemes and
// sessionRequireClientSASLAuth are honoured as ZooKeeper reads them.
//
// Known departures from ZooKeeper, all deliberate:
//   - jute.maxbuffer, readonlymode.enabled and
//     znode.container.checkIntervalMs are honoured from zoo.cfg although
//     ZooKeeper only reads them as JVM system properties (-D flags), and the
//     "zookeeper."-prefixed spellings zookeeper.extendedTypesEnabled and
//     zookeeper.DigestAuthenticationProvider.superDigest are accepted too.
//   - Numbers ZooKeeper reads as system properties (snapCount,
//     globalOutstandingLimit, jute.maxbuffer,
//     znode.container.checkIntervalMs) silently fall back to their default
//     in ZooKeeper when malformed; here they are errors.
//   - 4lw.commands.whitelist may separate words by spaces as well as commas.
//   - A relative dynamicConfigFile or zkgo.sasl.jaasConfig is resolved
//     against the directory of the file naming it (ZooKeeper: against the
//     working directory).
//   - The sasl authentication provider is always there: authProvider.N
//     naming SASLAuthenticationProvider (or the digest or ip provider) is
//     accepted without a warning, and enforcing sasl without
//     zkgo.sasl.jaasConfig is an error.
//   - Hierarchical quorums (group.N, weight.N) are refused.
//   - The file is read as UTF-8 (Java reads zoo.cfg as ISO-8859-1).
package config

import (
	"errors"
	"fmt"
	"github.com/zkgo/zkgo/internal/javanum"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// NoID is MyID when no myid file was read.
const NoID int64 = -1

// Role is the role of a server in an ensemble.
type Role int

// Roles.
const (
	Participant Role = iota
	Observer
)

// String returns "participant" or "observer".
func (r Role) String() string {
	if r == Observer {
		return "observer"
	}
	return "participant"
}

// Address is one quorum address of a server.
type Address struct {
	Host         string // host name or IP address, without brackets
	PeerPort     int    // quorum (follower to leader) port
	ElectionPort int    // leader election port
}

// Server is one server.N entry:
// server.N=host:peerPort:electionPort[:role][|host:peerPort:electionPort[:role]...][;[clientAddr:]clientPort].
type Server struct {
	ID int64
	// Addrs holds every quorum address; there is more than one only with
	// multiAddress.enabled=true.
	Addrs []Address
	// Host, PeerPort and ElectionPort repeat Addrs[0].
	Host         string
	PeerPort     int
	ElectionPort int
	Role         Role
	// ClientAddr and ClientPort come from the part after ';'. ClientPort 0
	// means there is none; ClientAddr "" means all interfaces (ZooKeeper
	// writes 0.0.0.0 for a port given alone).
	ClientAddr string
	ClientPort int
}

// Config is a server configuration.
type Config struct {
	TickTime   time.Duration // tickTime (ms); 3s when zoo.cfg has none, as in ZooKeeper
	DataDir    string        // dataDir; relative paths are relative to the working directory
	DataLogDir string        // dataLogDir, default DataDir
	// ClientPort and ClientPortAddress are where clients connect
	// (clientPort, clientPortAddress, or the client part of this server's
	// server.N entry). ClientPortAddress "" means all interfaces.
	ClientPort        int
	ClientPortAddress string
	MaxClientCnxns    int // maxClientCnxns per client address; 0 (or less) is unlimited
	// MinSessionTimeout and MaxSessionTimeout default to 2 and 20 ticks.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// FourLetterWords is the set of enabled four-letter words
	// (4lw.commands.whitelist): always "srvr", "isro" when ReadOnlyMode,
	// every known word for "*".
	FourLetterWords      map[string]bool
	ExtendedTypesEnabled bool   // extendedTypesEnabled: TTL nodes
	SuperDigest          string // DigestAuthenticationProvider.superDigest, "super:<base64 sha1>"
	DigestAuthEnabled    bool   // DigestAuthenticationProvider.enabled, default true
	MyID                 int64  // from dataDir/myid (Load); NoID when absent
	// Servers are the server.N entries, by ID, from zoo.cfg or from the
	// dynamic configuration file (Load).
	Servers             []Server
	Version             int64  // configuration version: the hex suffix of the dynamic file's name, or version= in zoo.cfg
	PeerType            Role   // peerType; Load sets it from this server's entry
	DynamicConfigFile   string // dynamicConfigFile as written
	MultiAddressEnabled bool   // multiAddress.enabled: several '|'-separated quorum addresses per server
	InitLimit           int    // initLimit (ticks)
	SyncLimit           int    // syncLimit (ticks)
	SnapCount           int    // snapCount, default 100000, at least 2
	// AutopurgeSnapRetainCount (autopurge.snapRetainCount) is at least 3.
	AutopurgeSnapRetainCount int
	// AutopurgePurgeInterval (autopurge.purgeInterval, in hours); 0
	// disables purging.
	AutopurgePurgeInterval time.Duration
	ReadOnlyMode           bool          // readonlymode.enabled
	ContainerCheckInterval time.Duration // znode.container.checkIntervalMs, default 1m
	MaxBuffer              int           // jute.maxbuffer, default 0xfffff
	GlobalOutstandingLimit int           // globalOutstandingLimit, default 1000
	ForceSync              bool          // forceSync: false only for "no"

	// JAASConfigFile (zkgo.sasl.jaasConfig) is the JAAS login
	// configuration file that holds the SASL users: what ZooKeeper reads
	// from -Djava.security.auth.login.config. Load resolves a relative name
	// against the directory of zoo.cfg and reads SASLUsers from it.
	JAASConfigFile string
	// SASLSection (sasl.serverconfig) is the JAAS section of the server's
	// users, default "Server".
	SASLSection string
	// SASLUsers are the DIGEST-MD5 users and passwords (Load, from
	// JAASConfigFile); nil without one.
	SASLUsers map[string]string
	// SASLSuperUser (superUser) is a SASL user that is also super.
	SASLSuperUser string
	// EnforceAuthSchemes are the schemes a client must have authenticated
	// with before anything else (enforce.auth.enabled=true with
	// enforce.auth.schemes, or sessionRequireClientSASLAuth=true for
	// "sasl"); nil when not enforced.
	EnforceAuthSchemes []string
}

// FourLetterWordsKnown lists every four-letter word ZooKeeper 3.8 knows;
// "*" in 4lw.commands.whitelist enables all of them.
var FourLetterWordsKnown = []string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro",
	"mntr", "ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs",
}

// ErrTLSNotImplemented is wrapped by the error Parse returns for a
// configuration that asks for TLS.
var ErrTLSNotImplemented = errors.New("TLS is not implemented yet")

// Defaults.
const (
	DefaultClientPort             = 2181
	DefaultTickTime               = 2000 * time.Millisecond // Default(); zoo_sample.cfg's value
	zkDefaultTickTime             = 3000 * time.Millisecond // ZooKeeper's when zoo.cfg has no tickTime
	DefaultMaxClientCnxns         = 60
	DefaultSnapCount              = 100000
	DefaultSnapRetainCount        = 3
	DefaultContainerCheckInterval = time.Minute
	DefaultMaxBuffer              = 0xfffff
	DefaultGlobalOutstandingLimit = 1000
	DefaultDataDir                = "./zkgo-data"
)

// Default returns the configuration used without a configuration file:
// clients on port 2181 of all interfaces, data in ./zkgo-data, a 2s tick.
func Default() *Config {
	c := base()
	c.TickTime = DefaultTickTime
	c.DataDir = DefaultDataDir
	c.DataLogDir = DefaultDataDir
	c.ClientPort = DefaultClientPort
	c.MinSessionTimeout = 2 * c.TickTime
	c.MaxSessionTimeout = 20 * c.TickTime
	return c
}

// base holds ZooKeeper's defaults for a zoo.cfg that sets nothing.
func base() *Config {
	return &Config{
		TickTime:                 zkDefaultTickTime,
		MaxClientCnxns:           DefaultMaxClientCnxns,
		FourLetterWords:          map[string]bool{"srvr": true},
		DigestAuthEnabled:        true,
		MyID:                     NoID,
		SnapCount:                DefaultSnapCount,
		AutopurgeSnapRetainCount: DefaultSnapRetainCount,
		ContainerCheckInterval:   DefaultContainerCheckInterval,
		MaxBuffer:                DefaultMaxBuffer,
		GlobalOutstandingLimit:   DefaultGlobalOutstandingLimit,
		ForceSync:                true,
		SASLSection:              DefaultSASLSection,
	}
}

// ClientAddr returns the address to listen on for clients, for net.Listen.
func (c *Config) ClientAddr() string {
	return net.JoinHostPort(c.ClientPortAddress, strconv.Itoa(c.ClientPort))
}

// FourLetterWordEnabled reports whether the four-letter word w may run.
func (c *Config) FourLetterWordEnabled(w string) bool { return c.FourLetterWords[w] }

// Server returns the entry of server id.
func (c *Config) Server(id int64) (Server, bool) {
	for _, s := range c.Servers {
		if s.ID == id {
			return s, true
		}
	}
	return Server{}, false
}

// count counts the participants and observers among the servers.
func (c *Config) count() (participants, observers int) {
	for _, s := range c.Servers {
		if s.Role == Observer {
			observers++
		} else {
			participants++
		}
	}
	return
}

// Distributed reports whether the configuration describes an ensemble: more
// than one participant. With one participant (or none) ZooKeeper runs
// standalone and ignores the server.N entries.
func (c *Config) Distributed() bool {
	p, _ := c.count()
	return p > 1
}

// Validate checks the configuration as a whole.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.TickTime <= 0 {
		bad("tickTime must be positive, not %v", c.TickTime)
	}
	if c.DataDir == "" {
		bad("dataDir is not set")
	}
	if c.ClientPort <= 0 || c.ClientPort > 65535 {
		if c.ClientPort == 0 {
			bad("no client port: set clientPort, or a client port in this server's server.N entry")
		} else {
			bad("client port %d out of range", c.ClientPort)
		}
	}
	if c.MinSessionTimeout < 0 {
		bad("minSessionTimeout must not be negative")
	}
	if c.MinSessionTimeout > c.MaxSessionTimeout {
		bad("minSessionTimeout (%v) must not be larger than maxSessionTimeout (%v)", c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if c.MaxBuffer <= 0 {
		bad("jute.maxbuffer must be positive")
	}
	if c.ContainerCheckInterval <= 0 {
		bad("znode.container.checkIntervalMs must be positive")
	}
	if c.SnapCount < 2 {
		bad("snapCount must be at least 2")
	}
	p, o := c.count()
	switch {
	case p == 0 && o > 0:
		bad("observers without participants is an invalid configuration")
	case p == 1 && o > 0:
		bad("observers without a quorum (only one participant) is an invalid configuration")
	}
	if c.Distributed() {
		if c.InitLimit == 0 {
			bad("initLimit is not set")
		}
		if c.SyncLimit == 0 {
			bad("syncLimit is not set")
		}
		if c.MyID == NoID {
			bad("myid file is missing (expected in dataDir %s)", c.DataDir)
		} else if _, ok := c.Server(c.MyID); !ok {
			bad("my id %d is not among the server.N entries", c.MyID)
		}
	}
	return errors.Join(errs...)
}

// Load reads the configuration file at path, the dynamic configuration file
// it names (relative to path's directory), and dataDir/myid; it then takes
// the client address and peer type from this server's server.N entry as
// ZooKeeper does, and validates the result.
func Load(path string) (*Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, warnings, err := parse(string(data), path)
	if err != nil {
		return nil, warnings, err
	}
	if c.DynamicConfigFile != "" {
		dyn := c.DynamicConfigFile
		if !filepath.IsAbs(dyn) {
			dyn = filepath.Join(filepath.Dir(path), dyn)
		}
		data, err := os.ReadFile(dyn)
		if err != nil {
			return nil, warnings, fmt.Errorf("dynamicConfigFile: %w", err)
		}
		if err := c.parseDynamic(string(data), dyn); err != nil {
			return nil, warnings, err
		}
	}
	if c.JAASConfigFile != "" {
		jaas := c.JAASConfigFile
		if !filepath.IsAbs(jaas) {
			jaas = filepath.Join(filepath.Dir(path), jaas)
		}
		users, w, err := LoadSASLUsers(jaas, c.SASLSection)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, warnings, fmt.Errorf("zkgo.sasl.jaasConfig: %w", err)
		}
		c.SASLUsers = users
	}
	if err := c.readMyID(); err != nil {
		return nil, warnings, err
	}
	w, err := c.resolve(path)
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	if err := c.Validate(); err != nil {
		return nil, warnings, fmt.Errorf("%s: %w", path, err)
	}
	return c, warnings, nil
}

// readMyID reads the server id from the first line of dataDir/myid, if that
// file exists.
func (c *Config) readMyID() error {
	if c.DataDir == "" {
		return nil
	}
	p := filepath.Join(c.DataDir, "myid")
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return nil // standalone servers need no myid
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSpace(line)
	id, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		return fmt.Errorf("%s: server id %q is not a number", p, line)
	}
	c.MyID = id
	return nil
}

// resolve does what ZooKeeper does once the servers and myid are known:
// this server's entry supplies the client address and the peer type.
func (c *Config) resolve(name string) (warnings []string, err error) {
	me, ok := c.Server(c.MyID)
	if ok && me.ClientPort != 0 {
		if c.ClientPort != 0 {
			if wildcard(c.ClientPortAddress) {
				if c.ClientPort != me.ClientPort {
					return nil, fmt.Errorf("client port %d for this server (id %d) in the static configuration differs from %d in its server.%d entry", c.ClientPort, c.MyID, me.ClientPort, c.MyID)
				}
			} else if !sameHost(c.ClientPortAddress, me.ClientAddr) || c.ClientPort != me.ClientPort {
				return nil, fmt.Errorf("client address %s for this server (id %d) in the static configuration differs from %s in its server.%d entry",
					net.JoinHostPort(c.ClientPortAddress, strconv.Itoa(c.ClientPort)), c.MyID,
					net.JoinHostPort(me.ClientAddr, strconv.Itoa(me.ClientPort)), c.MyID)
			}
		}
		c.ClientPort, c.ClientPortAddress = me.ClientPort, me.ClientAddr
	}
	if p, _ := c.count(); p == 1 {
		warnings = append(warnings, name+": server.N: only one participant in the servers list; running standalone")
	}
	role := Participant
	if ok && me.Role == Observer {
		role = Observer
	}
	if role != c.PeerType {
		warnings = append(warnings, fmt.Sprintf("%s: peerType: %s does not match the role %s of this server (id %d) in the servers list; using %s", name, c.PeerType, role, c.MyID, role))
		c.PeerType = role
	}
	return warnings, nil
}

func wildcard(host string) bool {
	if host == "" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsUnspecified()
}

func sameHost(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x.Unmap() == y.Unmap()
}

// Parse parses zoo.cfg text; name is used in messages. It neither reads the
// dynamic configuration file nor myid, nor validates the result: Load does.
// Warnings are one line each, for the caller to log.
func Parse(r io.Reader, name string) (*Config, []string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	return parse(string(data), name)
}

// javaOnlyKeys are settings of the Java server that zkgo does not need: they
// get a "setting of the Java server" warning rather than "unknown key".
var javaOnlyKeys = setOf(
	"X509AuthenticationProvider.superUser", "audit.enable", "clientPortListenBacklog",
	"closeSessionTxn.enabled", "commitLogCount", "connectToLearnerMasterLimit",
	"digest.enabled", "electionAlg", "electionPortBindRetry",
	"enforceQuota", "flushDelay", "fsync.warningthresholdms", "jute.maxbuffer.extrasize",
	"kerberos.removeHostFromPrincipal", "kerberos.removeRealmFromPrincipal",
	"largeRequestMaxBytes", "largeRequestThreshold", "leader.maxConcurrentDiffSyncs",
	"leader.maxConcurrentSnapSyncs", "learner.asyncSending", "localSessionsEnabled",
	"localSessionsUpgradingEnabled", "maxBatchSize", "maxCnxns",
	"maxGetChildrenResponseCacheSize", "maxResponseCacheSize", "maxWriteQueuePollTime",
	"multiAddress.reachabilityCheckEnabled", "multiAddress.reachabilityCheckTimeoutMs",
	"observerMasterPort", "oraclePath", "preAllocSize", "quorum.cnxn.threads.size",
	"quorumListenOnAllIPs", "reconfigEnabled", "requestStaleConnectionCheck",
	"requestStaleLatencyCheck", "requestThrottleDropStale", "requestThrottleLimit",
	"requestThrottleStallTime", "serializeLastProcessedZxid.enabled", "skipACL",
	"snapSizeLimitInKb", "sslQuorumReloadCertFiles", "standaloneEnabled", "syncEnabled",
	"txnLogSizeLimitInKb", "watchManagerName",
)

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

var javaOnlyPrefixes = []string{
	"admin.", "authProvider.", "metricsProvider.", "jvm.pause.", "quorum.auth.",
	"netty.", "snapshot.",
}

type parser struct {
	c        *Config
	name     string
	warnings []string
	minTO    int64 // ms; -1 when unset
	maxTO    int64
	fourLW   string
	hasFour  bool
	version  *property
	servers  []property
	portAddr *property
	// authentication enforcement, resolved by finish
	enforce     *property // enforce.auth.enabled=true
	schemes     *property // enforce.auth.schemes
	requireSASL *property // sessionRequireClientSASLAuth=true
}

func (p *parser) warn(pr property, format string, args ...any) {
	p.warnings = append(p.warnings, fmt.Sprintf("%s:%d: %s: %s", p.name, pr.line, pr.key, fmt.Sprintf(format, args...)))
}

func (p *parser) errorf(pr property, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s: %s", p.name, pr.line, pr.key, fmt.Sprintf(format, args...))
}

func (p *parser) tlsErr(pr property) error {
	return fmt.Errorf("%s:%d: %w; refusing to serve plaintext where TLS was configured: key %s", p.name, pr.line, ErrTLSNotImplemented, pr.key)
}

// dedup keeps the last value of each key, as java.util.Properties does, in
// the order of the keys' last occurrences, and warns about repeats.
func dedup(props []property, name string, warnings *[]string) []property {
	last := make(map[string]int, len(props))
	for i, pr := range props {
		if j, ok := last[pr.key]; ok {
			*warnings = append(*warnings, fmt.Sprintf("%s:%d: %s: repeated (also on line %d); the last value wins", name, pr.line, pr.key, props[j].line))
		}
		last[pr.key] = i
	}
	out := make([]property, 0, len(last))
	for i, pr := range props {
		if last[pr.key] == i {
			out = append(out, pr)
		}
	}
	return out
}

func parse(text, name string) (*Config, []string, error) {
	raw, err := readProperties(text, name)
	if err != nil {
		return nil, nil, err
	}
	p := &parser{c: base(), name: name, minTO: -1, maxTO: -1}
	props := dedup(raw, name, &p.warnings)
	hasDynamic := false
	for _, pr := range props {
		if strings.TrimSpace(pr.key) == "dynamicConfigFile" {
			hasDynamic = true
		}
	}
	for _, pr := range props {
		pr.key = strings.TrimSpace(pr.key)
		pr.value = strings.TrimSpace(pr.value)
		if err := p.property(pr, hasDynamic); err != nil {
			return nil, p.warnings, err
		}
	}
	if err := p.finish(); err != nil {
		return nil, p.warnings, err
	}
	return p.c, p.warnings, nil
}

func (p *parser) property(pr property, hasDynamic bool) error {
	c := p.c
	k, v := pr.key, pr.value
	var err error
	switch {
	case k == "dataDir":
		c.DataDir = v
	case k == "dataLogDir":
		c.DataLogDir = v
	case k == "clientPort":
		c.ClientPort, err = p.port16(pr)
	case k == "clientPortAddress":
		c.ClientPortAddress = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
		p.portAddr = &pr
	case k == "tickTime":
		var n int32
		n, err = p.int32(pr)
		c.TickTime = time.Duration(n) * time.Millisecond
	case k == "maxClientCnxns":
		var n int32
		n, err = p.int32(pr)
		c.MaxClientCnxns = int(n)
	case k == "minSessionTimeout":
		var n int32
		n, err = p.int32(pr)
		p.minTO = int64(n)
	case k == "maxSessionTimeout":
		var n int32
		n, err = p.int32(pr)
		p.maxTO = int64(n)
	case k == "initLimit":
		var n int32
		n, err = p.int32(pr)
		c.InitLimit = int(n)
	case k == "syncLimit":
		var n int32
		n, err = p.int32(pr)
		c.SyncLimit = int(n)
	case k == "peerType":
		switch strings.ToLower(v) {
		case "observer":
			c.PeerType = Observer
		case "participant":
			c.PeerType = Participant
		default:
			return p.errorf(pr, "unrecognised peer type %q (participant or observer)", v)
		}
	case k == "dynamicConfigFile":
		c.DynamicConfigFile = v
	case k == "autopurge.snapRetainCount":
		var n int32
		n, err = p.int32(pr)
		c.AutopurgeSnapRetainCount = int(n)
		if err == nil && n < DefaultSnapRetainCount {
			p.warn(pr, "%d is less than %d; using %d", n, DefaultSnapRetainCount, DefaultSnapRetainCount)
			c.AutopurgeSnapRetainCount = DefaultSnapRetainCount
		}
	case k == "autopurge.purgeInterval":
		var n int32
		n, err = p.int32(pr)
		c.AutopurgePurgeInterval = time.Duration(n) * time.Hour
	case k == "multiAddress.enabled":
		c.MultiAddressEnabled, err = p.strictBool(pr)
	case strings.HasPrefix(k, "server.") || strings.HasPrefix(k, "group") || strings.HasPrefix(k, "weight"):
		if hasDynamic {
			return p.errorf(pr, "must be in the separate dynamic configuration file when dynamicConfigFile is set")
		}
		if !strings.HasPrefix(k, "server.") {
			return p.errorf(pr, "hierarchical quorums (group.N and weight.N) are not supported")
		}
		p.servers = append(p.servers, pr)
	case k == "version":
		p.version = &pr

	// Settings ZooKeeper reads as system properties "zookeeper."+key.
	case k == "4lw.commands.whitelist":
		p.fourLW, p.hasFour = v, true
	case k == "extendedTypesEnabled" || k == "zookeeper.extendedTypesEnabled":
		c.ExtendedTypesEnabled = p.javaBool(pr)
	case k == "DigestAuthenticationProvider.superDigest" || k == "zookeeper.DigestAuthenticationProvider.superDigest":
		c.SuperDigest = v
	case k == "DigestAuthenticationProvider.enabled":
		c.DigestAuthEnabled = p.javaBool(pr)
	case k == "DigestAuthenticationProvider.digestAlg":
		if u := strings.ToUpper(v); u != "SHA1" && u != "SHA-1" {
			return p.errorf(pr, "digest algorithm %q is not supported; only SHA1", v)
		}
	case k == "snapCount":
		var n int32
		n, err = p.decode(pr)
		c.SnapCount = int(n)
		if err == nil && n < 2 {
			p.warn(pr, "snapCount should be 2 or more; using 2")
			c.SnapCount = 2
		}
	case k == "globalOutstandingLimit":
		var n int32
		n, err = p.decode(pr)
		c.GlobalOutstandingLimit = int(n)
	case k == "forceSync":
		c.ForceSync = v != "no"
		if v != "no" && v != "yes" {
			p.warn(pr, "ZooKeeper only recognizes \"yes\" and \"no\"; %q means yes", v)
		}

	// JVM system properties honoured from zoo.cfg too.
	case k == "readonlymode.enabled":
		c.ReadOnlyMode = p.javaBool(pr)
	case k == "znode.container.checkIntervalMs":
		var n int32
		n, err = p.decode(pr)
		c.ContainerCheckInterval = time.Duration(n) * time.Millisecond
	case k == "jute.maxbuffer":
		var n int32
		n, err = p.decode(pr)
		c.MaxBuffer = int(n)

	// TLS.
	case k == "secureClientPort" || k == "secureClientPortAddress" || strings.HasPrefix(k, "ssl."):
		return p.tlsErr(pr)
	case k == "client.secure" || k == "sslQuorum" || k == "portUnification" || k == "client.portUnification":
		if strings.EqualFold(v, "true") {
			return p.tlsErr(pr)
		}
		p.warn(pr, "TLS setting; ignored (TLS is not implemented)")
	case k == "serverCnxnFactory":
		if strings.Contains(v, "Netty") {
			p.warn(pr, "Netty connection factory without TLS; zkgo serves the same plaintext protocol on the client port")
		} else {
			p.warn(pr, "setting of the Java server; ignored")
		}

	// SASL and authentication enforcement (AuthenticationHelper).
	case k == "zkgo.sasl.jaasConfig":
		c.JAASConfigFile = v
	case k == "sasl.serverconfig" || k == "zookeeper.sasl.serverconfig":
		if v == "" {
			return p.errorf(pr, "empty JAAS section name")
		}
		c.SASLSection = v
	case k == "superUser":
		c.SASLSuperUser = v
	case strings.HasPrefix(k, "authProvider.") && builtinProviders[v]:
		// zkgo always has the ip, digest and sasl providers.
	case k == "enforce.auth.enabled":
		if p.javaBool(pr) {
			p.enforce = &pr
		} else {
			p.enforce = nil
		}
	case k == "enforce.auth.schemes":
		p.schemes = &pr
	case k == "sessionRequireClientSASLAuth":
		if p.javaBool(pr) {
			p.requireSASL = &pr
		} else {
			p.requireSASL = nil
		}
	case k == "requireClientAuthScheme":
		return p.errorf(pr, "requiring client authentication is not implemented yet; refusing to serve unauthenticated clients")

	default:
		if javaOnlyKeys[k] || hasAnyPrefix(k, javaOnlyPrefixes) {
			p.warn(pr, "setting of the Java server; ignored")
		} else {
			p.warn(pr, "unknown key; ignored")
		}
	}
	return err
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// builtinProviders are the authProvider.N classes zkgo has built in.
var builtinProviders = setOf(
	"org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
	"org.apache.zookeeper.server.auth.DigestAuthenticationProvider",
	"org.apache.zookeeper.server.auth.IPAuthenticationProvider",
)

// enforcement resolves EnforceAuthSchemes as AuthenticationHelper does:
// sessionRequireClientSASLAuth=true means sasl alone; otherwise
// enforce.auth.enabled=true needs enforce.auth.schemes, a comma-separated
// list of schemes that must have a provider.
func (p *parser) enforcement() error {
	c := p.c
	var at property
	switch {
	case p.requireSASL != nil:
		at = *p.requireSASL
		c.EnforceAuthSchemes = []string{"sasl"}
	case p.enforce != nil:
		at = *p.enforce
		if p.schemes != nil {
			at = *p.schemes
			for _, f := range strings.Split(p.schemes.value, ",") {
				if f = strings.TrimSpace(f); f != "" {
					c.EnforceAuthSchemes = append(c.EnforceAuthSchemes, f)
				}
			}
		}
		if len(c.EnforceAuthSchemes) == 0 {
			return p.errorf(at, "enforce.auth.enabled is true, so enforce.auth.schemes must list the schemes to enforce")
		}
	default:
		return nil
	}
	for _, scheme := range c.EnforceAuthSchemes {
		switch scheme {
		case "sasl":
			if c.JAASConfigFile == "" {
				return p.errorf(at, "sasl authentication is enforced but no SASL users are configured: set zkgo.sasl.jaasConfig to the JAAS file with the %q section", c.SASLSection)
			}
		case "digest":
			if !c.DigestAuthEnabled {
				return p.errorf(at, "digest authentication is enforced but DigestAuthenticationProvider.enabled is false")
			}
		case "ip":
		default:
			return p.errorf(at, "authentication scheme %q is not available (zkgo has ip, digest and sasl)", scheme)
		}
	}
	return nil
}

// finish derives defaults from the settings, as ZooKeeper does after reading
// every key.
func (p *parser) finish() error {
	c := p.c
	if err := p.enforcement(); err != nil {
		return err
	}
	if c.DataLogDir == "" {
		c.DataLogDir = c.DataDir
	}
	if c.ClientPort == 0 && p.portAddr != nil {
		return p.errorf(*p.portAddr, "clientPortAddress is set but clientPort is not set")
	}
	if c.TickTime == 0 {
		return fmt.Errorf("%s: tickTime must not be 0", p.name)
	}
	c.MinSessionTimeout = time.Duration(p.minTO) * time.Millisecond
	if p.minTO == -1 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	c.MaxSessionTimeout = time.Duration(p.maxTO) * time.Millisecond
	if p.maxTO == -1 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if p.hasFour {
		for _, w := range strings.FieldsFunc(p.fourLW, func(r rune) bool {
			return r == ',' || r == ' ' || r == '\t'
		}) {
			if w == "*" {
				for _, k := range FourLetterWordsKnown {
					c.FourLetterWords[k] = true
				}
				continue
			}
			c.FourLetterWords[w] = true
		}
	}
	if c.ReadOnlyMode {
		c.FourLetterWords["isro"] = true
	}
	if err := p.addServers(p.servers, c); err != nil {
		return err
	}
	if p.version != nil && len(p.servers) > 0 {
		v, err := strconv.ParseInt(p.version.value, 16, 64)
		if err != nil {
			return p.errorf(*p.version, "invalid hexadecimal version %q", p.version.value)
		}
		c.Version = v
	}
	return nil
}

// parseDynamic reads a dynamic configuration file: server.N lines only. The
// version comes from the file name's hexadecimal suffix
// (zoo.cfg.dynamic.100000000); ZooKeeper refuses a version= line inside.
func (c *Config) parseDynamic(text, name string) error {
	raw, err := readProperties(text, name)
	if err != nil {
		return err
	}
	p := &parser{c: c, name: name}
	var servers []property
	for _, pr := range dedup(raw, name, &p.warnings) {
		pr.key, pr.value = strings.TrimSpace(pr.key), strings.TrimSpace(pr.value)
		switch {
		case strings.HasPrefix(pr.key, "server."):
			servers = append(servers, pr)
		case pr.key == "version":
			return p.errorf(pr, "a dynamic configuration file must not contain the version; it is the suffix of the file name")
		case strings.HasPrefix(pr.key, "group") || strings.HasPrefix(pr.key, "weight"):
			return p.errorf(pr, "hierarchical quorums (group.N and weight.N) are not supported")
		default:
			return p.errorf(pr, "unrecognised parameter in a dynamic configuration file")
		}
	}
	c.Servers = nil
	if err := p.addServers(servers, c); err != nil {
		return err
	}
	c.Version = 0
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		if v, err := strconv.ParseInt(name[i+1:], 16, 64); err == nil {
			c.Version = v
		}
	}
	return nil
}

func (p *parser) addServers(props []property, c *Config) error {
	seen := make(map[int64]int)
	for _, pr := range props {
		id, err := strconv.ParseInt(strings.TrimPrefix(pr.key, "server."), 10, 64)
		if err != nil {
			return p.errorf(pr, "server id %q is not a number", strings.TrimPrefix(pr.key, "server."))
		}
		if line, ok := seen[id]; ok {
			return p.errorf(pr, "server id %d is also defined on line %d", id, line)
		}
		seen[id] = pr.line
		s, err := parseServer(id, pr.value, c.MultiAddressEnabled)
		if err != nil {
			return p.errorf(pr, "%v", err)
		}
		c.Servers = append(c.Servers, s)
	}
	sort.Slice(c.Servers, func(i, j int) bool { return c.Servers[i].ID < c.Servers[j].ID })
	return nil
}

const serverFormat = "want host:peerPort:electionPort[:participant|:observer][;[clientAddress:]clientPort]"

// parseServer parses the value of a server.N entry (QuorumServer).
func parseServer(id int64, value string, multiAddress bool) (Server, error) {
	s := Server{ID: id}
	parts := javaSplit(value, ";")
	if len(parts) > 2 {
		return s, fmt.Errorf("%q: more than one ';'; %s", value, serverFormat)
	}
	if len(parts) == 2 {
		cp, err := hostAndPort(parts[1])
		if err != nil {
			return s, err
		}
		if len(cp) > 2 {
			return s, fmt.Errorf("%q: bad client address %q; %s", value, parts[1], serverFormat)
		}
		if len(cp) == 2 {
			s.ClientAddr = cp[0]
		}
		if s.ClientPort, err = parsePort(cp[len(cp)-1]); err != nil {
			return s, fmt.Errorf("client port: %v", err)
		}
	}
	addrs := javaSplit(parts[0], "|")
	if len(addrs) > 1 && !multiAddress {
		return s, fmt.Errorf("several addresses given but the multiple address feature is disabled (set multiAddress.enabled=true)")
	}
	roleSet := false
	for _, a := range addrs {
		sp, err := hostAndPort(a)
		if err != nil {
			return s, err
		}
		if len(sp) < 3 || len(sp) > 4 {
			return s, fmt.Errorf("%q: %s", value, serverFormat)
		}
		if sp[0] == "" {
			return s, fmt.Errorf("%q: empty host", value)
		}
		var addr Address
		addr.Host = sp[0]
		if addr.PeerPort, err = parsePort(sp[1]); err != nil {
			return s, fmt.Errorf("peer port: %v", err)
		}
		if addr.ElectionPort, err = parsePort(sp[2]); err != nil {
			return s, fmt.Errorf("election port: %v", err)
		}
		if addr.PeerPort == addr.ElectionPort {
			return s, fmt.Errorf("peer and election port must be different")
		}
		if len(sp) == 4 {
			var role Role
			switch strings.ToLower(strings.TrimSpace(sp[3])) {
			case "participant":
				role = Participant
			case "observer":
				role = Observer
			default:
				return s, fmt.Errorf("unrecognised peer type %q", sp[3])
			}
			if roleSet && role != s.Role {
				return s, fmt.Errorf("multiple addresses must have the same role")
			}
			s.Role, roleSet = role, true
		}
		s.Addrs = append(s.Addrs, addr)
	}
	s.Host, s.PeerPort, s.ElectionPort = s.Addrs[0].Host, s.Addrs[0].PeerPort, s.Addrs[0].ElectionPort
	return s, nil
}

// hostAndPort splits "host:port[:...]" at ':', with IPv6 literals in
// brackets (ConfigUtils.getHostAndPort).
func hostAndPort(s string) ([]string, error) {
	if !strings.HasPrefix(s, "[") {
		return javaSplit(s, ":"), nil
	}
	i := strings.IndexByte(s, ']')
	switch {
	case i < 0:
		return nil, fmt.Errorf("%q starts with '[' but has no matching ']'", s)
	case i+1 == len(s):
		return []string{s[1:i]}, nil
	case s[i+1] != ':' || i+2 == len(s):
		return nil, fmt.Errorf("%q has no port after ']:'", s)
	}
	return append([]string{s[1:i]}, javaSplit(s[i+2:], ":")...), nil
}

// javaSplit is Java's String.split with a literal separator and no limit:
// trailing empty strings are dropped, but a string without the separator
// (including "") is returned whole.
func javaSplit(s, sep string) []string {
	if !strings.Contains(s, sep) {
		return []string{s}
	}
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

func parsePort(s string) (int, error) {
	n, ok := javaParseInt(strings.TrimSpace(s))
	if !ok {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < 0 || n > 65535 {
		return 0, fmt.Errorf("%d is out of range", n)
	}
	return int(n), nil
}

func (p *parser) port16(pr property) (int, error) {
	n, err := p.int32(pr)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > 65535 {
		return 0, p.errorf(pr, "port %d out of range", n)
	}
	return int(n), nil
}

// int32 parses a decimal integer as Java's Integer.parseInt does.
func (p *parser) int32(pr property) (int32, error) {
	n, ok := javaParseInt(pr.value)
	if !ok {
		return 0, p.errorf(pr, "invalid integer %q", pr.value)
	}
	return n, nil
}

// decode parses an integer as Java's Integer.decode does (used for values
// ZooKeeper reads with Integer.getInteger): decimal, 0x/0X/# hexadecimal,
// or 0-prefixed octal, with an optional sign.
func (p *parser) decode(pr property) (int32, error) {
	n, ok := javaDecode(pr.value)
	if !ok {
		return 0, p.errorf(pr, "invalid integer %q", pr.value)
	}
	return n, nil
}

// strictBool is QuorumPeerConfig.parseBoolean: "true" or "false", any case.
func (p *parser) strictBool(pr property) (bool, error) {
	switch {
	case strings.EqualFold(pr.value, "true"):
		return true, nil
	case strings.EqualFold(pr.value, "false"):
		return false, nil
	}
	return false, p.errorf(pr, "invalid boolean %q (true or false)", pr.value)
}

// javaBool is Boolean.parseBoolean: only "true", in any case, is true. Other
// values than "false" get a warning.
func (p *parser) javaBool(pr property) bool {
	if strings.EqualFold(pr.value, "true") {
		return true
	}
	if !strings.EqualFold(pr.value, "false") {
		p.warn(pr, "%q is not true or false; ZooKeeper reads it as false", pr.value)
	}
	return false
}

// javaParseInt is Integer.parseInt(s, 10) for ASCII input.
func javaParseInt(s string) (int32, bool) {
	return javanum.ParseInt(s, 10)
}

// javaDecode is Integer.decode.
func javaDecode(s string) (int32, bool) {
	neg := false
	rest := s
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	radix := 10
	switch {
	case strings.HasPrefix(rest, "0x") || strings.HasPrefix(rest, "0X"):
		radix, rest = 16, rest[2:]
	case strings.HasPrefix(rest, "#"):
		radix, rest = 16, rest[1:]
	case strings.HasPrefix(rest, "0") && len(rest) > 1:
		radix, rest = 8, rest[1:]
	}
	if rest == "" || rest[0] == '+' || rest[0] == '-' {
		return 0, false
	}
	if neg {
		rest = "-" + rest
	}
	return javanum.ParseInt(rest, radix)
}

// Java properties syntax.

// property is one key=value pair of a Java properties file.
type property struct {
	key, value string
	line       int // line on which the logical line starts
}

// readProperties parses Java properties text (java.util.Properties.load):
// '#' and '!' comment lines, blank lines, a key ending at the first
// unescaped '=', ':' or whitespace, an optional separator surrounded by
// whitespace, backslash escapes (\t \n \r \f \uXXXX, and \x for any other x)
// and lines continued by an odd number of trailing backslashes.
//
// The text is taken as UTF-8 (Java reads an InputStream as ISO-8859-1, which
// only differs for non-ASCII bytes). Pairs are returned in file order,
// including repeated keys.
func readProperties(text, name string) ([]property, error) {
	var props []property
	lines := splitLines(text)
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := trimLeftWS(lines[i])
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue // comments are never continued
		}
		var logical strings.Builder
		for {
			if n := trailingBackslashes(l); n%2 == 1 && i+1 < len(lines) {
				logical.WriteString(l[:len(l)-1])
				i++
				l = trimLeftWS(lines[i])
				continue
			} else if n%2 == 1 {
				l = l[:len(l)-1] // a continuation at end of input is dropped
			}
			logical.WriteString(l)
			break
		}
		key, value, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, start, err)
		}
		props = append(props, property{key: key, value: value, line: start})
	}
	return props, nil
}

// splitLines splits at "\n", "\r" and "\r\n".
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return out
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftWS(s string) string {
	for s != "" && isWS(s[0]) {
		s = s[1:]
	}
	return s
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits a logical line into its unescaped key and value.
func splitProperty(l string) (key, value string, err error) {
	keyLen, valueStart := 0, len(l)
	hasSep, escaped := false, false
	for keyLen < len(l) {
		c := l[keyLen]
		if !escaped && (c == '=' || c == ':') {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if !escaped && isWS(c) {
			valueStart = keyLen + 1
			break
		}
		escaped = c == '\\' && !escaped
		keyLen++
	}
	for valueStart < len(l) {
		c := l[valueStart]
		if !isWS(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	if key, err = unescape(l[:keyLen]); err != nil {
		return "", "", err
	}
	if value, err = unescape(l[valueStart:]); err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescape resolves properties escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, ok := hex4(s[i+1:])
			if !ok {
				return "", fmt.Errorf(`malformed \uxxxx escape`)
			}
			i += 4
			// A UTF-16 surrogate pair written as two escapes is one
			// character.
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+1:], `\u`) {
				if r2, ok := hex4(s[i+3:]); ok {
					if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
						r = c
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// hex4 decodes the four hex digits that start s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		d := hexVal(s[i])
		if d < 0 {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
