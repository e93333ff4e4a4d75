package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// zkServerSh runs packaging/zkServer.sh with sh and returns its stdout,
// stderr and exit status.
func zkServerSh(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "packaging", "zkServer.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", append([]string{script}, args...)...)
	cmd.Env = serverEnv(env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// The zkServer.sh wrapper against the built binary: print-cmd, start,
// status (Mode: standalone), stop, and ZooKeeper's messages and exit
// statuses when there is nothing to stop or no configuration.
func TestZkServerSh(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh to run packaging/zkServer.sh with")
	}
	dir := t.TempDir()
	conf, data, logs := filepath.Join(dir, "conf"), filepath.Join(dir, "data"), filepath.Join(dir, "logs")
	os.Mkdir(conf, 0o755)
	cfg := dropinConfig(t, conf, "")
	// dataDir in its own directory, which the script creates.
	text, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(text), "dataDir="+conf, "dataDir="+data, 1)), 0o644)
	os.WriteFile(filepath.Join(conf, "java.env"), []byte("export SERVER_JVMFLAGS=\"-Dzookeeper.4lw.commands.whitelist=ruok,srvr\"\n"), 0o644)
	env := []string{"ZOOCFGDIR=" + conf, "ZKGO_BIN=" + binary, "ZOO_LOG_DIR=" + logs}
	pidFile := filepath.Join(data, "zookeeper_server.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	out, errOut, code := zkServerSh(t, env, "print-cmd")
	want := `SERVER_JVMFLAGS="-Dzookeeper.4lw.commands.whitelist=ruok,srvr" JVMFLAGS="" "` + binary + `" server -java-env off "` + cfg + `" > "` + logs + "/zookeeper-"
	if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(errOut, "Using config: "+cfg) {
		t.Fatalf("print-cmd: %d\n%s\nwant %s\nstderr: %s", code, out, want, errOut)
	}
	other := filepath.Join(dir, "other.cfg")
	if out, _, _ := zkServerSh(t, env, "print-cmd", other); !strings.Contains(out, `"`+other+`"`) {
		t.Fatalf("print-cmd with a configuration path: %s", out)
	}
	if out, _, _ := zkServerSh(t, []string{"ZKGO_BIN=" + binary}, "--config", conf, "print-cmd", "zoo.cfg"); !strings.Contains(out, `"`+cfg+`"`) {
		t.Fatalf("print-cmd with --config: %s", out)
	}

	out, errOut, code = zkServerSh(t, env, "start")
	if code != 0 || out != "Starting zookeeper ... STARTED\n" {
		t.Fatalf("start: %d %q\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(pidFile); err != nil || strings.ContainsAny(string(b), "\n ") {
		t.Fatalf("pid file %q: %v", b, err)
	}
	if out, _, code := zkServerSh(t, env, "start"); code != 1 || !strings.Contains(out, "already running as process") {
		t.Fatalf("second start: %d %q", code, out)
	}
	// status, once the server listens.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _, code = zkServerSh(t, env, "status")
		if code == 0 || time.Now().After(deadline) {
			break
		}
	}
	if code != 0 || !strings.HasSuffix(out, "Client SSL: false.\nMode: standalone\n") {
		outFile, _ := filepath.Glob(filepath.Join(logs, "*.out"))
		var serverOut []byte
		if len(outFile) > 0 {
			serverOut, _ = os.ReadFile(outFile[0])
		}
		t.Fatalf("status: %d %q\nserver output:\n%s", code, out, serverOut)
	}
	// java.env's -D flags reached the server.
	port := strings.TrimPrefix(strings.SplitN(out, ".", 2)[0], "Client port found: ")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ans, err := zk.FourLetterWord(ctx, "127.0.0.1:"+port, "ruok"); err != nil || ans != "imok" {
		t.Fatalf("ruok on port %s: %q %v", port, ans, err)
	}

	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(string(b))
	out, _, code = zkServerSh(t, env, "stop")
	if code != 0 || out != "Stopping zookeeper ... STOPPED\n" {
		t.Fatalf("stop: %d %q", code, out)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("pid file left after stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("process %d still runs after stop", pid)
	}
	out, _, code = zkServerSh(t, env, "status")
	if code != 1 || !strings.HasSuffix(out, "Error contacting service. It is probably not running.\n") {
		t.Fatalf("status when stopped: %d %q", code, out)
	}
	out, _, code = zkServerSh(t, env, "stop")
	if code != 0 || out != "Stopping zookeeper ... no zookeeper to stop (could not find file "+pidFile+")\n" {
		t.Fatalf("stop when stopped: %d %q", code, out)
	}

	// No configuration: zkServer.sh's messages and statuses.
	missing := filepath.Join(dir, "missing")
	out, _, code = zkServerSh(t, []string{"ZKGO_BIN=" + binary, "ZOO_LOG_DIR=" + logs}, "--config", missing, "status")
	if code != 1 || !strings.HasSuffix(out, "Unable to find either secure or unsecure client port in any configs. Terminating.\n") {
		t.Fatalf("status without a configuration: %d %q", code, out)
	}
	out, _, code = zkServerSh(t, []string{"ZKGO_BIN=" + binary, "ZOO_LOG_DIR=" + logs, "ZOOPIDFILE=" + filepath.Join(dir, "run", "zk.pid")}, "--config", missing, "start")
	if code != 1 || out != "Starting zookeeper ... FAILED TO START\n" {
		t.Fatalf("start without a configuration: %d %q", code, out)
	}
	if out, _, code := zkServerSh(t, env, "bogus"); code != 0 || out != "" {
		t.Fatalf("unknown command: %d %q", code, out)
	}
}
