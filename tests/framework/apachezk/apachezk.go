// Package apachezk starts a real Apache ZooKeeper 3.8 server (a standalone
// JVM running org.apache.zookeeper.server.ZooKeeperServerMain) for
// differential and interoperability tests.
//
// It is meant to be used once per test package from TestMain:
//
//	var (
//		apache   *apachezk.Server
//		apacheErr error
//	)
//
//	func TestMain(m *testing.M) {
//		apache, apacheErr = apachezk.Start(apachezk.Options{})
//		if apacheErr != nil {
//			fmt.Fprintln(os.Stderr, apachezk.SkipMessage(apacheErr))
//		}
//		code := m.Run()
//		if apache != nil {
//			apache.Stop()
//		}
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		apachezk.SkipIfUnavailable(t, apacheErr)
//		conn := dial(apache.Addr())
//		...
//	}
//
// The installation is found in the Debian layout (package "zookeeper":
// jars in /usr/share/java). The environment variable
// ZKGO_APACHE_ZK_CLASSPATH replaces the computed class path entirely (it
// must then contain ZooKeeper, its dependencies and an SLF4J binding).
package apachezk

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrNotInstalled is returned (wrapped, test with errors.Is) by Start when
// Java or the Apache ZooKeeper jars cannot be found.
var ErrNotInstalled = errors.New("Apache ZooKeeper 3.8 not installed (apt-get install zookeeper)")

// JavaDir is where Debian installs Java libraries.
const JavaDir = "/usr/share/java"

// ClasspathEnv names the environment variable that overrides the class path
// used to run the server.
const ClasspathEnv = "ZKGO_APACHE_ZK_CLASSPATH"

// RequireEnv names an environment variable; when it is "1",
// SkipIfUnavailable fails the test instead of skipping it.
const RequireEnv = "ZKGO_REQUIRE_APACHE_ZK"

// AdminJars are the jars, relative to JavaDir, that the AdminServer needs
// beyond those zookeeper.jar's manifest names (Options.AdminServer).
var AdminJars = []string{"servlet-api.jar"}

// serverJars are the jars put on the class path, relative to JavaDir.
// zookeeper.jar's manifest Class-Path pulls in the remaining runtime
// dependencies (netty, commons-cli, metrics, snappy, jetty, ...), exactly as
// Debian's zkEnv.sh relies on (its CLASSPATH is only
// /etc/zookeeper/conf:/usr/share/java/zookeeper.jar). slf4j-simple is added
// as the logging binding so that the server log can be sent to a file.
var serverJars = []string{
	"zookeeper.jar",
	"zookeeper-jute.jar",
	"slf4j-api.jar",
	"slf4j-simple.jar",
}

// Options configures the server. The zero value is usable.
type Options struct {
	// TickTime is ZooKeeper's tickTime. Default 100ms.
	TickTime time.Duration
	// MinSessionTimeout is minSessionTimeout. Zero means ZooKeeper's default
	// (2 * TickTime).
	MinSessionTimeout time.Duration
	// MaxSessionTimeout is maxSessionTimeout. Zero means 60s (ZooKeeper's
	// own default, 20 * TickTime, would be only 2s with the 100ms default
	// tick and would silently shorten every client's session). Negative
	// means ZooKeeper's default.
	MaxSessionTimeout time.Duration
	// ExtendedTypes enables TTL nodes (-Dzookeeper.extendedTypesEnabled=true).
	ExtendedTypes bool
	// ContainerCheckInterval is how often container and TTL nodes are
	// checked for deletion (-Dznode.container.checkIntervalMs). Default
	// 100ms; negative means ZooKeeper's default (60s).
	ContainerCheckInterval time.Duration
	// SuperDigest, if set, is the "user:base64digest" of the super user
	// (-Dzookeeper.DigestAuthenticationProvider.superDigest). See the
	// SuperDigest function.
	SuperDigest string
	// ExtraConfig adds or overrides zoo.cfg entries.
	ExtraConfig map[string]string
	// SystemProperties adds -Dkey=value JVM arguments.
	SystemProperties map[string]string
	// ExtraJVMArgs are added to the JVM command line before the class name.
	ExtraJVMArgs []string
	// LogLevel is the slf4j-simple level of the server log file (trace,
	// debug, info, warn, error). Default "info".
	LogLevel string
	// StartTimeout bounds the wait for the server to serve. Default 60s.
	StartTimeout time.Duration
	// Java is the java executable. Default: $JAVA_HOME/bin/java, then
	// "java" from PATH.
	Java string
	// ExtraClasspath adds jars after the server's own (for example the
	// Netty jars a TLS client port needs: see NettyJars).
	ExtraClasspath []string
	// SecureClientPort also opens a TLS client port (secureClientPort) on
	// a second free port of 127.0.0.1; SecureAddr returns it. The ssl.*
	// keys and serverCnxnFactory come from ExtraConfig/SystemProperties.
	SecureClientPort bool
	// DataDir, if set, is used as dataDir instead of a fresh directory:
	// the server starts from what it holds (snapshots and logs in
	// DataDir/version-2), and Stop leaves it in place, so a test can read
	// what the server wrote after stopping it.
	DataDir string
	// AdminServer enables ZooKeeper's AdminServer (Jetty) on a free port
	// of 127.0.0.1, which AdminAddr returns; otherwise it is off
	// (admin.enableServer=false). Debian's zookeeper.jar names the Jetty
	// jars in its manifest but not the servlet API, which is added from
	// AdminJars.
	AdminServer bool
	// QuorumOfOne runs the server as a one-member quorum peer
	// (QuorumPeerMain, standaloneEnabled=false, server.1 on two more free
	// ports) instead of a standalone server: what dynamic reconfiguration
	// needs. Set reconfigEnabled in ExtraConfig.
	QuorumOfOne bool
}

// Server is a running Apache ZooKeeper server.
type Server struct {
	addr       string
	port       int
	secureAddr string // "" unless Options.SecureClientPort
	adminAddr  string // "" unless Options.AdminServer
	dir        string
	logPath    string
	outPath    string
	version    string
	cmd        *exec.Cmd

	exited  chan struct{} // closed when the process has been reaped
	waitErr error         // valid after exited is closed

	stopOnce   sync.Once
	stopErr    error
	terminated atomic.Bool // Terminate stopped the process on purpose
}

// FindJava returns the java executable to use, or an error wrapping
// ErrNotInstalled.
func FindJava() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		p := filepath.Join(jh, "bin", "java")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java not found in PATH", ErrNotInstalled)
	}
	return p, nil
}

// Classpath returns the class path used to run the server: the value of
// ZKGO_APACHE_ZK_CLASSPATH if set, else the Debian jars. The error wraps
// ErrNotInstalled if a jar is missing.
func Classpath() (string, error) {
	if cp := os.Getenv(ClasspathEnv); cp != "" {
		return cp, nil
	}
	var parts []string
	for _, j := range serverJars {
		p := filepath.Join(JavaDir, j)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s missing", ErrNotInstalled, p)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, string(os.PathListSeparator)), nil
}

// SkipMessage returns the line to print (or to pass to t.Skip) when Start
// failed with err.
func SkipMessage(err error) string {
	if errors.Is(err, ErrNotInstalled) {
		return "skipping: " + err.Error()
	}
	return fmt.Sprintf("failed to start Apache ZooKeeper: %v", err)
}

// TB is the subset of testing.TB used by SkipIfUnavailable.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
}

// SkipIfUnavailable skips the test if startErr wraps ErrNotInstalled (or
// fails it if ZKGO_REQUIRE_APACHE_ZK=1), and fails it for any other
// non-nil error.
func SkipIfUnavailable(t TB, startErr error) {
	t.Helper()
	if startErr == nil {
		return
	}
	if errors.Is(startErr, ErrNotInstalled) && os.Getenv(RequireEnv) != "1" {
		t.Skip(SkipMessage(startErr))
	}
	t.Fatal(SkipMessage(startErr))
}

// SuperDigest returns the "user:digest" string ZooKeeper's digest
// authentication provider expects for user and password, suitable for
// Options.SuperDigest.
func SuperDigest(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

const maxBindAttempts = 5

// Start starts a standalone Apache ZooKeeper server on a free port of
// 127.0.0.1 in a fresh temporary directory and waits until it serves
// clients. If Java or the jars are missing the error wraps ErrNotInstalled.
func Start(opts Options) (*Server, error) {
	java := opts.Java
	if java == "" {
		var err error
		if java, err = FindJava(); err != nil {
			return nil, err
		}
	}
	cp, err := Classpath()
	if err != nil {
		return nil, err
	}
	for _, j := range opts.ExtraClasspath {
		cp += string(os.PathListSeparator) + j
	}
	if opts.AdminServer && os.Getenv(ClasspathEnv) == "" {
		for _, j := range AdminJars {
			p := filepath.Join(JavaDir, j)
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("%w: %s missing (the AdminServer needs it; apt-get install libservlet-api-java)", ErrNotInstalled, p)
			}
			cp += string(os.PathListSeparator) + p
		}
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	dir, err := os.MkdirTemp("", "apachezk-")
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(opts.StartTimeout)
	var lastErr error
	for attempt := 0; attempt < maxBindAttempts; attempt++ {
		s, err := startOnce(java, cp, dir, opts, deadline)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errPortInUse) || time.Now().After(deadline) {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

var errPortInUse = errors.New("client port already in use")

func startOnce(java, cp, dir string, opts Options, deadline time.Time) (*Server, error) {
	dataDir := filepath.Join(dir, "data")
	if opts.DataDir != "" {
		dataDir = opts.DataDir
	} else if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := configFile(opts, dataDir, port)
	var securePort int
	if opts.SecureClientPort {
		if securePort, err = freePort(); err != nil {
			return nil, err
		}
		cfg += fmt.Sprintf("secureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n", securePort)
	}
	var adminPort int
	if opts.AdminServer {
		// A port taken meanwhile makes ZooKeeper exit with a
		// BindException, which Start retries like the client port.
		if adminPort, err = freePort(); err != nil {
			return nil, err
		}
		cfg = strings.Replace(cfg, "admin.enableServer=false\n",
			fmt.Sprintf("admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=%d\n", adminPort), 1)
	}
	main := "org.apache.zookeeper.server.ZooKeeperServerMain"
	if opts.QuorumOfOne {
		peer, err := freePort()
		if err != nil {
			return nil, err
		}
		election, err := freePort()
		if err != nil {
			return nil, err
		}
		cfg += fmt.Sprintf("standaloneEnabled=false\nserver.1=127.0.0.1:%d:%d:participant;127.0.0.1:%d\n", peer, election, port)
		if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte("1\n"), 0o644); err != nil {
			return nil, err
		}
		main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	s := &Server{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		port:    port,
		dir:     dir,
		logPath: filepath.Join(dir, "zookeeper.log"),
		outPath: filepath.Join(dir, "console.log"),
		exited:  make(chan struct{}),
	}
	if securePort != 0 {
		s.secureAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(securePort))
	}
	if adminPort != 0 {
		s.adminAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(adminPort))
	}
	os.Remove(s.logPath)
	out, err := os.Create(s.outPath)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own descriptor

	args := jvmArgs(opts, cp, s.logPath)
	args = append(args, main, cfgPath)
	cmd := exec.Command(java, args...)
	cmd.Dir = dir
	cmd.Stdin = nil
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("apachezk: starting %s: %w", java, err)
	}
	s.cmd = cmd
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	if err := s.waitServing(deadline); err != nil {
		s.kill()
		tail := s.LogTail()
		if errors.Is(err, errPortInUse) || strings.Contains(tail, "Address already in use") || strings.Contains(tail, "BindException") {
			return nil, fmt.Errorf("%w (port %d)", errPortInUse, port)
		}
		return nil, fmt.Errorf("apachezk: %v\n%s", err, tail)
	}
	return s, nil
}

func configFile(opts Options, dataDir string, port int) string {
	tick := opts.TickTime
	if tick <= 0 {
		tick = 100 * time.Millisecond
	}
	cfg := map[string]string{
		"tickTime":               strconv.FormatInt(tick.Milliseconds(), 10),
		"dataDir":                dataDir,
		"clientPort":             strconv.Itoa(port),
		"clientPortAddress":      "127.0.0.1",
		"maxClientCnxns":         "0",
		"4lw.commands.whitelist": "*",
		"admin.enableServer":     "false",
		"forceSync":              "no",
		"initLimit":              "10",
		"syncLimit":              "5",
	}
	if opts.MinSessionTimeout > 0 {
		cfg["minSessionTimeout"] = strconv.FormatInt(opts.MinSessionTimeout.Milliseconds(), 10)
	}
	switch {
	case opts.MaxSessionTimeout == 0:
		cfg["maxSessionTimeout"] = "60000"
	case opts.MaxSessionTimeout > 0:
		cfg["maxSessionTimeout"] = strconv.FormatInt(opts.MaxSessionTimeout.Milliseconds(), 10)
	}
	if opts.QuorumOfOne {
		// The client port is in the server.1 line (dynamic config).
		delete(cfg, "clientPort")
		delete(cfg, "clientPortAddress")
	}
	for k, v := range opts.ExtraConfig {
		cfg[k] = v
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by github.com/zkgo/zkgo/tests/framework/apachezk\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, cfg[k])
	}
	return b.String()
}

func jvmArgs(opts Options, cp, logPath string) []string {
	level := opts.LogLevel
	if level == "" {
		level = "info"
	}
	props := map[string]string{
		// Logging: slf4j-simple to a file (ignored if a custom class path
		// brings another binding).
		"org.slf4j.simpleLogger.logFile":         logPath,
		"org.slf4j.simpleLogger.defaultLogLevel": level,
		"org.slf4j.simpleLogger.showDateTime":    "true",
		"org.slf4j.simpleLogger.dateTimeFormat":  "HH:mm:ss.SSS",
		// No log4j on the class path: don't probe for it.
		"zookeeper.jmx.log4j.disable": "true",
		// The transaction log is preallocated in 64MB blocks by default.
		"zookeeper.preAllocSize": "1024",
	}
	cci := opts.ContainerCheckInterval
	if cci == 0 {
		cci = 100 * time.Millisecond
	}
	if cci > 0 {
		ms := cci.Milliseconds()
		if ms < 1 {
			ms = 1
		}
		props["znode.container.checkIntervalMs"] = strconv.FormatInt(ms, 10)
	}
	if opts.ExtendedTypes {
		props["zookeeper.extendedTypesEnabled"] = "true"
	}
	if opts.SuperDigest != "" {
		props["zookeeper.DigestAuthenticationProvider.superDigest"] = opts.SuperDigest
	}
	for k, v := range opts.SystemProperties {
		props[k] = v
	}
	args := []string{
		"-Xmx256m",
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1",
		"-XX:-UsePerfData",
		"-Djava.awt.headless=true",
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-D"+k+"="+props[k])
	}
	args = append(args, opts.ExtraJVMArgs...)
	args = append(args, "-cp", cp)
	return args
}

// freePort asks the kernel for a free port on 127.0.0.1. Another process may
// take it before the server binds it; Start retries in that case.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitServing polls the four-letter words until the server reports that it
// serves requests, the process exits, or the deadline passes.
func (s *Server) waitServing(deadline time.Time) error {
	interval := 20 * time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	overall := time.NewTimer(time.Until(deadline))
	defer overall.Stop()
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("server process exited during startup: %v", s.waitErr)
		case <-overall.C:
			return errors.New("timed out waiting for the server to serve")
		case <-timer.C:
		}
		if r, err := FourLetterWord(s.addr, "ruok", time.Second); err == nil && r == "imok" {
			// ruok is answered as soon as the listener is up, which is
			// slightly before the server accepts sessions; srvr tells.
			if r, err := FourLetterWord(s.addr, "srvr", time.Second); err == nil && strings.Contains(r, "Mode:") {
				s.version = parseVersion(r)
				// Make sure it is our JVM that answers and not another
				// server that grabbed the port first: its working
				// directory is ours.
				if !s.answersFromOurDir() {
					return errPortInUse
				}
				return nil
			}
		}
		timer.Reset(interval)
		if interval < 100*time.Millisecond {
			interval += 10 * time.Millisecond
		}
	}
}

func (s *Server) answersFromOurDir() bool {
	want := s.dir
	if d, err := filepath.EvalSymlinks(want); err == nil {
		want = d
	}
	r, err := FourLetterWord(s.addr, "envi", 2*time.Second)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(r, "\n") {
		if v, ok := strings.CutPrefix(line, "user.dir="); ok {
			return strings.TrimSpace(v) == want || strings.TrimSpace(v) == s.dir
		}
	}
	return false
}

func parseVersion(srvr string) string {
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Zookeeper version: "); ok {
			return v
		}
	}
	return ""
}

// FourLetterWord sends a four-letter-word command (ruok, srvr, stat, mntr,
// cons, dump, wchc, ...) to the server at addr and returns its whole
// response.
func FourLetterWord(addr, cmd string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), err
	}
	return string(b), nil
}

// Addr returns the client address, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Port returns the client port.
func (s *Server) Port() int { return s.port }

// AdminAddr returns the AdminServer's "127.0.0.1:port", or "" without
// Options.AdminServer.
func (s *Server) AdminAddr() string { return s.adminAddr }

// SecureAddr returns the TLS client address ("127.0.0.1:port"), or "" when
// Options.SecureClientPort was not set.
func (s *Server) SecureAddr() string { return s.secureAddr }

// NettyJarNames are the jars (in JavaDir) ZooKeeper's Netty socket needs on
// either side (NettyServerCnxnFactory, ClientCnxnSocketNetty: what TLS
// uses); Debian's zookeeper.jar does not name them.
var NettyJarNames = []string{
	"netty-handler.jar", "netty-transport.jar", "netty-buffer.jar", "netty-common.jar",
	"netty-codec.jar", "netty-resolver.jar", "netty-transport-native-epoll.jar",
	"netty-transport-native-unix-common.jar",
}

// NettyJars returns the paths of NettyJarNames, or an error wrapping
// ErrNotInstalled naming the first one missing (apt-get install
// libnetty-java).
func NettyJars() ([]string, error) {
	var out []string
	for _, j := range NettyJarNames {
		p := filepath.Join(JavaDir, j)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%w: %s missing (libnetty-java)", ErrNotInstalled, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Dir returns the server's temporary directory (zoo.cfg, data/, logs).
func (s *Server) Dir() string { return s.dir }

// Version returns the version line reported by the server, e.g.
// "3.8.0-11+deb12u2-..., built on ...".
func (s *Server) Version() string { return s.version }

// FourLetterWord sends a four-letter-word command to the server.
func (s *Server) FourLetterWord(cmd string) (string, error) {
	return FourLetterWord(s.addr, cmd, 5*time.Second)
}

// Exited is closed when the server process has exited (after Stop, or if
// it died).
func (s *Server) Exited() <-chan struct{} { return s.exited }

func (s *Server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
	}
}

// Stop kills the server process (there is no graceful shutdown: tests do not
// exercise Apache's durability), waits for it and removes its temporary
// directory. It reports an error if the server had died on its own before
// Stop was called. Stop may be called more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		var died error
		select {
		case <-s.exited:
			if !s.terminated.Load() {
				died = fmt.Errorf("apachezk: server had exited before Stop: %v\n%s", s.waitErr, s.LogTail())
			}
		default:
		}
		s.kill()
		err := os.RemoveAll(s.dir)
		s.stopErr = errors.Join(died, err)
	})
	return s.stopErr
}

// Terminate shuts the server down as a service manager does (SIGTERM: the
// JVM runs its shutdown hooks) and waits up to timeout for the process to
// exit. The server's directory (and Options.DataDir) stay until Stop,
// which then reports no error for the exit.
func (s *Server) Terminate(timeout time.Duration) error {
	s.terminated.Store(true)
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("apachezk: no process")
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		select {
		case <-s.exited:
			return nil
		default:
		}
		return err
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("apachezk: server still running %v after SIGTERM", timeout)
	}
}

// LogTail returns the last lines of the server log and of the JVM's console
// output, for failure messages.
func (s *Server) LogTail() string {
	var b strings.Builder
	if t := tailFile(s.logPath, 60, 16<<10); t != "" {
		fmt.Fprintf(&b, "--- tail of %s ---\n%s", s.logPath, t)
	}
	if t := tailFile(s.outPath, 30, 8<<10); t != "" {
		fmt.Fprintf(&b, "--- tail of %s ---\n%s", s.outPath, t)
	}
	if b.Len() == 0 {
		return "(no server output)"
	}
	return b.String()
}

func tailFile(path string, lines, maxBytes int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - int64(maxBytes)
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	buf = buf[:n]
	if off > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	ls := strings.SplitAfter(string(buf), "\n")
	if len(ls) > 0 && ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	out := strings.Join(ls, "")
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out
}

// MainCommand returns the java executable and the arguments that run
// Apache ZooKeeper's QuorumPeerMain on the zoo.cfg at cfgPath, as
// zkServer.sh does (a configuration without server lines runs
// standalone), logging to logPath. For tests that start the process
// themselves (in a network namespace of their own, with a hosts file of
// their own): the deployment harness.
// jvmFlags (-Dzookeeper.multiAddress.enabled=true, say) come before the
// class name, as SERVER_JVMFLAGS does.
func MainCommand(cfgPath, logPath string, jvmFlags ...string) (java string, args []string, err error) {
	java, err = FindJava()
	if err != nil {
		return "", nil, err
	}
	cp, err := Classpath()
	if err != nil {
		return "", nil, err
	}
	args = jvmArgs(Options{ExtraJVMArgs: jvmFlags}, cp, logPath)
	return java, append(args, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath), nil
}

// CLICommand returns the java executable and the arguments that run
// Apache ZooKeeper's command line client (zkCli.sh's ZooKeeperMain) with
// args, for tests that run it themselves (in a network namespace).
func CLICommand(args ...string) (java string, argv []string, err error) {
	java, err = FindJava()
	if err != nil {
		return "", nil, err
	}
	cp, err := Classpath()
	if err != nil {
		return "", nil, err
	}
	argv = []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "org.apache.zookeeper.ZooKeeperMain"}
	return java, append(argv, args...), nil
}
