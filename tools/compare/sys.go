package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
)

// fsyncStats is the latency of a 4 KiB write followed by fdatasync, in
// the directory where the servers keep their data: overwriting a
// preallocated file (what a write-ahead log with preallocated segments
// does: ZooKeeper's 64 MiB blocks, etcd's WAL segments) and appending to a
// growing file (which also makes the file system journal the new size).
type fsyncStats struct {
	N                         int
	OverwriteP50, Overwrite99 time.Duration
	AppendP50, AppendP99      time.Duration
}

func measureFsync(dir string, n int) (fsyncStats, error) {
	st := fsyncStats{N: n}
	f, err := os.CreateTemp(dir, "fsync-")
	if err != nil {
		return st, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i)
	}
	// Preallocate with real blocks, then measure overwrites.
	for i := 0; i < n; i++ {
		if _, err := f.Write(buf); err != nil {
			return st, err
		}
	}
	if err := f.Sync(); err != nil {
		return st, err
	}
	fd := int(f.Fd())
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := f.WriteAt(buf, int64(i)*4096); err != nil {
			return st, err
		}
		if err := syscall.Fdatasync(fd); err != nil {
			return st, err
		}
		lat = append(lat, time.Since(t0))
	}
	st.OverwriteP50, st.Overwrite99 = pct(lat, 50), pct(lat, 99)
	lat = lat[:0]
	end := int64(n) * 4096
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := f.WriteAt(buf, end+int64(i)*4096); err != nil {
			return st, err
		}
		if err := syscall.Fdatasync(fd); err != nil {
			return st, err
		}
		lat = append(lat, time.Since(t0))
	}
	st.AppendP50, st.AppendP99 = pct(lat, 50), pct(lat, 99)
	return st, nil
}

func pct(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// machine describes where the comparison ran.
type machine struct {
	CPU, Kernel, Memory, Filesystem string
	Cores                           int
	GoVersion, Java, Commit         string
	ZKPackage                       string // Debian package version
	EtcdPackage                     string // Debian package etcd-server's version
	EtcdClient                      string // version of go.etcd.io/etcd/client/v3 built in
}

func describeMachine(dataDir string) machine {
	m := machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(v), &kb)
				m.Memory = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if out, err := exec.Command("df", "-T", dataDir).Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) == 2 {
			f := strings.Fields(lines[1])
			if len(f) >= 2 {
				m.Filesystem = f[1] + " on " + f[0]
			}
		}
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) >= 2 {
			m.Java = strings.TrimSpace(lines[1])
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "zookeeper").Output(); err == nil {
		m.ZKPackage = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "etcd-server").Output(); err == nil {
		m.EtcdPackage = strings.TrimSpace(string(out))
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "go.etcd.io/etcd/client/v3" {
				m.EtcdClient = d.Version
			}
		}
	}
	// Read-only git queries: the commit the zkgo binary was built from.
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
			m.Commit += " with uncommitted changes"
		}
	}
	return m
}

// buildZkgo builds the zkgo binary from this module into dir.
func buildZkgo(dir string) (string, error) {
	bin := filepath.Join(dir, "zkgo")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/zkgo").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/zkgo: %v\n%s", err, out)
	}
	return bin, nil
}
