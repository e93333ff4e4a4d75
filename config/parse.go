package config

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/internal/boundedfile"
	"github.com/zkgo/zkgo/internal/javanum"
)

// MaxConfigFileSize bounds zoo.cfg, the dynamic configuration file and a
// client configuration file (a thousand servers take under 100 KiB).
const MaxConfigFileSize = boundedfile.Config

// maxSmallFileSize bounds myid and password files.
const maxSmallFileSize = boundedfile.Small

// Parsing zoo.cfg's keys into a Config.

// Parse parses zoo.cfg text; name is used in messages. It neither reads the
// dynamic configuration file, the JAAS file nor myid, nor validates the
// result: Load does.
// Warnings are one line each, for the caller to log.
func Parse(r io.Reader, name string, opts ...LoadOption) (*Config, []string, error) {
	data, err := boundedfile.Read(r, name, "configuration file", MaxConfigFileSize)
	if err != nil {
		return nil, nil, err
	}
	return parse(string(data), name, newLoadOptions(opts))
}

// javaOnlyKeys are settings of the Java server that zkgo does not need: they
// get a "setting of the Java server" warning rather than "unknown key".
var javaOnlyKeys = setOf(
	"clientPortListenBacklog",
	"closeSessionTxn.enabled", "commitLogCount", "connectToLearnerMasterLimit",
	"electionAlg", "electionPortBindRetry",
	"enforceQuota", "flushDelay", "fsync.warningthresholdms", "jute.maxbuffer.extrasize",
	"largeRequestMaxBytes", "largeRequestThreshold", "leader.maxConcurrentDiffSyncs",
	"leader.maxConcurrentSnapSyncs", "learner.asyncSending", "localSessionsEnabled",
	"localSessionsUpgradingEnabled", "maxBatchSize",
	"maxGetChildrenResponseCacheSize", "maxResponseCacheSize", "maxWriteQueuePollTime",
	"multiAddress.reachabilityCheckEnabled", "multiAddress.reachabilityCheckTimeoutMs",
	"observerMasterPort", "oraclePath", "preAllocSize", "quorum.cnxn.threads.size",
	"requestStaleConnectionCheck",
	"requestStaleLatencyCheck", "requestThrottleDropStale", "requestThrottleLimit",
	"requestThrottleStallTime", "serializeLastProcessedZxid.enabled",
	"sslQuorumReloadCertFiles", "syncEnabled",
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
	"authProvider.", "jvm.pause.",
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

// where names a setting in messages: "zoo.cfg:3: snapCount", or for a
// system property "SERVER_JVMFLAGS: -Dzookeeper.snapCount".
func (p *parser) where(pr property) string {
	if pr.origin != "" {
		return pr.origin
	}
	return fmt.Sprintf("%s:%d: %s", p.name, pr.line, pr.key)
}

func (p *parser) warn(pr property, format string, args ...any) {
	p.warnings = append(p.warnings, p.where(pr)+": "+fmt.Sprintf(format, args...))
}

func (p *parser) errorf(pr property, format string, args ...any) error {
	return fmt.Errorf("%s: %s", p.where(pr), fmt.Sprintf(format, args...))
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

func parse(text, name string, o loadOptions) (*Config, []string, error) {
	raw, err := readProperties(text, name)
	if err != nil {
		return nil, nil, err
	}
	p := &parser{c: base(), name: name, minTO: -1, maxTO: -1}
	props := dedup(raw, name, &p.warnings)
	hasDynamic := false
	for i, pr := range props {
		props[i].key = strings.TrimSpace(pr.key)
		props[i].value = strings.TrimSpace(pr.value)
		if props[i].key == "dynamicConfigFile" {
			hasDynamic = true
		}
	}
	if o.jvm != nil {
		props = p.systemProperties(o.jvm, props)
	}
	for _, pr := range props {
		if err := p.property(pr, hasDynamic); err != nil {
			return nil, p.warnings, err
		}
	}
	if err := p.finish(); err != nil {
		return nil, p.warnings, err
	}
	p.c.Text = text
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
	case k == "maxCnxns":
		var n int32
		n, err = p.int32(pr)
		c.MaxCnxns = int(n)
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
	case k == "connection_throttle_tokens" || k == "zookeeper.connection_throttle_tokens":
		var n int32
		n, err = p.int32(pr)
		c.ConnectionThrottleTokens = int(n)
	case k == "connection_throttle_fill_time" || k == "zookeeper.connection_throttle_fill_time":
		var n int32
		n, err = p.int32(pr)
		c.ConnectionThrottleFillTime = time.Duration(n) * time.Millisecond
	case k == "connection_throttle_fill_count" || k == "zookeeper.connection_throttle_fill_count":
		var n int32
		n, err = p.int32(pr)
		c.ConnectionThrottleFillCount = int(n)
	case strings.HasPrefix(k, "connection_throttle_") || strings.HasPrefix(k, "zookeeper.connection_throttle_"):
		p.warn(pr, "connection throttle setting zkgo does not use (it has a plain token bucket: tokens, fill_time, fill_count)")
	case k == "reconfigEnabled":
		c.ReconfigEnabled = p.javaBool(pr)
	case k == "quorumListenOnAllIPs":
		c.QuorumListenOnAllIPs = p.javaBool(pr)
	case k == "standaloneEnabled":
		c.StandaloneEnabled = p.javaBool(pr)
	case k == "skipACL" || k == "zookeeper.skipACL":
		// ZooKeeper reads "yes" (any other value: no).
		c.SkipACL = strings.TrimSpace(v) == "yes"
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
	case k == "zkgo.reads":
		switch strings.ToLower(v) {
		case "linearizable":
			c.LinearizableReads = true
		case "sequential", "":
			c.LinearizableReads = false
		default:
			return p.errorf(pr, "%q: linearizable or sequential (ZooKeeper's, the default)", v)
		}
	case k == "digest.enabled":
		c.DigestEnabled = p.javaBool(pr)
	case k == "zkgo.snapshot.maxBytes":
		n, ok := javaDecodeLong(v)
		if !ok || n <= 0 {
			return p.errorf(pr, "invalid size %q (bytes, more than 0)", v)
		}
		c.MaxSnapshotBytes = n
	case k == "zkgo.connection.parkAfterMs":
		var n int32
		n, err = p.int32(pr)
		c.ParkAfter = time.Duration(n) * time.Millisecond
		if n <= 0 {
			c.ParkAfter = -1
		}
	case k == "zkgo.groupCommit.maxWaitUs":
		var n int32
		n, err = p.int32(pr)
		c.CommitDelay = time.Duration(n) * time.Microsecond
		if n <= 0 {
			c.CommitDelay = -1
		}
	case k == "zkgo.wal.prefill":
		c.WALPrefill = p.javaBool(pr)
	case k == "zkgo.exists.checkRead":
		c.ExistsCheckRead = p.javaBool(pr)
	case k == "audit.enable":
		// ZKAuditProvider: Boolean.getBoolean("zookeeper.audit.enable"),
		// which zoo.cfg's audit.enable sets.
		c.AuditEnabled = p.javaBool(pr)
	case k == "audit.impl.class":
		if v != "" && v != "org.apache.zookeeper.audit.Slf4jAuditLogger" && v != "org.apache.zookeeper.audit.Log4jAuditLogger" {
			p.warn(pr, "custom audit logger %s cannot run in zkgo; zkgo writes the audit log itself (zkgo.audit.file)", v)
		}
	case k == "zkgo.audit.file":
		if v == "" {
			return p.errorf(pr, "empty: give a file, or - for the server's log")
		}
		c.AuditFile = v
	case k == "snapSizeLimitInKb":
		n, ok := javaDecodeLong(v)
		if !ok {
			return p.errorf(pr, "invalid integer %q", v)
		}
		c.SnapSizeLimitKB = max(n, -1)
		if n == 0 {
			c.SnapSizeLimitKB = -1
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

	// SASL and authentication enforcement (AuthenticationHelper).
	case k == "zkgo.sasl.jaasConfig":
		c.JAASConfigFile = v
		c.jaasFrom = p.where(pr)
	case k == "sasl.serverconfig" || k == "zookeeper.sasl.serverconfig":
		if v == "" {
			return p.errorf(pr, "empty JAAS section name")
		}
		c.SASLSection = v
	case k == "superUser":
		c.SASLSuperUser = v
	case strings.HasPrefix(k, "authProvider.") && builtinProviders[v]:
		// zkgo has the ip and digest providers always, x509 with TLS,
		// and sasl with SASL users or when named here.
		if strings.HasSuffix(v, ".SASLAuthenticationProvider") {
			c.SASLProvider, c.saslProviderNamed = true, true
		}
	case strings.HasPrefix(k, "quorum.auth."):
		if err := p.parseQuorumAuth(c, pr); err != nil {
			return err
		}
	case isKerberosKey(k):
		err = p.kerberosProperty(pr)
	case k == "X509AuthenticationProvider.superUser" || k == "zookeeper.X509AuthenticationProvider.superUser":
		c.X509SuperUser = v
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

	case strings.HasPrefix(k, "metricsProvider."):
		err = p.metricsProperty(pr)
	case isAdminKey(k):
		err = p.adminProperty(pr)

	default:
		if ok, err := p.tlsProperty(pr); ok {
			return err
		}
		if javaOnlyKeys[k] || hasAnyPrefix(k, javaOnlyPrefixes) {
			p.warn(pr, "setting of the Java server; ignored")
		} else if pr.origin != "" {
			p.warn(pr, "not a ZooKeeper server property zkgo knows; ignored")
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
	"org.apache.zookeeper.server.auth.X509AuthenticationProvider",
)

// enforcement resolves EnforceAuthSchemes as AuthenticationHelper does:
// sessionRequireClientSASLAuth=true means sasl alone; otherwise
// enforce.auth.enabled=true needs enforce.auth.schemes, a comma-separated
// list of schemes that must have a provider. zkgo's sasl provider is
// always there, users or not (see Config.SASLProvider).
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
			// Without SASL users too: Load warns then, once the JAAS
			// file is read (Config.loadSASL).
			c.SASLProvider = true
			c.enforceFrom = p.where(at)
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
	if err := p.validateTLS(); err != nil {
		return err
	}
	if err := p.validateQuorumTLS(); err != nil {
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

// javaDecodeLong is Long.decode (ZooKeeper's Long.getLong).
func javaDecodeLong(s string) (int64, bool) {
	digits, radix, ok := javaDecodeSplit(s)
	if !ok || strings.ContainsRune(digits, '_') {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, radix, 64)
	return n, err == nil
}

// javaDecode is Integer.decode.
func javaDecode(s string) (int32, bool) {
	digits, radix, ok := javaDecodeSplit(s)
	if !ok {
		return 0, false
	}
	return javanum.ParseInt(digits, radix)
}

// javaDecodeSplit splits what Integer.decode and Long.decode read: an
// optional sign, then 0x, 0X or # (hexadecimal), 0 (octal) or nothing
// (decimal). It returns the signed digits and their radix.
func javaDecodeSplit(s string) (digits string, radix int, ok bool) {
	neg := false
	rest := s
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	radix = 10
	switch {
	case strings.HasPrefix(rest, "0x") || strings.HasPrefix(rest, "0X"):
		radix, rest = 16, rest[2:]
	case strings.HasPrefix(rest, "#"):
		radix, rest = 16, rest[1:]
	case strings.HasPrefix(rest, "0") && len(rest) > 1:
		radix, rest = 8, rest[1:]
	}
	if rest == "" || rest[0] == '+' || rest[0] == '-' {
		return "", 0, false
	}
	if neg {
		rest = "-" + rest
	}
	return rest, radix, true
}
