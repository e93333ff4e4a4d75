package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/zktest"
)

// The bench tests run the built binary against an in-process zkgo server for
// a fraction of a second per workload; the real measurements are made by
// tools/compare (see docs/BENCHMARKS.md).

func runBenchCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, append([]string{"bench"}, args...)...)
}

// runCommand runs "zkgo args..." and returns its output and exit status.
func runCommand(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestBenchJSON(t *testing.T) {
	srv := zktest.Start(t)
	out, errOut, code := runBenchCmd(t, "-server", srv.Addr(), "-connections", "2", "-workers", "4",
		"get", "-keys", "10", "-duration", "1200ms", "-warmup", "100ms", "-json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var res struct {
		Workload  string             `json:"workload"`
		Ops       int64              `json:"ops"`
		OpsPerSec float64            `json:"ops_per_s"`
		Errors    int64              `json:"errors"`
		Latency   map[string]float64 `json:"latency_ms"`
		Params    map[string]any     `json:"params"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Workload != "get" || res.Ops == 0 || res.OpsPerSec <= 0 || res.Errors != 0 {
		t.Errorf("result %+v", res)
	}
	for _, k := range []string{"p50", "p99", "p99_9", "max"} {
		if _, ok := res.Latency[k]; !ok {
			t.Errorf("latency lacks %s: %v", k, res.Latency)
		}
	}
	if res.Params["keys"] != float64(10) {
		t.Errorf("params %v", res.Params)
	}
	// The progress line, once a second, on stderr.
	if !strings.Contains(errOut, "requests/s") || !strings.Contains(errOut, "p99") {
		t.Errorf("no progress line on stderr:\n%s", errOut)
	}
}

// -cpuprofile writes a profile, and a file it cannot
// create is a usage error.
func TestBenchCPUProfile(t *testing.T) {
	srv := zktest.Start(t)
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	_, errOut, code := runBenchCmd(t, "-server", srv.Addr(), "-connections", "1", "-workers", "2", "-quiet",
		"-cpuprofile", prof, "get", "-duration", "300ms", "-warmup", "0s")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A pprof profile is a gzipped protocol buffer.
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not gzipped: %v", err)
	}
	if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
		t.Fatalf("the profile holds %d bytes: %v", len(b), err)
	}
	_, errOut, code = runBenchCmd(t, "-server", srv.Addr(), "-cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "p"), "get")
	if code != 2 || !strings.Contains(errOut, "-cpuprofile") {
		t.Errorf("exit %d, stderr %q; want 2 and a message naming -cpuprofile", code, errOut)
	}
}

func TestBenchEveryWorkload(t *testing.T) {
	srv := zktest.Start(t)
	for _, args := range [][]string{
		{"get"}, {"set", "-size", "0"}, {"create", "-mode", "ephemeral-sequential"}, {"delete", "-count", "2000"},
		{"children", "-children", "50"}, {"multi", "-multi-ops", "3"}, {"mixed", "-ratio", "2"},
		{"watch", "-watchers", "10"}, {"sessions"}, {"sessions", "-mode", "idle", "-sessions", "20"},
		{"lock", "-contenders", "3"}, {"latch"}, {"selector", "-participants", "2"},
		{"get", "-client", "gozk"}, {"set", "-client", "zk", "-rate", "500"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			full := append([]string{"-server", srv.Addr(), "-quiet", "-connections", "2", "-workers", "4"}, args...)
			full = append(full, "-duration", "200ms", "-warmup", "0s", "-timeout", "10s")
			out, errOut, code := runBenchCmd(t, full...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			if !strings.Contains(out, "p99.9") || !strings.Contains(out, ", 0 errors)") {
				t.Errorf("output:\n%s", out)
			}
		})
	}
}

func TestBenchUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-help"}, 0, "selector"},
		{nil, 2, "missing WORKLOAD"},
		{[]string{"nope"}, 2, "unknown workload"},
		{[]string{"get", "extra"}, 2, "unexpected arguments"},
		{[]string{"get", "-mode", "idle"}, 2, "-mode is only for"},
		{[]string{"lock", "-rate", "100"}, 2, "-rate is only for"},
		{[]string{"latch", "-client", "gozk"}, 2, "only for get, set, mixed and lock"},
		{[]string{"get", "-timeout", "soon"}, 2, "-timeout"},
		{[]string{"get", "-workers", "0"}, 2, "-workers must be positive"},
		{[]string{"-server", "127.0.0.1:1", "get", "-duration", "1s"}, 1, "connect to 127.0.0.1:1"},
	} {
		_, errOut, code := runBenchCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("zkgo bench %q: exit %d, want %d with %q; stderr:\n%s", c.args, code, c.code, c.want, errOut)
		}
	}
}
