//go:build linux

package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "SUPERVISE_TEST_HELPER"

func TestMain(m *testing.M) {
	RunWatchdogIfChild()
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helper())
	}
	os.Exit(m.Run())
}

// helper is a supervisor that starts a child with a background grandchild,
// prints "pids CHILD GRANDCHILD" and then waits to be killed.
func helper() int {
	r, w, err := os.Pipe()
	if err != nil {
		return 1
	}
	cmd := exec.Command("sh", "-c", `sleep 100 & echo "$$ $!"; wait`)
	cmd.Stdout = w
	c, err := Start(cmd, Options{Watchdog: true})
	w.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	line, _ := bufio.NewReader(r).ReadString('\n')
	fmt.Printf("pids %s", line)
	return c.Wait()
}

// gone reports whether pid has exited (a zombie counts as gone: it runs no
// more code; our init may not reap it at once).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z' || b[i+2] == 'X'
	}
	return false
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %v", pid, within)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not synchronising
	}
}

func readPids(t *testing.T, r *bufio.Reader) (child, grandchild int) {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading pids: %v (%q)", err, line)
	}
	if _, err := fmt.Sscanf(strings.TrimPrefix(line, "pids "), "%d %d", &child, &grandchild); err != nil {
		t.Fatalf("bad pid line %q: %v", line, err)
	}
	return child, grandchild
}

func TestStopReachesGrandchildren(t *testing.T) {
	for _, wd := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchdog=%v", wd), func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// The shell ignores TERM only in the grandchild: Stop must
			// escalate to SIGKILL for it after the child has exited.
			cmd := exec.Command("sh", "-c", `(trap '' TERM; exec sleep 100) & echo "$$ $!"; wait`)
			cmd.Stdout = w
			c, err := Start(cmd, Options{Watchdog: wd})
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			child, grand := readPids(t, bufio.NewReader(r))
			if c.Pid() != child {
				t.Fatalf("Pid %d, shell says %d", c.Pid(), child)
			}
			if pg, _ := syscall.Getpgid(grand); pg != c.Pgid() || pg == syscall.Getpgrp() {
				t.Fatalf("grandchild in group %d, child group %d, ours %d", pg, c.Pgid(), syscall.Getpgrp())
			}
			c.Stop(time.Second)
			if st := c.Wait(); st != 128+int(syscall.SIGTERM) {
				t.Fatalf("status %d, want %d", st, 128+int(syscall.SIGTERM))
			}
			waitGone(t, grand, 5*time.Second)
		})
	}
}

func TestStopEscalates(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("sh", "-c", `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	cmd.Stdout = w
	c, err := Start(cmd, Options{Watchdog: true})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if !c.Stop(100 * time.Millisecond) {
		t.Fatal("Stop did not need SIGKILL for a child that ignores TERM")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Stop took %v", d)
	}
	if st := c.Wait(); st != 128+int(syscall.SIGKILL) {
		t.Fatalf("status %d", st)
	}
}

func TestExitStatus(t *testing.T) {
	c, err := Start(exec.Command("sh", "-c", "exit 7"), Options{Watchdog: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Wait(); st != 7 {
		t.Fatalf("status %d, want 7", st)
	}
	if _, err := Start(exec.Command("/nonexistent/command"), Options{Watchdog: true}); err == nil {
		t.Fatal("starting a missing command succeeded")
	}
}

// TestSupervisorKilled kills a supervisor with SIGKILL: its child dies by
// the parent-death signal, the grandchild by the watchdog.
func TestSupervisorKilled(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child, grand := readPids(t, bufio.NewReader(out))
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, child, 5*time.Second)
	waitGone(t, grand, 5*time.Second)
}
