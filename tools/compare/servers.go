package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
)

// server is one of the two servers under test, run as a child process on a
// fixed loopback port with its data in dir. It can be stopped and started
// again on the same data (restart time).
type server struct {
	name    string // "zookeeper" or "zkgo"
	dir     string
	port    int
	argv    []string
	env     []string
	cmd     *exec.Cmd
	exited  chan struct{}
	version string
	// adminAddr is zkgo's AdminServer (host:port) when it has one.
	adminAddr string
}

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) dataDir() string { return filepath.Join(s.dir, "data") }

// common zoo.cfg keys: both servers standalone, durable (fsync before the
// reply), no limit on connections per client, no AdminServer (it would
// bind port 8080).
func zooCfg(dir string, port int, extra string) string {
	return fmt.Sprintf(`# written by tools/compare
tickTime=2000
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
maxSessionTimeout=60000
forceSync=yes
4lw.commands.whitelist=*
admin.enableServer=false
%s`, filepath.Join(dir, "data"), port, extra)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newServerDir makes a fresh directory under root with a zoo.cfg (plus
// extra lines) for a server on a free port.
func newServerDir(root, prefix, extra string) (dir string, port int, cfg string, err error) {
	if dir, err = os.MkdirTemp(root, prefix); err != nil {
		return "", 0, "", err
	}
	if port, err = freePort(); err != nil {
		return "", 0, "", err
	}
	cfg = filepath.Join(dir, "zoo.cfg")
	if err = os.WriteFile(cfg, []byte(zooCfg(dir, port, extra)), 0o644); err != nil {
		return "", 0, "", err
	}
	return dir, port, cfg, nil
}

// alternating is the order of the two servers in repeat rep (from 0):
// ZooKeeper first in even repeats, zkgo first in odd ones.
func alternating(rep int) []string {
	if rep%2 == 1 {
		return []string{"zkgo", "zookeeper"}
	}
	return []string{"zookeeper", "zkgo"}
}

// newZkgo prepares "zkgo server zoo.cfg" in a fresh directory.
func newZkgo(binary, root string) (*server, error) {
	dir, port, cfg, err := newServerDir(root, "zkgo-", "")
	if err != nil {
		return nil, err
	}
	return &server{name: "zkgo", dir: dir, port: port,
		argv: []string{binary, "server", "-log-level", "warn", cfg}}, nil
}

// ZooKeeper's JVM: a fixed heap (-Xms = -Xmx), the JVM's default collector
// (G1), full JIT (no -XX:TieredStopAtLevel), Debian's jars, logging at WARN
// through slf4j-simple to a file (zkgo logs at warn too).
func newZooKeeper(root, heap string) (*server, error) {
	dir, port, cfg, err := newServerDir(root, "zookeeper-", "")
	if err != nil {
		return nil, err
	}
	argv, err := zooKeeperArgv(dir, heap, "org.apache.zookeeper.server.ZooKeeperServerMain", cfg)
	if err != nil {
		return nil, err
	}
	return &server{name: "zookeeper", dir: dir, port: port, argv: argv}, nil
}

// zooKeeperArgv is the command line of a ZooKeeper JVM running mainClass
// (ZooKeeperServerMain standalone, QuorumPeerMain in an ensemble) on cfg,
// logging to dir/zookeeper.log.
func zooKeeperArgv(dir, heap, mainClass, cfg string) ([]string, error) {
	java, err := apachezk.FindJava()
	if err != nil {
		return nil, err
	}
	cp, err := apachezk.Classpath()
	if err != nil {
		return nil, err
	}
	return []string{java,
		"-Xms" + heap, "-Xmx" + heap,
		"-Djava.awt.headless=true",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.logFile=" + filepath.Join(dir, "zookeeper.log"),
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp,
		mainClass, cfg,
	}, nil
}

// launch starts the server's process without waiting for it to serve.
func (s *server) launch() error {
	if err := os.MkdirAll(s.dataDir(), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(s.dir, "console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	argv := s.argv
	if serverCPUs != "" {
		argv = append([]string{"taskset", "-c", serverCPUs}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), s.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()
	return nil
}

// start runs the server and waits until it serves (srvr answers with its
// mode). It returns the time from exec to serving.
func (s *server) start(timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	if err := s.launch(); err != nil {
		return 0, err
	}
	deadline := t0.Add(timeout)
	for {
		select {
		case <-s.exited:
			return 0, fmt.Errorf("%s exited during startup:\n%s", s.name, s.logTail())
		default:
		}
		if r, err := apachezk.FourLetterWord(s.addr(), "srvr", time.Second); err == nil && strings.Contains(r, "Mode:") {
			if v, ok := srvrVersion(r); ok {
				s.version = v
			}
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) {
			s.kill()
			return 0, fmt.Errorf("%s did not serve within %v:\n%s", s.name, timeout, s.logTail())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func srvrVersion(r string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(r))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Zookeeper version: "); ok {
			return v, true
		}
	}
	return "", false
}

// stop stops the server: SIGTERM (graceful) and a wait of up to a minute,
// then SIGKILL.
func (s *server) stop() error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.exited:
		return errors.New(s.name + " had exited")
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(time.Minute):
		s.kill()
		return errors.New(s.name + " did not stop within a minute of SIGTERM")
	}
}

// kill stops the server with SIGKILL.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
}

func (s *server) alive() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *server) logTail() string {
	var b strings.Builder
	for _, f := range []string{"console.log", "zookeeper.log"} {
		data, err := os.ReadFile(filepath.Join(s.dir, f))
		if err != nil {
			continue
		}
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", f, data)
	}
	return b.String()
}

// rssBytes reads the resident set size of pid from /proc.
func rssBytes(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, errors.New("no VmRSS")
}

// javaHeapUsed forces a full GC in the JVM (jcmd GC.run) and returns the
// used heap from GC.heap_info, or an error if jcmd is missing.
func javaHeapUsed(pid int) (int64, error) {
	jcmd, err := exec.LookPath("jcmd")
	if err != nil {
		return 0, err
	}
	p := strconv.Itoa(pid)
	if out, err := exec.Command(jcmd, p, "GC.run").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("jcmd GC.run: %v: %s", err, out)
	}
	out, err := exec.Command(jcmd, p, "GC.heap_info").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("jcmd GC.heap_info: %v: %s", err, out)
	}
	// " garbage-first heap   total 2097152K, used 123456K [...]"
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, " used "); i >= 0 && strings.Contains(line, "heap") {
			f := strings.Fields(line[i+6:])
			if len(f) > 0 {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSuffix(f[0], ","), "K"), 10, 64)
				if err == nil {
					return kb * 1024, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("jcmd GC.heap_info: no used heap in:\n%s", out)
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
