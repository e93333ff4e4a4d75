package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/zk"
)

// A tree's whole trip, with the real Apache ZooKeeper 3.8 (one JVM at a
// time): ZooKeeper writes it; zkgo server refuses ZooKeeper's data dir
// and names zkgo import; zkgo import -verify takes it in place, beside
// ZooKeeper's files; zkgo server serves it (sequential names continue)
// and takes writes; zkgo export writes a snapshot Apache ZooKeeper starts
// from and serves, zkgo's writes included; zkgo snapshot status reads
// that file and zkgo snapshot restore makes a new zkgo directory of it.
func TestMigrateWithApacheZooKeeper(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zkDir := t.TempDir()
	startZK := func(dir string) *apachezk.Server {
		t.Helper()
		s, err := apachezk.Start(apachezk.Options{
			DataDir:           dir,
			ExtendedTypes:     true,
			ExtraConfig:       map[string]string{"snapCount": "20"},
			ExtraJVMArgs:      []string{"-Xmx96m"},
			MaxSessionTimeout: 30 * time.Second,
		})
		apachezk.SkipIfUnavailable(t, err)
		return s
	}
	connect := func(addr string) *zk.Conn {
		t.Helper()
		c, err := zk.Connect(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	acl := []zk.ACL{{Perms: zk.PermRead, ID: zk.Id{Scheme: "world", ID: "anyone"}}}

	// 1. Apache ZooKeeper writes: nodes, binary data, an ACL, a
	// sequence with deletions, a container, snapshots and logs.
	zs := startZK(zkDir)
	c := connect(zs.Addr())
	mk := func(c *zk.Conn, p string, data []byte, acl []zk.ACL, mode zk.CreateMode) string {
		t.Helper()
		name, err := c.Create(ctx, p, data, acl, mode)
		if err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		return name
	}
	mk(c, "/app", []byte("config v1"), zk.OpenACLUnsafe, zk.ModePersistent)
	mk(c, "/app/bin", []byte{0, 1, 0xfe}, zk.OpenACLUnsafe, zk.ModePersistent)
	mk(c, "/app/ro", []byte("read only"), acl, zk.ModePersistent)
	mk(c, "/app/jobs", nil, zk.OpenACLUnsafe, zk.ModeContainer)
	for i := 0; i < 30; i++ {
		mk(c, "/app/jobs/job-", []byte(fmt.Sprint(i)), zk.OpenACLUnsafe, zk.ModePersistentSequential)
	}
	for i := 0; i < 5; i++ {
		if err := c.Delete(ctx, fmt.Sprintf("/app/jobs/job-%010d", i), -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Set(ctx, "/app", []byte("config v2"), -1); err != nil {
		t.Fatal(err)
	}
	_, appStat, err := c.Get(ctx, "/app")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := zs.Terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	// 2. zkgo server refuses ZooKeeper's directory, naming zkgo import.
	cfg := filepath.Join(t.TempDir(), "zoo.cfg")
	writeCfg := func(dataDir string) {
		text := fmt.Sprintf("tickTime=200\ndataDir=%s\nclientPort=2181\nadmin.serverPort=0\n4lw.commands.whitelist=*\n", dataDir)
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg(zkDir)
	out, err := exec.Command(binary, "server", "-addr", "127.0.0.1:0", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "zkgo import") {
		t.Fatalf("zkgo server on ZooKeeper's data dir: %v\n%s", err, out)
	}

	// 3. zkgo import in place, verified.
	out, err = exec.Command(binary, "import", "-config", cfg, "-verify").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verified: the written tree has the input's digest") {
		t.Fatalf("zkgo import: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "znodes:") || !strings.Contains(string(out), "last zxid:") {
		t.Fatalf("zkgo import printed no summary:\n%s", out)
	}
	if out, err := exec.Command(binary, "import", "-config", cfg).CombinedOutput(); err == nil || !strings.Contains(string(out), "holds zkgo data already") {
		t.Fatalf("a second import into the same directory: %v\n%s", err, out)
	}

	// 4. zkgo serves it.
	cmd, addr, logs := startServerLog(t, "-addr", "127.0.0.1:0", cfg)
	c = connect(addr)
	data, st, err := c.Get(ctx, "/app")
	if err != nil || string(data) != "config v2" || st.Czxid != appStat.Czxid || st.Mzxid != appStat.Mzxid || st.Version != appStat.Version {
		t.Fatalf("/app on zkgo: %q %+v %v; ZooKeeper had %+v", data, st, err, appStat)
	}
	if data, _, err := c.Get(ctx, "/app/bin"); err != nil || string(data) != "\x00\x01\xfe" {
		t.Fatalf("/app/bin on zkgo: %q %v", data, err)
	}
	if got, _, err := c.GetACL(ctx, "/app/ro"); err != nil || len(got) != 1 || got[0] != acl[0] {
		t.Fatalf("/app/ro's ACL on zkgo: %v %v", got, err)
	}
	if name := mk(c, "/app/jobs/job-", []byte("zkgo"), zk.OpenACLUnsafe, zk.ModePersistentSequential); name != "/app/jobs/job-0000000030" {
		t.Fatalf("next sequential name on zkgo %q, want job-0000000030 (ZooKeeper numbers children by the parent's create count: 30 before)", name)
	}
	mk(c, "/written-by-zkgo", []byte("yes"), zk.OpenACLUnsafe, zk.ModePersistent)
	// The snapshot command needs an identity that every permission on /
	// is granted to by an entry other than world:anyone (ZooKeeper 3.9's
	// rule, which zkgo applies to world ACLs too): give ops one.
	rootACL := append(zk.DigestACL(zk.PermAll, "ops", "secret"), zk.OpenACLUnsafe...)
	if _, err := c.SetACL(ctx, "/", rootACL, -1); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// A backup of the running server, over its AdminServer.
	var adminURL string
	for deadline := time.Now().Add(10 * time.Second); adminURL == ""; time.Sleep(20 * time.Millisecond) {
		if m := adminURLRE.FindStringSubmatch(logs.String()); m != nil {
			adminURL = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no AdminServer in the log:\n%s", logs.String())
		}
	}
	adminAddr := strings.TrimSuffix(strings.TrimPrefix(adminURL, "http://"), "/commands")
	backups := t.TempDir()
	out, err = exec.Command(binary, "snapshot", "save", "-server", adminAddr, "-auth", "ops:secret", backups).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "checksums good") {
		t.Fatalf("zkgo snapshot save: %v\n%s", err, out)
	}
	saved, _ := filepath.Glob(filepath.Join(backups, "snapshot.*"))
	if len(saved) != 1 {
		t.Fatalf("snapshot save wrote %v", saved)
	}
	if out, err := exec.Command(binary, "snapshot", "status", saved[0]).CombinedOutput(); err != nil || !strings.Contains(string(out), "znodes:") {
		t.Fatalf("zkgo snapshot status of the backup: %v\n%s", err, out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("zkgo server exit: %v", err)
	}

	// 5. zkgo export; Apache ZooKeeper starts from it.
	outDir := t.TempDir()
	out, err = exec.Command(binary, "export", "-config", cfg, outDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wrote "+filepath.Join(outDir, "version-2", "snapshot.")) {
		t.Fatalf("zkgo export: %v\n%s", err, out)
	}
	snaps, _ := filepath.Glob(filepath.Join(outDir, "version-2", "snapshot.*"))
	if len(snaps) != 1 {
		t.Fatalf("export wrote %v", snaps)
	}
	zs = startZK(outDir)
	c = connect(zs.Addr())
	for p, want := range map[string]string{"/app": "config v2", "/written-by-zkgo": "yes", "/app/jobs/job-0000000030": "zkgo"} {
		if data, _, err := c.Get(ctx, p); err != nil || string(data) != want {
			t.Fatalf("%s on Apache ZooKeeper after export: %q %v", p, data, err)
		}
	}
	if name := mk(c, "/app/jobs/job-", nil, zk.OpenACLUnsafe, zk.ModePersistentSequential); name != "/app/jobs/job-0000000031" {
		t.Fatalf("next sequential name on ZooKeeper after the round trip %q", name)
	}
	c.Close()
	if err := zs.Terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	// 6. snapshot status and restore of the exported file.
	out, err = exec.Command(binary, "snapshot", "status", snaps[0]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "checksums good") {
		t.Fatalf("zkgo snapshot status: %v\n%s", err, out)
	}
	restored := t.TempDir()
	if out, err := exec.Command(binary, "snapshot", "restore", "-data-dir", restored, snaps[0]).CombinedOutput(); err != nil {
		t.Fatalf("zkgo snapshot restore: %v\n%s", err, out)
	}
	writeCfg(restored)
	_, addr = startServer(t, "-addr", "127.0.0.1:0", cfg)
	c = connect(addr)
	defer c.Close()
	if data, _, err := c.Get(ctx, "/written-by-zkgo"); err != nil || string(data) != "yes" {
		t.Fatalf("/written-by-zkgo after restore: %q %v", data, err)
	}
}
