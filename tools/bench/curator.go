package bench

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkgo/zkgo/tests/framework/javaprog"
)

// lock -client curator runs Apache Curator's InterProcessMutex: one JVM
// running LockBench.java, one CuratorFramework client (one session) per
// contender. The JVM runs the warm-up and the measured window itself and
// times each acquire with System.nanoTime; it streams the latencies, each
// marked with the phase it completed in, and ends with the window's
// length and totals. The streamed latencies feed the progress line; the
// result is the JVM's window (stats.setExternal).

//go:embed LockBench.java
var lockBenchSource []byte

// curatorJava is LockBench, compiled once per process with javac against
// Debian's Curator 5 and ZooKeeper jars (as tests/interop/curator does for its
// checks).
var curatorJava = &javaprog.Cache{
	Prefix: "zkgo-bench-java-",
	Spec: javaprog.Spec{
		Sources: map[string][]byte{"LockBench.java": lockBenchSource},
		Jars:    javaprog.CuratorJars,
	},
}

// curatorJVM is the JVM's options: a small heap, the serial collector, no
// hsperfdata file, Curator and ZooKeeper logging errors only (to stderr).
var curatorJVM = []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=error"}

// Cleanup removes the Java classes compiled for lock -client curator, if
// any. Call it when the process has no more runs to do.
func Cleanup() { curatorJava.Cleanup() }

// Bounds on the JVM's phases.
const (
	curatorReadyTimeout = 90 * time.Second // start, connect every client
	curatorStopTimeout  = 25 * time.Second // from ctx's end to the JVM's result (it waits 15 s for its contenders, 5 s for closing)
)

// curatorLock is a running LockBench JVM.
type curatorLock struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string   // stdout, closed at its end
	quit   chan struct{} // closed by stop: stdout's lines are dropped
	stderr *tailWriter
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
	// versions reported by the JVM: Java, Curator, the ZooKeeper client
	java, curator, zookeeper string

	stopOnce sync.Once
}

// startCuratorLock compiles LockBench if needed, starts the JVM and waits
// until its contenders are connected.
func startCuratorLock(ctx context.Context, cfg *Config, path string) (*curatorLock, error) {
	prog, err := curatorJava.Program()
	if err != nil {
		return nil, fmt.Errorf("-client curator needs Java and Apache Curator: %w", err)
	}
	cmd := prog.Command(curatorJVM, "LockBench",
		strings.Join(cfg.servers(), ","), path, strconv.Itoa(cfg.Contenders),
		strconv.FormatInt(int64(cfg.Warmup), 10), strconv.FormatInt(int64(cfg.Duration), 10),
		strconv.FormatInt(int64(cfg.Hold), 10), strconv.FormatInt(cfg.SessionTimeout.Milliseconds(), 10))
	j := &curatorLock{cmd: cmd, lines: make(chan string, 256), quit: make(chan struct{}), stderr: &tailWriter{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = j.stderr
	if j.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", prog.Java, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			select {
			case j.lines <- sc.Text():
			case <-j.quit:
			}
		}
		io.Copy(io.Discard, stdout) // after a line too long, so that the JVM does not block
		close(j.lines)
		// Wait closes stdout: only once all of it was read.
		j.err = cmd.Wait()
		close(j.exited)
	}()
	t := time.NewTimer(curatorReadyTimeout)
	defer t.Stop()
	for {
		select {
		case line, ok := <-j.lines:
			if !ok {
				j.stop()
				return nil, fmt.Errorf("curator JVM exited before it was ready: %v%s", j.err, j.tail())
			}
			if v, ok := strings.CutPrefix(line, "ready "); ok {
				f := append(strings.Fields(v), "?", "?", "?")
				j.java, j.curator, j.zookeeper = f[0], f[1], f[2]
				return j, nil
			}
			if msg, ok := strings.CutPrefix(line, "fail "); ok {
				j.stop()
				return nil, fmt.Errorf("curator JVM: %s%s", msg, j.tail())
			}
		case <-t.C:
			j.stop()
			return nil, fmt.Errorf("curator JVM not ready (contenders connected) within %v%s", curatorReadyTimeout, j.tail())
		case <-ctx.Done():
			j.stop()
			return nil, ctx.Err()
		}
	}
}

// run starts the JVM's warm-up and window, records the streamed
// latencies into acquire (the progress line) and, once the JVM reports
// its end, its measured window as the result. The JVM ends its window by
// itself; when ctx ends more than a moment before that (the run was cut
// short), the JVM is told to end it now (its stdin closes). It is killed
// if it does not report within curatorStopTimeout of ctx's end.
func (j *curatorLock) run(ctx context.Context, e *env, acquire *series) error {
	if _, err := io.WriteString(j.stdin, "go\n"); err != nil {
		return fmt.Errorf("curator JVM: %v%s", err, j.tail())
	}
	natural := time.Now().Add(e.cfg.Warmup + e.cfg.Duration)
	measured := newHist()
	var errs, viol int64
	var firstErr, stuck string
	done := ctx.Done()
	var nudge, overrun <-chan time.Time
	for {
		select {
		case <-done:
			done = nil
			// Cut short: the JVM ends its window now. At the end of the
			// run, the JVM's own timer ends it within moments of the
			// runner's; it is told to end a second later.
			var in time.Duration
			if left := time.Until(natural); left < 100*time.Millisecond {
				in = max(left, 0) + time.Second
			}
			n := time.NewTimer(in)
			defer n.Stop()
			nudge = n.C
			t := time.NewTimer(curatorStopTimeout)
			defer t.Stop()
			overrun = t.C
			continue
		case <-nudge:
			nudge = nil
			j.stdin.Close()
			continue
		case <-overrun:
			j.stop()
			return fmt.Errorf("curator JVM gave no result within %v of the end; killed%s", curatorStopTimeout, j.tail())
		case line, ok := <-j.lines:
			if !ok {
				<-j.exited
				return fmt.Errorf("curator JVM exited without a result (%v)%s", j.err, j.tail())
			}
			kind, rest, _ := strings.Cut(line, " ")
			switch kind {
			case "lat":
				phase, vals, _ := strings.Cut(rest, " ")
				for _, f := range strings.Fields(vals) {
					ns, err := strconv.ParseInt(f, 10, 64)
					if err != nil {
						j.stop()
						return fmt.Errorf("curator JVM: bad line %.80q", line)
					}
					acquire.record(time.Duration(ns))
					if phase == "m" {
						measured.RecordValue(min(max(ns, histLow), histHigh))
					}
				}
			case "err":
				f := strings.SplitN(rest, " ", 3)
				var n int64
				err := errBadLine
				if len(f) >= 2 {
					n, err = strconv.ParseInt(f[1], 10, 64)
				}
				if err != nil {
					j.stop()
					return fmt.Errorf("curator JVM: bad line %.80q", line)
				}
				for range n {
					acquire.fail()
				}
				if f[0] == "m" {
					errs += n
					if firstErr == "" && len(f) == 3 {
						firstErr = f[2]
					}
				}
			case "viol":
				n, err := strconv.ParseInt(rest, 10, 64)
				if err != nil {
					j.stop()
					return fmt.Errorf("curator JVM: bad line %.80q", line)
				}
				viol += n
				for range n {
					acquire.fail()
				}
			case "stuck":
				stuck = rest
			case "fail":
				j.stop()
				return fmt.Errorf("curator JVM: %s%s", rest, j.tail())
			case "end":
				var window, handoffs, endErrs, endViol int64
				if _, err := fmt.Sscan(rest, &window, &handoffs, &endErrs, &endViol); err != nil {
					j.stop()
					return fmt.Errorf("curator JVM: bad line %q", line)
				}
				j.stop()
				if handoffs != measured.TotalCount() || endErrs != errs || endViol != viol {
					return fmt.Errorf("curator JVM: its totals (%d handoffs, %d errors, %d violations) differ from the lines it sent (%d, %d, %d)",
						handoffs, endErrs, endViol, measured.TotalCount(), errs, viol)
				}
				if stuck != "" {
					return fmt.Errorf("curator JVM: %s contenders did not stop within 15 s of the window's end", stuck)
				}
				e.st.setExternal(acquire, measured, errs+viol, time.Duration(window))
				e.notes = append(e.notes, fmt.Sprintf("Apache Curator %s's InterProcessMutex (ZooKeeper client %s, Java %s), one JVM (%s), one session per contender; the JVM times each acquire (System.nanoTime) over its own window",
					j.curator, j.zookeeper, j.java, strings.Join(curatorJVM[:2], " ")))
				if viol > 0 {
					e.notes = append(e.notes, fmt.Sprintf("%d mutual-exclusion violations (counted as errors): an acquire found another contender holding the lock", viol))
				}
				if firstErr != "" {
					e.notes = append(e.notes, "first Curator error: "+firstErr)
				}
				return nil
			}
		}
	}
}

var errBadLine = errors.New("bad line")

// stop ends the JVM: stdin closed, a few seconds to exit, then killed.
func (j *curatorLock) stop() {
	j.stopOnce.Do(func() {
		close(j.quit)
		j.stdin.Close()
		select {
		case <-j.exited:
			return
		case <-time.After(10 * time.Second):
		}
		j.cmd.Process.Kill()
		<-j.exited
	})
}

// tail returns the end of the JVM's stderr, for error messages.
func (j *curatorLock) tail() string {
	s := strings.TrimSpace(j.stderr.String())
	if s == "" {
		return ""
	}
	return "\n--- curator JVM stderr (end) ---\n" + s
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
