// Package javaprog builds and starts small Java programs shipped as
// embedded sources: javac compiles them against jars of the Debian layout
// (/usr/share/java) into a temporary directory, once per process (Cache),
// and Program.Command starts one in a JVM. It is the part of what
// tests/interop/curator does for its test programs that code outside tests
// needs (tools/bench: lock -client curator runs Curator's
// InterProcessMutex in a JVM), and it does not import testing.
package javaprog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// JavaDir is where Debian installs Java libraries.
const JavaDir = "/usr/share/java"

// ErrNotInstalled is wrapped by the errors of Compile and Cache.Program
// when the JDK or a jar is missing; their message names what is missing
// and the Debian package that provides it.
var ErrNotInstalled = errors.New("not installed")

// Jar is a jar in JavaDir that a program is compiled and run with.
type Jar struct {
	File    string // file name in JavaDir, e.g. "curator-recipes.jar"
	Package string // Debian package that installs it, for error messages
}

// CuratorJars are Debian's Apache Curator 5 and ZooKeeper 3.8 client jars:
// a program using Curator's framework and recipes compiles and runs with
// them (their manifests' Class-Path entries bring in the remaining runtime
// dependencies, and guava bundles failureaccess). tools/bench's
// LockBench and tests/interop/curator's CuratorCheck both use this list.
var CuratorJars = []Jar{
	{File: "curator-recipes.jar", Package: "libcurator-recipes-java"},
	{File: "curator-framework.jar", Package: "libcurator-framework-java"},
	{File: "curator-client.jar", Package: "libcurator-client-java"},
	{File: "zookeeper.jar", Package: "libzookeeper-java"},
	{File: "zookeeper-jute.jar", Package: "libzookeeper-java"},
	{File: "guava.jar", Package: "libguava-java"},
	{File: "slf4j-api.jar", Package: "libslf4j-java"},
	{File: "slf4j-simple.jar", Package: "libslf4j-java"},
}

// Spec describes a program: its sources and the jars on its class path.
type Spec struct {
	// Sources maps file names (Foo.java) to their text.
	Sources map[string][]byte
	Jars    []Jar
}

// Program is a compiled program.
type Program struct {
	Java      string // the java executable
	Classpath string // the jars, then Dir
	Dir       string // the compiled classes
}

// missingError lists what is missing to build or run a program.
type missingError struct{ what []string }

func (m *missingError) Error() string { return "missing " + strings.Join(m.what, "; ") }

func (m *missingError) Unwrap() error { return ErrNotInstalled }

const jdkHint = "javac and java of a JDK (apt-get install default-jdk-headless, or set JAVA_HOME)"

// FindJDK returns javac and java: $JAVA_HOME/bin if it holds both, else
// the directory of the javac in PATH (symbolic links resolved, as with
// Debian's alternatives). The error wraps ErrNotInstalled.
func FindJDK() (javac, java string, err error) {
	var dirs []string
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		dirs = append(dirs, filepath.Join(jh, "bin"))
	}
	if p, err := exec.LookPath("javac"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(r))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		jc, j := filepath.Join(d, "javac"), filepath.Join(d, "java")
		if isFile(jc) && isFile(j) {
			return jc, j, nil
		}
	}
	return "", "", &missingError{[]string{jdkHint + ": javac not found in PATH or $JAVA_HOME/bin"}}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// check finds the JDK and the jars, and names everything missing in one
// error.
func (s *Spec) check() (javac, java string, jars []string, err error) {
	var missing []string
	javac, java, err = FindJDK()
	if err != nil {
		missing = append(missing, err.(*missingError).what...)
	}
	for _, j := range s.Jars {
		p := filepath.Join(JavaDir, j.File)
		if !isFile(p) {
			missing = append(missing, fmt.Sprintf("%s (apt-get install %s)", p, j.Package))
			continue
		}
		jars = append(jars, p)
	}
	if len(missing) > 0 {
		return "", "", nil, &missingError{missing}
	}
	return javac, java, jars, nil
}

// Compile writes the sources into dir and compiles them there. The error
// wraps ErrNotInstalled if the JDK or a jar is missing.
func Compile(dir string, s Spec) (*Program, error) {
	javac, java, jars, err := s.check()
	if err != nil {
		return nil, err
	}
	cp := strings.Join(jars, string(os.PathListSeparator))
	names := make([]string, 0, len(s.Sources))
	for n := range s.Sources {
		names = append(names, n)
	}
	sort.Strings(names)
	args := []string{"-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData",
		"-nowarn", "-encoding", "UTF-8", "-d", dir, "-cp", cp}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, s.Sources[n], 0o644); err != nil {
			return nil, err
		}
		args = append(args, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, javac, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("javac %s: %v\n%s", strings.Join(names, " "), err, out)
	}
	return &Program{Java: java, Classpath: cp + string(os.PathListSeparator) + dir, Dir: dir}, nil
}

// Command returns the command that runs class main of the program with
// the JVM options jvm and the program arguments args, in the program's
// directory. On Linux the JVM runs in a process group of its own (a
// terminal's Ctrl-C does not reach it) and the kernel kills it if the
// thread that started it ends (the Go process exits or dies). The caller
// sets its standard streams and starts it.
func (p *Program) Command(jvm []string, main string, args ...string) *exec.Cmd {
	a := append(append(append([]string(nil), jvm...), "-cp", p.Classpath, main), args...)
	cmd := exec.Command(p.Java, a...)
	cmd.Dir = p.Dir
	cmd.SysProcAttr = sysProcAttr()
	return cmd
}

// Cache compiles a Spec once per process into a temporary directory.
type Cache struct {
	Spec   Spec
	Prefix string // of the temporary directory's name

	mu   sync.Mutex
	prog *Program
	dir  string
}

// Program compiles the program on the first call (and after Cleanup) and
// returns it. A failure is not remembered: the next call tries again.
func (c *Cache) Program() (*Program, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prog != nil {
		return c.prog, nil
	}
	if _, _, _, err := c.Spec.check(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", c.Prefix)
	if err != nil {
		return nil, err
	}
	p, err := Compile(dir, c.Spec)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.prog, c.dir = p, dir
	return p, nil
}

// Cleanup removes the compiled classes; a later Program compiles again.
// Call it once the program's processes have ended.
func (c *Cache) Cleanup() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
	c.prog, c.dir = nil, ""
}
