// Package curator runs CuratorCheck.java, a set of Apache Curator 5 recipe
// scenarios (leader latch, leader selector, mutex, read-write lock,
// CuratorCache, plain CRUD and transactions), against any
// ZooKeeper-compatible server, to check interoperability with the Java
// client stack. SaslCheck.java (RunSASLCheck) does the same for SASL
// DIGEST-MD5 with a plain ZooKeeper client and a JAAS "Client" section;
// CuratorSaslCheck.java (RunCuratorSASLCheck) for SASL with Curator itself
// (tests/interop/kerberos runs it with Kerberos).
//
// The programs are compiled with javac against the Debian packages
// libcurator-{client,framework,recipes}-java and libzookeeper-java (jars in
// /usr/share/java), once per test process, into a temporary directory.
//
// Typical use from a test:
//
//	func TestCuratorAgainstSomething(t *testing.T) {
//		curator.RunCuratorCheck(t, "127.0.0.1:2181", "/curator-check")
//	}
//
// and, in TestMain, call curator.Cleanup() after m.Run() to remove the
// compiled classes.
package curator

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/framework/javaprog"
)

//go:embed CuratorCheck.java
var checkSource []byte

//go:embed RecipePeer.java
var peerSource []byte

//go:embed CoordPeer.java
var coordSource []byte

//go:embed CachePeer.java
var cachePeerSource []byte

//go:embed SaslCheck.java
var saslSource []byte

//go:embed TlsCheck.java
var tlsSource []byte

//go:embed CuratorSaslCheck.java
var curatorSASLSource []byte

//go:embed DiscoveryPeer.java
var discoveryPeerSource []byte

// DiscoveryJars are the jars (in JavaDir) DiscoveryPeer needs beyond Jars:
// curator-x-discovery (Debian libcurator-discovery-java) and the Jackson
// its JSON serializer uses. Without them RecipePeer runs without its
// disc-* commands and the discovery tests skip.
var DiscoveryJars = []string{
	"curator-x-discovery.jar",
	"jackson-databind.jar",
	"jackson-core.jar",
	"jackson-annotations.jar",
}

// NettyJars are the jars (in JavaDir) the Java client needs for TLS (its
// Netty socket); Debian's zookeeper.jar does not name them.
var NettyJars = apachezk.NettyJarNames

// JavaDir is where Debian installs Java libraries.
const JavaDir = "/usr/share/java"

// Jars are the jars (in JavaDir) CuratorCheck is compiled and run with:
// javaprog.CuratorJars, the list tools/bench's LockBench uses too.
var Jars = func() []string {
	names := make([]string, len(javaprog.CuratorJars))
	for i, j := range javaprog.CuratorJars {
		names[i] = j.File
	}
	return names
}()

// ErrNotInstalled is returned (wrapped) when javac, java or a jar is missing.
var ErrNotInstalled = errors.New("Curator 5 / ZooKeeper 3.8 Java libraries or JDK not installed " +
	"(apt-get install libcurator-recipes-java zookeeper default-jdk-headless)")

// Timeout bounds one run of the check program (it has its own, shorter,
// internal watchdog).
const Timeout = 5 * time.Minute

// Checker is a compiled CuratorCheck program.
type Checker struct {
	java      string
	classpath string // jars + compiled classes
	dir       string
	// discovery is why DiscoveryPeer was not compiled ("" if it was).
	discovery string
}

// Compile writes CuratorCheck.java into dir and compiles it there. The error
// wraps ErrNotInstalled if the JDK or a jar is missing.
func Compile(dir string) (*Checker, error) {
	javac, java, err := findJDK()
	if err != nil {
		return nil, err
	}
	var jars []string
	for _, j := range Jars {
		p := filepath.Join(JavaDir, j)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%w: %s missing", ErrNotInstalled, p)
		}
		jars = append(jars, p)
	}
	jarPath := strings.Join(jars, string(os.PathListSeparator))
	sources := []struct {
		name string
		text []byte
	}{
		{"CuratorCheck.java", checkSource},
		{"RecipePeer.java", peerSource},
		{"CoordPeer.java", coordSource},
		{"CachePeer.java", cachePeerSource},
		{"SaslCheck.java", saslSource},
		{"TlsCheck.java", tlsSource},
		{"CuratorSaslCheck.java", curatorSASLSource},
	}
	var srcs []string
	for _, s := range sources {
		p := filepath.Join(dir, s.name)
		if err := os.WriteFile(p, s.text, 0o644); err != nil {
			return nil, err
		}
		srcs = append(srcs, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, javac, append([]string{
		"-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData",
		"-nowarn", "-encoding", "UTF-8", "-d", dir, "-cp", jarPath}, srcs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("javac %s: %v\n%s", strings.Join(srcs, " "), err, out)
	}
	c := &Checker{
		java:      java,
		classpath: jarPath + string(os.PathListSeparator) + dir,
		dir:       dir,
	}
	c.discovery = c.compileDiscovery(ctx, javac, jarPath)
	return c, nil
}

// compileDiscovery compiles DiscoveryPeer.java into the checker's
// directory if curator-x-discovery is installed, adding its jars to the
// classpath. It returns why it did not ("" if it did).
func (c *Checker) compileDiscovery(ctx context.Context, javac, jarPath string) string {
	var jars []string
	for _, j := range DiscoveryJars {
		p := filepath.Join(JavaDir, j)
		if _, err := os.Stat(p); err != nil {
			return p + " missing (apt-get install libcurator-discovery-java)"
		}
		jars = append(jars, p)
	}
	extra := strings.Join(jars, string(os.PathListSeparator))
	src := filepath.Join(c.dir, "DiscoveryPeer.java")
	if err := os.WriteFile(src, discoveryPeerSource, 0o644); err != nil {
		return err.Error()
	}
	cmd := exec.CommandContext(ctx, javac,
		"-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData",
		"-nowarn", "-encoding", "UTF-8", "-d", c.dir, "-cp", jarPath+string(os.PathListSeparator)+extra+string(os.PathListSeparator)+c.dir, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("javac DiscoveryPeer.java: %v\n%s", err, out)
	}
	c.classpath += string(os.PathListSeparator) + extra
	return ""
}

// SkipIfNoDiscovery skips the test when DiscoveryPeer could not be
// compiled (curator-x-discovery missing), unless ZKGO_REQUIRE_APACHE_ZK=1,
// which fails it. Call it after StartPeer or RunCuratorCheck compiled.
func SkipIfNoDiscovery(t testing.TB) {
	t.Helper()
	c := sharedOrSkip(t)
	if c.discovery == "" {
		return
	}
	if os.Getenv("ZKGO_REQUIRE_APACHE_ZK") == "1" {
		t.Fatal("DiscoveryPeer: " + c.discovery)
	}
	t.Skip("skipping: DiscoveryPeer: " + c.discovery)
}

// findJDK is javaprog.FindJDK with this package's ErrNotInstalled.
func findJDK() (javac, java string, err error) {
	javac, java, err = javaprog.FindJDK()
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	return javac, java, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Run runs the check against the server at connectString, using root (an
// absolute path that should not exist yet; it is deleted afterwards) for all
// its nodes. It returns the program's combined output; err is non-nil unless
// every scenario passed.
func (c *Checker) Run(ctx context.Context, connectString, root string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.java,
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-cp", c.classpath, "CuratorCheck", connectString, root)
	cmd.Dir = c.dir
	cmd.SysProcAttr = sysProcAttr()
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	s := out.String()
	if err != nil {
		if ctx.Err() != nil {
			return s, fmt.Errorf("CuratorCheck killed after %v: %w", Timeout, ctx.Err())
		}
		return s, fmt.Errorf("CuratorCheck: %w", err)
	}
	if !strings.Contains(s, "\nALL PASS\n") && !strings.HasPrefix(s, "ALL PASS\n") {
		return s, errors.New("CuratorCheck exited 0 without printing ALL PASS")
	}
	return s, nil
}

var (
	sharedOnce    sync.Once
	sharedDir     string
	shared        *Checker
	sharedErr     error
	sharedCompile time.Duration
)

// Shared compiles the check program once per process into a temporary
// directory (removed by Cleanup) and returns it.
func Shared() (*Checker, error) {
	sharedOnce.Do(compileShared)
	return shared, sharedErr
}

func compileShared() {
	sharedDir, sharedErr = os.MkdirTemp("", "curator-check-")
	if sharedErr != nil {
		return
	}
	start := time.Now()
	shared, sharedErr = Compile(sharedDir)
	sharedCompile = time.Since(start)
}

// Cleanup removes the directory created by Shared, if any. Call it from
// TestMain after m.Run.
func Cleanup() {
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
}

// RunCuratorCheck compiles (once) and runs the Curator check against the
// ZooKeeper-compatible server at connectString under root. It skips the test
// if the JDK or the Curator jars are missing (fails instead if
// ZKGO_REQUIRE_APACHE_ZK=1), and fails it with the program's output if any
// scenario fails. Passing scenarios are logged (visible with -v).
func RunCuratorCheck(t testing.TB, connectString, root string) {
	t.Helper()
	compiledNow := false
	sharedOnce.Do(func() {
		compileShared()
		compiledNow = true
	})
	c, err := shared, sharedErr
	if err == nil && compiledNow {
		t.Logf("compiled CuratorCheck.java in %v", sharedCompile.Round(time.Millisecond))
	}
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && os.Getenv("ZKGO_REQUIRE_APACHE_ZK") != "1" {
			t.Skip("skipping: " + err.Error())
		}
		t.Fatal(err)
	}
	start := time.Now()
	out, err := c.Run(context.Background(), connectString, root)
	if err != nil {
		t.Fatalf("Curator check against %s failed after %v: %v\n--- CuratorCheck output ---\n%s",
			connectString, time.Since(start).Round(time.Millisecond), err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		t.Log(line)
	}
	t.Logf("Curator check against %s passed in %v", connectString, time.Since(start).Round(time.Millisecond))
}

// Peer is a running RecipePeer: a Curator process the test drives one
// command at a time.
type Peer struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	dead chan struct{}
}

// sharedOrSkip returns the shared Curator setup, skipping the test when
// Java or the jars are missing (unless ZKGO_REQUIRE_APACHE_ZK=1).
func sharedOrSkip(t testing.TB) *Checker {
	t.Helper()
	c, err := Shared()
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && os.Getenv("ZKGO_REQUIRE_APACHE_ZK") != "1" {
			t.Skip("skipping: " + err.Error())
		}
		t.Fatal(err)
	}
	return c
}

// StartPeer compiles (once) and starts a RecipePeer connected to
// connectString. It skips the test when Java or the Curator jars are
// missing (unless ZKGO_REQUIRE_APACHE_ZK=1). opts are RecipePeer's options
// after the connection string ("session-policy"). The peer is stopped
// when the test ends.
func StartPeer(t testing.TB, connectString string, opts ...string) *Peer {
	t.Helper()
	c := sharedOrSkip(t)
	cmd := exec.Command(c.java, append([]string{
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
		"-cp", c.classpath, "RecipePeer", connectString}, opts...)...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Peer{cmd: cmd, in: in, out: bufio.NewScanner(outPipe), dead: make(chan struct{})}
	go func() { cmd.Wait(); close(p.dead) }()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-p.dead:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-p.dead
		}
	})
	if got := p.read(t); got != "READY" {
		t.Fatalf("RecipePeer: %s", got)
	}
	return p
}

func (p *Peer) read(t testing.TB) string {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		if p.out.Scan() {
			line <- p.out.Text()
		} else {
			line <- "ERR peer exited"
		}
	}()
	select {
	case l := <-line:
		return l
	case <-time.After(60 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("RecipePeer did not answer within 60s")
		return ""
	}
}

// Do sends one command and returns the peer's answer.
func (p *Peer) Do(t testing.TB, format string, args ...any) string {
	t.Helper()
	if _, err := fmt.Fprintf(p.in, format+"\n", args...); err != nil {
		t.Fatalf("RecipePeer: %v", err)
	}
	return p.read(t)
}

// Want sends a command and fails the test unless the answer is want.
func (p *Peer) Want(t testing.TB, want, format string, args ...any) {
	t.Helper()
	if got := p.Do(t, format, args...); got != want {
		t.Fatalf("RecipePeer %q: got %q, want %q", fmt.Sprintf(format, args...), got, want)
	}
}

// RunSASLCheck runs SaslCheck.java, a plain ZooKeeper Java client whose JAAS
// "Client" section (DigestLoginModule) holds user and password, against
// connectString. With wantOK it must authenticate with SASL DIGEST-MD5,
// find sasl:<user> in whoAmI and create path with the ACL sasl:<user>:cdrwa
// (left in place); otherwise it must end in AUTH_FAILED. It skips like
// RunCuratorCheck when Java or the jars are missing.
func RunSASLCheck(t testing.TB, connectString, user, password, path string, wantOK bool) {
	t.Helper()
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	text := fmt.Sprintf("Client {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n    username=\"%s\"\n    password=\"%s\";\n};\n",
		q.Replace(user), q.Replace(password))
	RunSASLCheckJAAS(t, connectString, text, nil, user, path, wantOK)
}

// RunSASLCheckJAAS is RunSASLCheck with the client's JAAS file text (its
// "Client" section: DigestLoginModule, or Krb5LoginModule for Kerberos)
// and more JVM flags (-Djava.security.krb5.conf=...); user is the sasl id
// the server must give the client. It returns SaslCheck's PASS line.
func RunSASLCheckJAAS(t testing.TB, connectString, jaasText string, jvmFlags []string, user, path string, wantOK bool) string {
	t.Helper()
	expect := "authfailed"
	if wantOK {
		expect = "ok"
	}
	return runWithJAAS(t, jaasText, jvmFlags, "PASS "+expect, "SaslCheck", connectString, path, user, expect)
}

// RunCuratorSASLCheck runs CuratorSaslCheck.java: CuratorFramework, its
// JAAS file text jaasText (a "Client" section and an otherSection, each
// Krb5LoginModule or DigestLoginModule) and more JVM flags
// (-Djava.security.krb5.conf=...). The "Client" client must authenticate
// as sasl:<user>, create path through an ACLProvider with the ACL
// sasl:<user>:cdrwa and read it back; the otherSection client must
// authenticate as sasl:<otherUser> and get NoAuth reading path, which is
// deleted. It returns the program's PASS line and skips like
// RunCuratorCheck when Java or the jars are missing.
func RunCuratorSASLCheck(t testing.TB, connectString, jaasText string, jvmFlags []string, path, user, otherSection, otherUser string) string {
	t.Helper()
	return runWithJAAS(t, jaasText, jvmFlags, "PASS curator", "CuratorSaslCheck", connectString, path, user, otherSection, otherUser)
}

// runWithJAAS runs the compiled class main with args, the JAAS file text
// jaasText (-Djava.security.auth.login.config) and more JVM flags. It
// fails the test unless the program exits 0 with a line starting with
// pass, and returns the last such line.
func runWithJAAS(t testing.TB, jaasText string, jvmFlags []string, pass, main string, args ...string) string {
	t.Helper()
	c := sharedOrSkip(t)
	jaas := filepath.Join(t.TempDir(), "client-jaas.conf")
	if err := os.WriteFile(jaas, []byte(jaasText), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Djava.security.auth.login.config=" + jaas}
	argv = append(argv, jvmFlags...)
	argv = append(argv, "-cp", c.classpath, main)
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, c.java, argv...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = sysProcAttr()
	out, err := cmd.CombinedOutput()
	var line string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, pass) {
			t.Log(l)
			line = l
		}
	}
	if err != nil || line == "" {
		t.Fatalf("%s %s (want %q): %v\n--- output ---\n%s", main, strings.Join(args, " "), pass, err, out)
	}
	return line
}

// RunTLSCheck runs TlsCheck.java: the ZooKeeper Java client, then Curator,
// over TLS (Netty socket, ZKClientConfig) to connectString with the key
// and trust stores given (storeType PEM, PKCS12 or JKS). whoAmI must show
// x509:<subject>, path is created with CREATOR_ALL_ACL (left in place)
// and a Curator mutex is taken and released. It skips like
// RunCuratorCheck when Java, the jars or Netty are missing.
func RunTLSCheck(t testing.TB, connectString, path, keyStore, trustStore, storeType, password, subject string) {
	t.Helper()
	c := sharedOrSkip(t)
	cp := c.classpath
	for _, j := range NettyJars {
		p := filepath.Join(JavaDir, j)
		if !isFile(p) {
			t.Skipf("%s missing (apt-get install libnetty-java): the Java client needs Netty for TLS", p)
		}
		cp += string(os.PathListSeparator) + p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.java,
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, "TlsCheck", connectString, path, keyStore, trustStore, storeType, password, subject)
	cmd.Dir = c.dir
	cmd.SysProcAttr = sysProcAttr()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS TLS") {
		t.Fatalf("TlsCheck %s as %s: %v\n--- output ---\n%s", connectString, subject, err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
