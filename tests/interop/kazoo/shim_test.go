//go:build linux

package kazoo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/tests/interop/kazoo"
)

// fakeZkgo stands in for the zkgo binary: it prints its arguments and the
// JVM flag variables.
const fakeZkgo = `#!/bin/sh
echo "args=$*"
echo "SERVER_JVMFLAGS=$SERVER_JVMFLAGS"
echo "JVMFLAGS=${JVMFLAGS-unset}"
`

// TestJavaShim: the shim turns the harness's java command line into
// "zkgo server CFG" with the -D flags in SERVER_JVMFLAGS, as zkgo's own
// parser reads them back, and refuses any other command line.
func TestJavaShim(t *testing.T) {
	dir := t.TempDir()
	zkgo := filepath.Join(dir, "zkgo")
	if err := os.WriteFile(zkgo, []byte(fakeZkgo), 0o755); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	java, err := kazoo.WriteJavaShim(dir, zkgo, logDir, false)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "tmpab12")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(work, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("clientPort=2181\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// As kazoo/testing/common.py builds it (plus a value with a space and
	// a quote, and JVM flags).
	props := []string{
		"-Dfile.encoding=UTF-8", "-Dreadonlymode.enabled=true",
		"-Djava.security.auth.login.config=" + work + "/jaas.conf",
		"-Dzookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
		"-Dodd=it's a value",
	}
	args := append([]string{"-cp", "a.jar:b.jar", "-Xmx512m", "-server"}, props...)
	args = append(args, kazoo.QuorumPeerMain, cfg)
	cmd := exec.Command(java, args...)
	cmd.Env = append(os.Environ(), "JVMFLAGS=-Dfrom.env=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shim: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(logDir, "tmpab12.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := string(data)
	if !strings.Contains(out, "\nargs=server "+cfg+"\n") || !strings.Contains(out, "\nJVMFLAGS=unset\n") {
		t.Fatalf("zkgo started as:\n%s", out)
	}
	_, flags, _ := strings.Cut(out, "\nSERVER_JVMFLAGS=")
	flags, _, _ = strings.Cut(flags, "\nJVMFLAGS=")
	var jvm config.JVM
	if err := jvm.AddFlags(flags, "SERVER_JVMFLAGS"); err != nil {
		t.Fatal(err)
	}
	if len(jvm.Flags) != 0 || len(jvm.Properties) != len(props) {
		t.Fatalf("SERVER_JVMFLAGS %q read back as %+v", flags, jvm)
	}
	for i, p := range jvm.Properties {
		if got := "-D" + p.Key + "=" + p.Value; got != props[i] {
			t.Errorf("property %d: %q, want %q", i, got, props[i])
		}
	}

	for _, bad := range [][]string{
		{"-version"},
		{"-cp", "x", "org.apache.zookeeper.server.ZooKeeperServerMain", cfg},
		{"-cp", "x", kazoo.QuorumPeerMain},
		{"-cp", "x", kazoo.QuorumPeerMain, cfg, "extra"},
		{"-cp", "x", kazoo.QuorumPeerMain, filepath.Join(work, "missing.cfg")},
		{"-jar", "zookeeper.jar", cfg},
		{"-cp"},
		{},
	} {
		out, err := exec.Command(java, bad...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "zkgo java shim:") {
			t.Errorf("java %q: %v, %s; want exit status 2 and a message", bad, err, out)
		}
	}

	if _, err := kazoo.WriteJavaShim(dir, "zkgo", logDir, false); err == nil {
		t.Error("a relative zkgo path was accepted")
	}
}

const sampleJUnit = `<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5" time="3.2">
<testcase classname="kazoo.tests.test_client.TestClient" name="test_ok" time="0.5"/>
<testcase classname="test_lock.TestSemaphore" name="test_bad" time="1.0"><failure message="AssertionError: assert 1 == 2&#10;more">trace</failure></testcase>
<testcase classname="kazoo.tests.test_paths" name="test_norm" time="0.001"><skipped type="pytest.skip" message="not here">skip</skipped></testcase>
<testcase classname="test_sasl.TestSASL" name="test_setup" time="0.1"><error message="failed on setup with &quot;Exception&quot;">x</error></testcase>
<testcase classname="test_sasl.TestSASL" name="test_both" time="0.1"><failure message="boom">x</failure><error message="teardown">y</error></testcase>
</testsuite></testsuites>`

func TestParseJUnit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, []byte(sampleJUnit), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := kazoo.ParseJUnit(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []kazoo.Result{
		{ID: "test_client.py::TestClient::test_ok", Outcome: kazoo.Passed, Seconds: 0.5},
		{ID: "test_lock.py::TestSemaphore::test_bad", Outcome: kazoo.Failed, Message: "AssertionError: assert 1 == 2", Seconds: 1},
		{ID: "test_paths.py::test_norm", Outcome: kazoo.Skipped, Message: "not here", Seconds: 0.001},
		{ID: "test_sasl.py::TestSASL::test_both", Outcome: kazoo.Failed, Message: "boom", Seconds: 0.1},
		{ID: "test_sasl.py::TestSASL::test_setup", Outcome: kazoo.Errored, Message: `failed on setup with "Exception"`, Seconds: 0.1},
	}
	if len(rs) != len(want) {
		t.Fatalf("got %+v", rs)
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("case %d: %+v, want %+v", i, rs[i], want[i])
		}
	}
	if got, want := kazoo.Count(rs).String(), "1 passed, 2 failed, 1 errors, 1 skipped"; got != want {
		t.Errorf("counts %q, want %q", got, want)
	}

	if err := os.WriteFile(path, []byte("<html/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kazoo.ParseJUnit(path); err == nil {
		t.Error("a non-JUnit file parsed")
	}
}
