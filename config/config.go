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
// The JVM system properties ZooKeeper would be started with
// (SERVER_JVMFLAGS, JVMFLAGS, java.env: ReadJVM) are applied with WithJVM,
// by ZooKeeper's precedence against zoo.cfg (sysprops.go).
//
// SASL (DIGEST-MD5) users live in a JAAS file, as in ZooKeeper, named by
// -Djava.security.auth.login.config or, in zoo.cfg, by the zkgo key
// zkgo.sasl.jaasConfig (see jaas.go). superUser, sasl.serverconfig,
// enforce.auth.enabled, enforce.auth.schemes and
// sessionRequireClientSASLAuth are honoured as ZooKeeper reads them.
//
// The AdminServer's keys (admin.*, also spelled zookeeper.admin.*) are
// honoured with ZooKeeper's defaults (on, 0.0.0.0:8080, /commands); see
// admin.go. zkgo.admin.pprof is zkgo's own.
//
// Known departures from ZooKeeper, all deliberate:
//   - jute.maxbuffer, readonlymode.enabled and
//     znode.container.checkIntervalMs are honoured from zoo.cfg although
//     ZooKeeper only reads them as JVM system properties (-D flags; those
//     win when both are given), and the "zookeeper."-prefixed spellings
//     zookeeper.extendedTypesEnabled and
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
//     accepted without a warning, and sasl may be enforced without it
//     (ZooKeeper does not start then). Enforcing sasl without any SASL
//     user starts the server with a warning, as ZooKeeper starts (with the
//     provider): every session is closed at its first request.
//   - A JAAS file without the server's section (or empty) leaves server
//     SASL off with a warning; ZooKeeper says nothing.
//   - Hierarchical quorums (group.N, weight.N) are refused.
//   - The file is read as UTF-8 (Java reads zoo.cfg as ISO-8859-1).
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/internal/boundedfile"
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
	MaxCnxns          int // maxCnxns: client connections in all; 0 (or less) is unlimited
	// SSLQuorum (sslQuorum) runs the members' peer connections over
	// mutual TLS with the ssl.quorum.* stores in SSLQuorumStores.
	SSLQuorum       bool
	SSLQuorumStores TLS
	// PortUnification (portUnification) makes the peer port accept TLS
	// and plaintext members alike, for the rolling switch of an ensemble
	// from plaintext to TLS (or back): every member first gets
	// portUnification with the ssl.quorum.* stores, then sslQuorum=true,
	// then portUnification is removed, one rolling restart each.
	PortUnification bool
	// ConnectionThrottleTokens (connection_throttle_tokens) is the size of
	// the token bucket that new client connections draw from; 0 (the
	// default) disables the throttle. The bucket gets
	// ConnectionThrottleFillCount tokens every ConnectionThrottleFillTime
	// (connection_throttle_fill_count, _fill_time; defaults 1 and 1 ms).
	ConnectionThrottleTokens    int
	ConnectionThrottleFillTime  time.Duration
	ConnectionThrottleFillCount int
	// SecureClientPort and SecureClientPortAddress are the TLS client
	// port (0: none); ClientPortUnification serves TLS and plaintext on
	// clientPort (client.portUnification). SSL holds the ssl.* settings.
	SecureClientPort        int
	SecureClientPortAddress string
	ClientPortUnification   bool
	SSL                     TLS
	// SASLProvider: the sasl scheme is registered even without SASL
	// users (sasl ACLs are valid): authProvider.N names
	// SASLAuthenticationProvider, or sasl authentication is enforced.
	// ZooKeeper registers the scheme only from authProvider.N and does not
	// start when it enforces sasl without it; zkgo has the scheme always
	// and starts, with a warning.
	SASLProvider bool
	// X509SuperUser (X509AuthenticationProvider.superUser) is the
	// certificate subject that is the super user.
	X509SuperUser string
	// MinSessionTimeout and MaxSessionTimeout default to 2 and 20 ticks.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// FourLetterWords is the set of enabled four-letter words
	// (4lw.commands.whitelist): always "srvr", "isro" when ReadOnlyMode,
	// every known word for "*".
	FourLetterWords      map[string]bool
	ExtendedTypesEnabled bool   // extendedTypesEnabled: TTL nodes
	ReconfigEnabled      bool   // reconfigEnabled: the reconfig operation is allowed (default false)
	StandaloneEnabled    bool   // standaloneEnabled (default true): one participant runs standalone; false: a quorum of one
	SkipACL              bool   // skipACL=yes: no ACL checks (zkgo uses it for reconfig's authorization only)
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
	// QuorumListenOnAllIPs (quorumListenOnAllIPs): a member listens for
	// its peers on every interface, not only on its own entry's address.
	QuorumListenOnAllIPs bool
	InitLimit            int // initLimit (ticks)
	SyncLimit            int // syncLimit (ticks)
	SnapCount            int // snapCount, default 100000, at least 2
	// SnapSizeLimitKB (snapSizeLimitInKb): a snapshot is due once the log
	// since the last one holds this many KiB. 0: zkgo's default (64 MiB,
	// not ZooKeeper's 4 GiB: zkgo holds that log in memory); -1: no
	// limit by size (snapSizeLimitInKb of 0 or less, as in ZooKeeper).
	SnapSizeLimitKB int64
	// DigestEnabled (digest.enabled, default true) keeps ZooKeeper's tree
	// digest (the hash command).
	DigestEnabled bool
	// ParkAfter (zkgo.connection.parkAfterMs, zkgo's own key): an idle
	// client connection parks after this long without a request (no
	// goroutines, no input buffer; server.Options.IdleAfter; four times
	// as long for one whose requests, pings aside, came that close
	// together). 0: the server's default (250 ms); negative (a value of
	// 0 or less): never.
	ParkAfter time.Duration
	// WALPrefill (zkgo.wal.prefill, zkgo's own key, default true) writes
	// zeros into the WAL's preallocated space ahead of the log
	// (server.Options.NoWALPrefill; docs/decisions/0008-wal-prefill-and-quiet-deletes.md
	// says when to turn it off).
	WALPrefill bool
	// CommitDelay (zkgo.groupCommit.maxWaitUs, zkgo's own key, in
	// microseconds): the longest the leader holds a lone write back from
	// its fsync when a second one usually follows (group commit;
	// server.Options.CommitDelay). 0: the default (1 ms, and never longer
	// than the mean fsync); negative (a value of 0 or less): off.
	CommitDelay time.Duration
	// ExistsCheckRead (zkgo.exists.checkRead, zkgo's own key, default
	// true): exists needs READ on an existing node, as in ZooKeeper 3.8.4+
	// and 3.9.2+ (ZOOKEEPER-2590, which has no switch); false answers it
	// as 3.8.0 did (server.Options.ExistsWithoutRead).
	ExistsCheckRead bool
	// AuditEnabled (audit.enable, or -Dzookeeper.audit.enable) turns on
	// ZooKeeper's audit log; AuditFile (zkgo.audit.file, zkgo's own key)
	// is where it goes, as given: see AuditPath.
	AuditEnabled bool
	AuditFile    string
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
	// Kerberos is SASL GSSAPI for clients (kerberos.go).
	Kerberos Kerberos
	// LinearizableReads (zkgo.reads=linearizable, zkgo's own key; default
	// sequential, ZooKeeper's) answers every read after a ReadIndex
	// round (server.Options.LinearizableReads).
	LinearizableReads bool
	// QuorumAuth is quorum SASL, the members' authentication of each
	// other (quorum.auth.*; quorumauth.go).
	QuorumAuth QuorumAuth
	// EnforceAuthSchemes are the schemes a client must have authenticated
	// with before anything else (enforce.auth.enabled=true with
	// enforce.auth.schemes, or sessionRequireClientSASLAuth=true for
	// "sasl"); nil when not enforced.
	EnforceAuthSchemes []string
	// MaxSnapshotBytes (zkgo.snapshot.maxBytes, zkgo's own key; 0: the
	// storage's default, 4 GiB) bounds a snapshot's data: one this member
	// takes, and one a leader streams to it, whose partial file is the
	// disk a broken stream can hold.
	MaxSnapshotBytes int64
	// Metrics is the metrics provider (metricsProvider.className,
	// httpHost, httpPort).
	Metrics Metrics
	// Admin is the AdminServer (admin.* or zookeeper.admin.*, and
	// zkgo.admin.pprof).
	Admin Admin
	// Text is the zoo.cfg text as read (Parse, Load), for the
	// AdminServer's initial_configuration; "" for Default.
	Text string
	// SystemProperties lists the JVM system properties that were applied
	// (WithJVM), as "-Dkey (where it was set)", for the log; values are
	// left out, as they may be passwords.
	SystemProperties []string

	jaasFrom          string // where JAASConfigFile was set, for messages
	enforceFrom       string // where sasl enforcement was set, for messages
	saslProviderNamed bool   // authProvider.N names SASLAuthenticationProvider
}

// FourLetterWordsKnown lists every four-letter word ZooKeeper 3.8 knows;
// "*" in 4lw.commands.whitelist enables all of them.
var FourLetterWordsKnown = []string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro",
	"mntr", "ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs",
}

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
		TickTime:                    zkDefaultTickTime,
		MaxClientCnxns:              DefaultMaxClientCnxns,
		FourLetterWords:             map[string]bool{"srvr": true},
		DigestAuthEnabled:           true,
		StandaloneEnabled:           true,
		MyID:                        NoID,
		SnapCount:                   DefaultSnapCount,
		DigestEnabled:               true,
		AutopurgeSnapRetainCount:    DefaultSnapRetainCount,
		ContainerCheckInterval:      DefaultContainerCheckInterval,
		MaxBuffer:                   DefaultMaxBuffer,
		GlobalOutstandingLimit:      DefaultGlobalOutstandingLimit,
		ForceSync:                   true,
		WALPrefill:                  true,
		ExistsCheckRead:             true,
		SASLSection:                 DefaultSASLSection,
		SSL:                         TLS{HostnameVerification: true},
		ConnectionThrottleFillTime:  time.Millisecond,
		ConnectionThrottleFillCount: 1,
		SSLQuorumStores:             TLS{HostnameVerification: true},
		Metrics:                     Metrics{HTTPHost: DefaultMetricsHTTPHost, HTTPPort: DefaultMetricsHTTPPort},
		Admin: Admin{Enabled: true, Console: true, Snapshot: true, Restore: true, RateLimit: 5 * time.Minute, ServerAddress: DefaultAdminServerAddress, ServerPort: DefaultAdminServerPort,
			CommandURL: DefaultAdminCommandURL, IdleTimeout: DefaultAdminIdleTimeout},
		QuorumAuth: QuorumAuth{LearnerSection: DefaultQuorumLearnerSection, ServerSection: DefaultQuorumServerSection,
			ServicePrincipal: DefaultQuorumServicePrinc},
	}
}

// SecureClientAddr returns the address of the TLS client port for
// net.Listen, or "" when there is none.
func (c *Config) SecureClientAddr() string {
	if c.SecureClientPort == 0 {
		return ""
	}
	return net.JoinHostPort(c.SecureClientPortAddress, strconv.Itoa(c.SecureClientPort))
}

// ClientAddr returns the address to listen on for clients, for net.Listen.
// It is "" when only a TLS client port is configured.
func (c *Config) ClientAddr() string {
	if c.ClientPort == 0 && c.SecureClientPort != 0 {
		return ""
	}
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
// than one participant, or one with standaloneEnabled=false (a quorum of
// one, which reconfig can grow). With one participant (or none) and
// standaloneEnabled ZooKeeper runs standalone and ignores the server.N
// entries.
func (c *Config) Distributed() bool {
	p, _ := c.count()
	return p > 1 || p == 1 && !c.StandaloneEnabled
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
	if (c.ClientPort <= 0 || c.ClientPort > 65535) && c.SecureClientPort == 0 {
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
	case p == 1 && o > 0 && c.StandaloneEnabled:
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
// ZooKeeper does, and validates the result. WithJVM adds the JVM system
// properties ZooKeeper would have been started with.
func Load(path string, opts ...LoadOption) (*Config, []string, error) {
	data, err := boundedfile.ReadFile(path, "configuration file", MaxConfigFileSize)
	if err != nil {
		return nil, nil, err
	}
	c, warnings, err := parse(string(data), path, newLoadOptions(opts))
	if err != nil {
		return nil, warnings, err
	}
	if c.DynamicConfigFile != "" {
		dyn := c.DynamicConfigFile
		if !filepath.IsAbs(dyn) {
			dyn = filepath.Join(filepath.Dir(path), dyn)
		}
		data, err := boundedfile.ReadFile(dyn, "dynamic configuration file", MaxConfigFileSize)
		if err != nil {
			return nil, warnings, fmt.Errorf("dynamicConfigFile: %w", err)
		}
		if err := c.parseDynamic(string(data), dyn); err != nil {
			return nil, warnings, err
		}
	}
	w, err := c.loadSASL(path)
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	if err := c.loadQuorumAuth(c.jaasPath(path)); err != nil {
		return nil, warnings, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.readMyID(); err != nil {
		return nil, warnings, err
	}
	w, err = c.resolve(path)
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	if err := c.Validate(); err != nil {
		return nil, warnings, fmt.Errorf("%s: %w", path, err)
	}
	return c, warnings, nil
}

// loadSASL reads SASLUsers from the JAAS file (relative to the directory
// of path) and warns, once, when server SASL is off although a JAAS file
// is given or sasl authentication is enforced.
//
// As in ZooKeeper, only a JAAS file that cannot be read or parsed stops
// the server (see saslUsers). A file without the section, or without
// users in it, leaves server SASL off; so does no file at all. Enforcing
// sasl then (sessionRequireClientSASLAuth=true, or enforce.auth.schemes
// naming sasl) is allowed, as in ZooKeeper with the sasl provider
// registered: the server runs and answers every session's first request
// other than auth and SASL with SessionClosedRequireSaslAuth, and closes
// the connection.
// jaasPath is JAASConfigFile resolved against the directory of path, or
// "" without one.
func (c *Config) jaasPath(path string) string {
	if c.JAASConfigFile == "" || filepath.IsAbs(c.JAASConfigFile) {
		return c.JAASConfigFile
	}
	return filepath.Join(filepath.Dir(path), c.JAASConfigFile)
}

func (c *Config) loadSASL(path string) ([]string, error) {
	var warnings []string
	off := "no JAAS file is given (-Djava.security.auth.login.config in SERVER_JVMFLAGS, or zkgo.sasl.jaasConfig)"
	if c.JAASConfigFile != "" {
		jaas := c.JAASConfigFile
		if !filepath.IsAbs(jaas) {
			jaas = filepath.Join(filepath.Dir(path), jaas)
		}
		users, w, why, err := loadSASLUsers(jaas, c.SASLSection)
		warnings = append(warnings, w...)
		if err != nil {
			return warnings, fmt.Errorf("%s: %w", c.jaasFrom, err)
		}
		c.SASLUsers, off = users, why
		if err := c.loadKerberosEntry(jaas, c.SASLSection); err != nil {
			return warnings, fmt.Errorf("%s: %w", c.jaasFrom, err)
		}
		if c.Kerberos.ServerEntry != nil {
			off = ""
		}
	}
	if err := c.checkKerberos(); err != nil {
		return warnings, err
	}
	switch {
	case off == "":
	case slices.Contains(c.EnforceAuthSchemes, "sasl"):
		who := "every session"
		if others := slices.DeleteFunc(slices.Clone(c.EnforceAuthSchemes), func(s string) bool { return s == "sasl" }); len(others) > 0 {
			who = "a session not authenticated with " + strings.Join(others, " or ")
		}
		w := fmt.Sprintf("%s: sasl authentication is enforced but no client can authenticate with SASL: %s; "+
			"%s is closed with SessionClosedRequireSaslAuth at its first request", c.enforceFrom, off, who)
		if !c.saslProviderNamed {
			w += " (ZooKeeper 3.8 would not start at all: without authProvider.N=org.apache.zookeeper.server.auth.SASLAuthenticationProvider it has no sasl scheme to enforce)"
		}
		warnings = append(warnings, w)
	case c.JAASConfigFile != "":
		warnings = append(warnings, c.jaasFrom+": "+off+": "+saslOffNote)
	}
	return warnings, nil
}

// LoadOption is an option of Load and Parse.
type LoadOption func(*loadOptions)

type loadOptions struct {
	jvm *JVM
}

func newLoadOptions(opts []LoadOption) loadOptions {
	var o loadOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithJVM applies the JVM system properties of j (ReadJVM) together with
// the file, as ZooKeeper would see them had it been started with those
// flags: see sysprops.go for which properties count and which side wins.
// j's warnings are returned with the file's.
func WithJVM(j *JVM) LoadOption {
	return func(o *loadOptions) { o.jvm = j }
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
	data, err := boundedfile.ReadFile(p, "myid file", maxSmallFileSize)
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
	if p, _ := c.count(); p == 1 && c.StandaloneEnabled {
		warnings = append(warnings, name+": server.N: only one participant in the servers list; running standalone (standaloneEnabled=false makes it a quorum of one)")
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

// DefaultAuditFile is the audit log's file name, ZooKeeper's
// (zookeeper.auditlog.file in its logback.xml).
const DefaultAuditFile = "zookeeper_audit.log"

// AuditPath is the audit log's file: zkgo.audit.file, relative to
// dataDir when it is relative; by default DefaultAuditFile in dataDir.
// "" means the server's own log (zkgo.audit.file=-, or no dataDir and no
// zkgo.audit.file).
func (c *Config) AuditPath() string {
	f := c.AuditFile
	switch {
	case f == "-":
		return ""
	case f == "" && c.DataDir == "":
		return ""
	case f == "":
		f = DefaultAuditFile
	}
	if filepath.IsAbs(f) || c.DataDir == "" {
		return f
	}
	return filepath.Join(c.DataDir, f)
}
