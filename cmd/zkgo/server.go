package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/console"
	"github.com/zkgo/zkgo/internal/gctune"
	"github.com/zkgo/zkgo/internal/memlimit"
	"github.com/zkgo/zkgo/internal/tlsconf"
	"github.com/zkgo/zkgo/raftnode"
	"github.com/zkgo/zkgo/server"
)

// memoryFloor is the least headroom -memory-ratio leaves over the live
// heap (with -gc-headroom-mb 0): a small live heap is then not collected
// after every few allocations. Otherwise the floor is -gc-headroom-mb, so
// that the limit bites only where the ratio gives less headroom than
// gctune does: above a live heap of headroom/(ratio-1), 256 MB by
// default.
const memoryFloor = 32 << 20

// defaultMemoryRatio is -memory-ratio's default: under sustained writes
// a large tree's process holds about 1.5 times its live heap instead of
// twice and more (docs/decisions/0010-memory-headroom-and-return.md).
const defaultMemoryRatio = 1.5

func runServer(args []string) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	addr := fs.String("addr", "", "client address `host:port` to listen on, overriding clientPortAddress/clientPort (port 0 picks a free port)")
	adminAddr := fs.String("admin-addr", "", "AdminServer address `host:port`, overriding admin.serverAddress/serverPort (port 0 picks a free port); \"off\" disables it, as admin.enableServer=false")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "log line format: text (key=value) or json (one JSON object per line, for log shippers)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (pprof) of the whole run to `file`, finished at shutdown")
	javaEnv := fs.String("java-env", "", "shell `file` setting SERVER_JVMFLAGS/JVMFLAGS, read without running a shell (simple assignments); default: zookeeper-env.sh and java.env in $ZOOCFGDIR, or else next to zoo.cfg; \"off\": none (zkServer.sh has sourced them)")
	memRatio := fs.Float64("memory-ratio", defaultMemoryRatio, "keep the Go runtime's soft memory limit at this `multiple` of the live heap (plus the runtime's memory outside the heap, and at least -gc-headroom-mb, or 32 MB, over the live heap), set again after every garbage collection: under steady writes a large tree's process then holds about that multiple instead of twice the live heap and more, for more collector CPU (docs/BENCHMARKS.md); 0: no limit; ignored when GOMEMLIMIT is set")
	gcHeadroom := fs.Int("gc-headroom-mb", 128, "let the heap grow this many `MB` beyond the live heap between garbage collections (raises GOGC while the tree is small; 0: Go's default; ignored when GOGC is set)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo server [flags] [zoo.cfg]

Runs a standalone ZooKeeper-compatible server. Without a configuration file
it uses embedded defaults: clients on port 2181 of all interfaces, data
directory ./zkgo-data, tickTime 2000 ms. With a file, it reads an unchanged
Apache ZooKeeper zoo.cfg (tickTime, dataDir, dataLogDir, clientPort,
clientPortAddress, maxClientCnxns, min/maxSessionTimeout,
4lw.commands.whitelist, extendedTypesEnabled, superDigest, myid in dataDir,
server.N lines, metricsProvider.* for Prometheus metrics on
http://httpHost:httpPort/metrics, admin.* for the AdminServer, on by
default at http://0.0.0.0:8080/commands, zkgo.admin.pprof=true for Go's
profiler at /debug/pprof/ on it, and the web console at / of it unless
zkgo.admin.console=false); keys that only make sense for the Java
server are accepted with a warning. SASL DIGEST-MD5 users come from the JAAS file named by the
zkgo key zkgo.sasl.jaasConfig (section "Server": user_NAME="password");
enforce.auth.enabled/enforce.auth.schemes and sessionRequireClientSASLAuth
are honoured.

As zkServer.sh would give java, the JVM system properties (-Dkey=value) in
the environment variables SERVER_JVMFLAGS and JVMFLAGS, and in java.env
next to zoo.cfg (or in $ZOOCFGDIR), are applied when they have a
ZooKeeper meaning: -Djava.security.auth.login.config (the JAAS file),
-Djute.maxbuffer, -Dreadonlymode.enabled, and -Dzookeeper.KEY as zoo.cfg's
KEY (zoo.cfg wins where both set it, as in ZooKeeper).

Data is durable: every change is written to a log in dataLogDir/zkgo
(dataDir/zkgo when dataLogDir is not set) and fsynced before it is
acknowledged (forceSync=no skips the fsync), with snapshots every snapCount
changes. Restarting on the same directory recovers every acknowledged write.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(os.Stderr, "zkgo server: at most one configuration file")
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "zkgo server: bad -log-level %q\n", *logLevel)
		return 2
	}
	log, err := newLogger(os.Stderr, *logFormat, level)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo server: %v\n", err)
		return 2
	}

	cfg := config.Default()
	source := "embedded defaults"
	if fs.NArg() == 1 {
		var warnings []string
		jvm, err := config.ReadJVM(fs.Arg(0), *javaEnv, os.Getenv)
		if err != nil {
			fmt.Fprintf(os.Stderr, "zkgo server: %v\n", err)
			return 1
		}
		cfg, warnings, err = config.Load(fs.Arg(0), config.WithJVM(jvm))
		for _, w := range warnings {
			log.Warn(w)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "zkgo server: %v\n", err)
			return 1
		}
		if len(cfg.SystemProperties) > 0 {
			log.Info("JVM system properties applied", "properties", cfg.SystemProperties)
		}
		source = fs.Arg(0)
	} else if os.Getenv("SERVER_JVMFLAGS") != "" || os.Getenv("JVMFLAGS") != "" {
		log.Warn("SERVER_JVMFLAGS and JVMFLAGS are read only with a zoo.cfg; ignored")
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "zkgo server: %v\n", err)
		return 1
	}
	opts := optionsFromConfig(cfg, log)
	opts.MaxSnapshotBytes = cfg.MaxSnapshotBytes
	opts.LinearizableReads = cfg.LinearizableReads
	qa := cfg.QuorumAuth
	opts.QuorumAuth = server.QuorumAuthOptions{Enable: qa.EnableSASL, LearnerRequire: qa.LearnerRequire, ServerRequire: qa.ServerRequire,
		ServerUsers: qa.ServerUsers, LearnerUser: qa.LearnerUser, LearnerPassword: qa.LearnerPassword}
	if (cfg.SSLQuorum || cfg.PortUnification) && cfg.Distributed() {
		q := cfg.SSLQuorumStores
		o := tlsconf.Options{KeyStore: tlsconf.Store(q.KeyStore), TrustStore: tlsconf.Store(q.TrustStore), ClientAuth: "need",
			Protocol: q.Protocol, EnabledProtocols: q.EnabledProtocols, CipherSuites: q.CipherSuites,
			HostnameVerification: q.HostnameVerification, Logger: log}
		srvTLS, err := tlsconf.ServerConfig(o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "zkgo server: sslQuorum: %v\n", err)
			return 1
		}
		opts.PeerServerTLS, opts.PeerPortUnification = srvTLS, cfg.PortUnification
		opts.PeerHostnameVerification = q.HostnameVerification
		if cfg.SSLQuorum {
			cliTLS, err := tlsconf.ReloadingClientConfig(o, "")
			if err != nil {
				fmt.Fprintf(os.Stderr, "zkgo server: sslQuorum: %v\n", err)
				return 1
			}
			opts.PeerClientTLSFunc = cliTLS
		}
		log.Info("TLS between members", "sslQuorum", cfg.SSLQuorum, "portUnification", cfg.PortUnification,
			"keyStore", q.KeyStore.Location, "trustStore", q.TrustStore.Location, "hostnameVerification", q.HostnameVerification)
		if cfg.PortUnification {
			log.Warn("portUnification: the peer port also accepts members in plaintext, unauthenticated; remove it once every member runs sslQuorum=true")
		}
	}
	if cfg.SecureClientPort != 0 || cfg.ClientPortUnification {
		t := cfg.SSL
		tc, err := tlsconf.ServerConfig(tlsconf.Options{
			KeyStore:         tlsconf.Store(t.KeyStore),
			TrustStore:       tlsconf.Store(t.TrustStore),
			ClientAuth:       t.ClientAuth,
			Protocol:         t.Protocol,
			EnabledProtocols: t.EnabledProtocols,
			CipherSuites:     t.CipherSuites,
			Logger:           log,
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "zkgo server: TLS: %v\n", err)
			return 1
		}
		opts.TLS, opts.SecureAddr, opts.PortUnification = tc, cfg.SecureClientAddr(), cfg.ClientPortUnification
		log.Info("TLS for clients", "secureClientAddr", opts.SecureAddr, "portUnification", opts.PortUnification,
			"keyStore", t.KeyStore.Location, "clientAuth", t.ClientAuth)
	}
	if len(cfg.SASLUsers) > 0 {
		log.Info("SASL DIGEST-MD5 authentication enabled", "jaasConfig", cfg.JAASConfigFile, "section", cfg.SASLSection, "users", len(cfg.SASLUsers))
	}
	if err := serverKerberos(cfg, &opts, log); err != nil {
		fmt.Fprintf(os.Stderr, "zkgo server: Kerberos: %v\n", err)
		return 1
	}
	if len(cfg.EnforceAuthSchemes) > 0 {
		log.Info("client authentication enforced", "schemes", cfg.EnforceAuthSchemes)
	}
	if qa.EnableSASL {
		log.Info("quorum SASL: ensemble members authenticate each other", "jaasConfig", cfg.JAASConfigFile,
			"learnerRequireSasl", qa.LearnerRequire, "serverRequireSasl", qa.ServerRequire,
			"learnerSection", qa.LearnerSection, "serverSection", qa.ServerSection, "serverUsers", len(qa.ServerUsers))
		if err := quorumKerberos(cfg, &opts, log); err != nil {
			fmt.Fprintf(os.Stderr, "zkgo server: quorum SASL with Kerberos: %v\n", err)
			return 1
		}
	}
	// A standalone server answers reconfig Unimplemented with
	// reconfigEnabled, ReconfigDisabled without, as ZooKeeper's does.
	opts.ReconfigEnabled = cfg.ReconfigEnabled
	if cfg.Distributed() {
		for _, sv := range cfg.Servers {
			p := server.Peer{
				ID:       sv.ID,
				Addr:     net.JoinHostPort(sv.Host, strconv.Itoa(sv.PeerPort)),
				Observer: sv.Role == config.Observer,
			}
			for _, a := range sv.Addrs[min(1, len(sv.Addrs)):] {
				p.More = append(p.More, net.JoinHostPort(a.Host, strconv.Itoa(a.PeerPort)))
			}
			opts.Peers = append(opts.Peers, p)
		}
		opts.PeerListenAll, opts.MultiAddress = cfg.QuorumListenOnAllIPs, cfg.MultiAddressEnabled
		opts.ConfigText = cfg.DynamicText()
		opts.ReadOnlyMode = cfg.ReadOnlyMode
		opts.SkipACL = cfg.SkipACL
		opts.DisableStandalone = !cfg.StandaloneEnabled
		if cfgPath := fs.Arg(0); cfgPath != "" {
			opts.OnConfigChange = func(text string, version int64) error {
				return writeDynamicConfig(cfgPath, text, version)
			}
		}
		log.Info("ensemble member", "myid", cfg.MyID, "members", len(cfg.Servers),
			"note", "peer traffic uses peerPort; electionPort is not used (raft elects over peerPort)")
		tick := server.RaftTickInterval(cfg.TickTime)
		log.Warn("initLimit and syncLimit are not used: raft's election timeout decides instead",
			"initLimit", cfg.InitLimit, "syncLimit", cfg.SyncLimit,
			"electionTimeout", time.Duration(raftnode.DefaultElectionTick)*tick, "note", "a follower that hears nothing from its leader for one election timeout drops its clients; a lagging or new member catches up by snapshot whatever its distance")
	}
	if *addr != "" {
		opts.Addr = *addr
	}
	switch *adminAddr {
	case "":
	case "off":
		opts.AdminAddr = ""
	default:
		opts.AdminAddr = *adminAddr
	}
	if opts.AdminAddr != "" && cfg.Admin.HTTPS() {
		tc, err := adminTLS(cfg, log)
		if err != nil {
			fmt.Fprintf(os.Stderr, "zkgo server: AdminServer HTTPS (admin.forceHttps, admin.portUnification): %v\n", err)
			return 1
		}
		opts.AdminTLS, opts.AdminPortUnification = tc, cfg.Admin.PortUnification && !cfg.Admin.ForceHTTPS
	}
	// Test-only fault injection; a no-op unless built with the zkgofaults
	// tag (faults_on.go).
	if err := installFaults(&opts, log); err != nil {
		fmt.Fprintf(os.Stderr, "zkgo server: %v\n", err)
		return 1
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "zkgo server: -cpuprofile: %v\n", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			fmt.Fprintf(os.Stderr, "zkgo server: -cpuprofile: %v\n", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				log.Error("writing the CPU profile", "file", *cpuProfile, "err", err)
			}
		}()
	}
	if *gcHeadroom > 0 && os.Getenv("GOGC") == "" {
		defer gctune.Start(uint64(*gcHeadroom) << 20).Stop()
	}
	if *memRatio > 0 && os.Getenv("GOMEMLIMIT") == "" {
		defer memlimit.Start(*memRatio, max(memoryFloor, uint64(max(*gcHeadroom, 0))<<20)).Stop()
	}
	// Install the handler before announcing the address, so a signal sent
	// as soon as the server is up is handled.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	// The restore command stops the server (server.ErrRestored) to
	// start it again from the snapshot it staged.
restart:
	srv, err := server.New(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo server: %v\n", err)
		return 1
	}
	if err := srv.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "zkgo server: start (client address %s): %v\n", opts.Addr, err)
		return 1
	}
	mode := "durable"
	if !srv.Durable() {
		mode = "in-memory only"
		log.Warn("IN-MEMORY ONLY: no dataDir; all znodes and sessions are lost when the server stops")
	} else if !cfg.ForceSync {
		log.Warn("forceSync=no: writes are acknowledged before they reach the disk; a machine crash may lose them")
	}
	log.Info("zkgo server started", "version", version, "config", source, "clientAddr", srv.Addr().String(), "secureClientAddr", srv.SecureAddr(), "adminAddr", srv.AdminAddr(),
		"tickTime", cfg.TickTime, "dataDir", cfg.DataDir, "dataLogDir", cfg.DataLogDir)
	role := "standalone"
	if cfg.Distributed() {
		role = fmt.Sprintf("ensemble member %d of %d", cfg.MyID, len(cfg.Servers))
	}
	fmt.Fprintf(os.Stdout, "zkgo %s listening on %s (%s, %s)\n", version, srv.Addr(), role, mode)

	var s os.Signal
	select {
	case s = <-sig:
	case <-srv.Done():
		// The server stopped on its own after a fatal error, which it
		// logged (a failed disk: which directory, which error). Exit
		// with a failure status so that a supervisor restarts the
		// member; it does not go on half alive.
		srv.Close() // returns once it has stopped
		if errors.Is(srv.Err(), server.ErrRestored) {
			log.Warn("starting again from the restored snapshot")
			goto restart
		}
		if srv.Err() != nil {
			log.Error("zkgo server stopped after the fatal error above; exiting with status 1")
		}
		return 1
	}
	log.Info("shutting down", "signal", s.String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	return 0
}

func optionsFromConfig(cfg *config.Config, log *slog.Logger) server.Options {
	words := make([]string, 0, len(cfg.FourLetterWords))
	for w, ok := range cfg.FourLetterWords {
		if ok {
			words = append(words, w)
		}
	}
	sort.Strings(words)
	myid := cfg.MyID
	if myid < 0 {
		myid = 0
	}
	metricsAddr := ""
	if cfg.Metrics.Enabled {
		metricsAddr = cfg.Metrics.Addr()
	}
	adminAddr := ""
	if cfg.Admin.Enabled {
		adminAddr = cfg.Admin.Addr()
	}
	var adminConsole server.ConsoleFactory
	if cfg.Admin.Console {
		adminConsole = console.ForServer(console.Config{RecipeRoots: cfg.Admin.ConsoleRecipeRoots, ReadOnly: cfg.Admin.ConsoleReadOnly, SuperDigest: cfg.SuperDigest})
	}
	// The admin port answers to zkgo.admin.allowedHosts and, besides the
	// local names the server adds, the host names of the ensemble's
	// members: operators reach a member by the name zoo.cfg gives it.
	adminHosts := slices.Clone(cfg.Admin.AllowedHosts)
	for _, sv := range cfg.Servers {
		adminHosts = append(adminHosts, sv.Host)
		if sv.ClientAddr != "" {
			adminHosts = append(adminHosts, sv.ClientAddr)
		}
	}
	if cfg.ClientPortAddress != "" {
		adminHosts = append(adminHosts, cfg.ClientPortAddress)
	}
	return server.Options{
		AdminConsole:                adminConsole,
		AdminAllowedHosts:           adminHosts,
		MetricsAddr:                 metricsAddr,
		AdminAddr:                   adminAddr,
		AdminCommandURL:             cfg.Admin.CommandURL,
		AdminIdleTimeout:            cfg.Admin.IdleTimeout,
		AdminPprof:                  cfg.Admin.Pprof,
		AdminSnapshot:               cfg.Admin.Snapshot,
		AdminRestore:                cfg.Admin.Restore,
		AdminRateLimit:              cfg.Admin.RateLimit,
		InitialConfig:               cfg.Text,
		Addr:                        cfg.ClientAddr(),
		TickTime:                    cfg.TickTime,
		MinSessionTimeout:           cfg.MinSessionTimeout,
		MaxSessionTimeout:           cfg.MaxSessionTimeout,
		MaxClientCnxns:              cfg.MaxClientCnxns,
		IdleAfter:                   cfg.ParkAfter,
		MaxConnections:              cfg.MaxCnxns,
		ConnectionThrottleTokens:    cfg.ConnectionThrottleTokens,
		ConnectionThrottleFillTime:  cfg.ConnectionThrottleFillTime,
		ConnectionThrottleFillCount: cfg.ConnectionThrottleFillCount,
		MaxBuffer:                   cfg.MaxBuffer,
		FourLetterWords:             words,
		ExtendedTypes:               cfg.ExtendedTypesEnabled,
		SuperDigest:                 cfg.SuperDigest,
		ServerID:                    myid,
		ContainerCheckInterval:      cfg.ContainerCheckInterval,
		MaxOutstanding:              min(cfg.GlobalOutstandingLimit, 1000),
		GlobalOutstanding:           cfg.GlobalOutstandingLimit,
		EnforceQuota:                true,
		DisableDigestAuth:           !cfg.DigestAuthEnabled,
		SASL:                        server.SASLOptions{Users: cfg.SASLUsers, SuperUser: cfg.SASLSuperUser, Provider: cfg.SASLProvider},
		EnforceAuthSchemes:          cfg.EnforceAuthSchemes,
		Audit:                       cfg.AuditEnabled,
		AuditFile:                   cfg.AuditPath(),
		X509SuperUser:               cfg.X509SuperUser,
		DataDir:                     cfg.DataDir,
		DataLogDir:                  cfg.DataLogDir,
		NoSync:                      !cfg.ForceSync,
		NoWALPrefill:                !cfg.WALPrefill,
		CommitDelay:                 cfg.CommitDelay,
		ExistsWithoutRead:           !cfg.ExistsCheckRead,
		SnapCount:                   cfg.SnapCount,
		SnapBytes:                   snapBytesOf(cfg.SnapSizeLimitKB),
		NoTreeDigest:                !cfg.DigestEnabled,
		SnapRetainCount:             cfg.AutopurgeSnapRetainCount,
		Logger:                      log,
		ConfigDump: func() []string {
			return []string{
				"clientPort=" + fmt.Sprint(cfg.ClientPort),
				"clientPortAddress=" + cfg.ClientAddr(),
				"dataDir=" + cfg.DataDir,
				"dataLogDir=" + cfg.DataLogDir,
				"tickTime=" + fmt.Sprint(cfg.TickTime.Milliseconds()),
				"maxClientCnxns=" + fmt.Sprint(cfg.MaxClientCnxns),
				"minSessionTimeout=" + fmt.Sprint(cfg.MinSessionTimeout.Milliseconds()),
				"maxSessionTimeout=" + fmt.Sprint(cfg.MaxSessionTimeout.Milliseconds()),
				"serverId=" + fmt.Sprint(myid),
				"4lw.commands.whitelist=" + strings.Join(words, ","),
			}
		},
	}
}

// newLogger returns the server's logger: slog's text handler (key=value)
// or its JSON handler (-log-format json), at the given level.
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("bad -log-format %q: text or json", format)
}

// snapBytesOf is zoo.cfg's snapSizeLimitInKb as server.Options.SnapBytes.
func snapBytesOf(kb int64) int64 {
	switch {
	case kb < 0:
		return -1
	case kb > math.MaxInt64>>10:
		return math.MaxInt64
	}
	return kb << 10
}

// adminTLS is the AdminServer's HTTPS configuration: the ssl.quorum.*
// stores, as ZooKeeper's JettyAdminServer reads them (QuorumX509Util),
// and its protocol settings. A client certificate is asked for when there
// is a trust store to verify it (required with admin.needClientAuth, as
// ZooKeeper 3.9); a verified one is the request's x509 identity.
func adminTLS(cfg *config.Config, log *slog.Logger) (*tls.Config, error) {
	q := cfg.SSLQuorumStores
	auth := "none"
	if q.TrustStore.Location != "" {
		auth = "want"
	}
	if cfg.Admin.NeedClientAuth {
		auth = "need"
	}
	tc, err := tlsconf.ServerConfig(tlsconf.Options{
		KeyStore: tlsconf.Store(q.KeyStore), TrustStore: tlsconf.Store(q.TrustStore), ClientAuth: auth,
		Protocol: q.Protocol, EnabledProtocols: q.EnabledProtocols, CipherSuites: q.CipherSuites, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	log.Info("AdminServer HTTPS", "forceHttps", cfg.Admin.ForceHTTPS, "portUnification", cfg.Admin.PortUnification && !cfg.Admin.ForceHTTPS,
		"keyStore", q.KeyStore.Location, "trustStore", q.TrustStore.Location, "clientAuth", auth)
	if !cfg.Admin.ForceHTTPS {
		log.Warn("admin.portUnification: the admin port also serves plain HTTP; set admin.forceHttps=true for HTTPS only")
	}
	return tc, nil
}
