// Package testkdc runs a throwaway MIT Kerberos KDC for tests: krb5kdc on
// 127.0.0.1 with a fresh database in a temporary directory, a realm of its
// own (Realm, ZKGO.TEST), principals and keytabs made on request with
// kadmin.local, and a krb5.conf that points Go (internal/krb, with
// KRB5_CONFIG) and Java (-Djava.security.krb5.conf) at it.
//
// It needs Debian's krb5-kdc, krb5-admin-server and krb5-user packages
// (krb5kdc, kdb5_util, kadmin.local); without them Start returns an error
// wrapping ErrNotInstalled, for the tests to skip with SkipMessage.
//
// Start it once per test package, from TestMain or through a sync.Once
// (Shared), as starting a KDC takes a fraction of a second but a database
// per test would add up:
//
//	var kdc = testkdc.Shared()
//
//	func TestX(t *testing.T) {
//		k := kdc.Get(t) // skips when the binaries are absent
//		kt := k.Keytab(t, "client")
//		...
//	}
//
//	func TestMain(m *testing.M) { code := m.Run(); kdc.Stop(); os.Exit(code) }
package testkdc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Realm is the realm of every test KDC.
const Realm = "ZKGO.TEST"

// ErrNotInstalled is wrapped by Start's error when the MIT Kerberos
// binaries are missing.
var ErrNotInstalled = errors.New("MIT Kerberos KDC not installed (apt-get install krb5-kdc krb5-admin-server krb5-user)")

// KDC is a running krb5kdc.
type KDC struct {
	// Dir holds the database, the configuration, the log and the keytabs.
	Dir string
	// Krb5Conf is the krb5.conf for clients and services of the realm:
	// KRB5_CONFIG for Go and MIT tools, -Djava.security.krb5.conf for
	// Java.
	Krb5Conf string
	// Port is the KDC's TCP and UDP port on 127.0.0.1.
	Port int

	kdcConf string
	kadmin  string
	cmd     *exec.Cmd
	exited  chan struct{}

	mu   sync.Mutex
	seen map[string]bool // principals created
	n    int             // keytab files written
}

// binaries are found in PATH, then in /usr/sbin (not in a user's PATH).
func find(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, ErrNotInstalled)
}

// SkipMessage is the message of a test that skips because Start failed.
func SkipMessage(err error) string {
	if errors.Is(err, ErrNotInstalled) {
		return "skipping: " + err.Error()
	}
	return "skipping: test KDC did not start: " + err.Error()
}

// Start creates a realm in a new temporary directory and starts its KDC.
// Stop removes the directory.
func Start() (*KDC, error) {
	kdcBin, err := find("krb5kdc")
	if err != nil {
		return nil, err
	}
	util, err := find("kdb5_util")
	if err != nil {
		return nil, err
	}
	kadmin, err := find("kadmin.local")
	if err != nil {
		return nil, err
	}
	var last error
	for range 3 { // the port picked free may be taken before krb5kdc binds it
		k, err := start(kdcBin, util, kadmin)
		if err == nil {
			return k, nil
		}
		last = err
	}
	return nil, last
}

func start(kdcBin, util, kadmin string) (*KDC, error) {
	dir, err := os.MkdirTemp("", "zkgo-kdc-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	k := &KDC{
		Dir: dir, Port: port, kadmin: kadmin,
		Krb5Conf: filepath.Join(dir, "krb5.conf"),
		kdcConf:  filepath.Join(dir, "kdc.conf"),
		exited:   make(chan struct{}),
		seen:     map[string]bool{},
	}
	fail := func(err error) (*KDC, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(k.Krb5Conf, []byte(k.krb5Conf()), 0o644); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(k.kdcConf, []byte(k.kdcConfText()), 0o644); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kadm5.acl"), nil, 0o644); err != nil {
		return fail(err)
	}
	if out, err := k.run(util, "-r", Realm, "create", "-s", "-P", "zkgo-test-master"); err != nil {
		return fail(fmt.Errorf("kdb5_util create: %v: %s", err, out))
	}
	logf, err := os.Create(filepath.Join(dir, "krb5kdc.out"))
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(kdcBin, "-n", "-r", Realm, "-P", filepath.Join(dir, "krb5kdc.pid"))
	cmd.Env = k.Env()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fail(err)
	}
	k.cmd = cmd
	go func() { cmd.Wait(); logf.Close(); close(k.exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", k.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return k, nil
		}
		select {
		case <-k.exited:
			log := k.LogTail()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("krb5kdc exited at start: %s", log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log := k.LogTail()
			k.Stop()
			return nil, fmt.Errorf("krb5kdc not serving on %s after 15s: %s", k.Addr(), log)
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	// krb5kdc binds UDP on the same port.
	pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, err
	}
	pc.Close()
	return port, nil
}

// krb5Conf is the clients' configuration: TCP only (udp_preference_limit),
// no DNS, no reverse lookups, localhost in the realm.
func (k *KDC) krb5Conf() string {
	return fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_realm = false
	dns_lookup_kdc = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
	ticket_lifetime = 1h
	forwardable = false
	default_ccache_name = FILE:%[3]s/ccache

[realms]
	%[1]s = {
		kdc = 127.0.0.1:%[2]d
	}

[domain_realm]
	localhost = %[1]s
	.localhost = %[1]s
	127.0.0.1 = %[1]s
`, Realm, k.Port, k.Dir)
}

func (k *KDC) kdcConfText() string {
	return fmt.Sprintf(`[kdcdefaults]
	kdc_ports = %[2]d
	kdc_tcp_ports = %[2]d

[realms]
	%[1]s = {
		database_name = %[3]s/principal
		acl_file = %[3]s/kadm5.acl
		key_stash_file = %[3]s/stash
		kdc_ports = %[2]d
		kdc_tcp_ports = %[2]d
		max_life = 1h
		max_renewable_life = 0
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}

[logging]
	kdc = FILE:%[3]s/kdc.log
`, Realm, k.Port, k.Dir)
}

// Env is the environment of the MIT tools for this realm: the current
// one with KRB5_CONFIG and KRB5_KDC_PROFILE set.
func (k *KDC) Env() []string {
	env := []string{"KRB5_CONFIG=" + k.Krb5Conf, "KRB5_KDC_PROFILE=" + k.kdcConf, "KRB5CCNAME=FILE:" + filepath.Join(k.Dir, "ccache")}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KRB5") {
			env = append(env, e)
		}
	}
	return env
}

func (k *KDC) run(bin string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = k.Env()
	cmd.Dir = k.Dir
	return cmd.CombinedOutput()
}

// Addr is the KDC's host:port.
func (k *KDC) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(k.Port)) }

// Principal returns name qualified with the realm: "client" gives
// "client@ZKGO.TEST", and a name with a realm is returned as it is.
func Principal(name string) string {
	if strings.Contains(name, "@") {
		return name
	}
	return name + "@" + Realm
}

// AddPrincipal creates principal (random keys) if it does not exist yet.
func (k *KDC) AddPrincipal(principal string) error {
	principal = Principal(principal)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.addLocked(principal)
}

func (k *KDC) addLocked(principal string) error {
	if k.seen[principal] {
		return nil
	}
	out, err := k.run(k.kadmin, "-r", Realm, "-q", "addprinc -randkey "+principal)
	if err != nil || bytes.Contains(out, []byte("add_principal: ")) {
		return fmt.Errorf("kadmin.local addprinc %s: %v: %s", principal, err, out)
	}
	k.seen[principal] = true
	return nil
}

// NewKeytab writes a new keytab file with the current keys of the
// principals, creating those that do not exist yet. Keys are not changed,
// so earlier keytabs of the same principals stay valid.
func (k *KDC) NewKeytab(principals ...string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n++
	path := filepath.Join(k.Dir, fmt.Sprintf("keytab%d", k.n))
	for _, p := range principals {
		p = Principal(p)
		if err := k.addLocked(p); err != nil {
			return "", err
		}
		out, err := k.run(k.kadmin, "-r", Realm, "-q", fmt.Sprintf("ktadd -k %s -norandkey %s", path, p))
		if err != nil || !bytes.Contains(out, []byte("added to keytab")) {
			return "", fmt.Errorf("kadmin.local ktadd %s: %v: %s", p, err, out)
		}
	}
	return path, nil
}

// RandKey gives principal new keys (a new key version): keytabs written
// before hold keys the KDC no longer has.
func (k *KDC) RandKey(principal string) error {
	principal = Principal(principal)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.addLocked(principal); err != nil {
		return err
	}
	out, err := k.run(k.kadmin, "-r", Realm, "-q", "cpw -randkey "+principal)
	if err != nil || !bytes.Contains(out, []byte("randomized")) {
		return fmt.Errorf("kadmin.local cpw -randkey %s: %v: %s", principal, err, out)
	}
	return nil
}

// Keytab is NewKeytab for a test: it fails the test on an error.
func (k *KDC) Keytab(t testing.TB, principals ...string) string {
	t.Helper()
	p, err := k.NewKeytab(principals...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// LogTail is the end of the KDC's log, for failure messages.
func (k *KDC) LogTail() string {
	var b strings.Builder
	for _, name := range []string{"krb5kdc.out", "kdc.log"} {
		data, _ := os.ReadFile(filepath.Join(k.Dir, name))
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		b.Write(data)
	}
	return b.String()
}

// Stop kills the KDC and removes its directory.
func (k *KDC) Stop() {
	if k.cmd != nil && k.cmd.Process != nil {
		k.cmd.Process.Kill()
		<-k.exited
	}
	os.RemoveAll(k.Dir)
}

// Once starts one KDC for a test package, at the first Get.
type Once struct {
	once sync.Once
	kdc  *KDC
	err  error
}

// Shared returns a Once: a KDC started by the first Get and stopped by Stop
// (from TestMain, after m.Run).
func Shared() *Once { return &Once{} }

// Get returns the package's KDC, starting it the first time, or skips t
// with SkipMessage when it cannot run.
func (o *Once) Get(t testing.TB) *KDC {
	t.Helper()
	o.once.Do(func() { o.kdc, o.err = Start() })
	if o.err != nil {
		if errors.Is(o.err, ErrNotInstalled) {
			t.Skip(SkipMessage(o.err))
		}
		t.Fatal(o.err)
	}
	return o.kdc
}

// Stop stops the KDC if one was started.
func (o *Once) Stop() {
	o.once.Do(func() {}) // no KDC after Stop
	if o.kdc != nil {
		o.kdc.Stop()
	}
}

// New starts a KDC for one test, stopped at its cleanup, or skips the test
// when the binaries are absent. Prefer Shared when several tests of a
// package need one.
func New(t testing.TB) *KDC {
	t.Helper()
	k, err := Start()
	if err != nil {
		if errors.Is(err, ErrNotInstalled) {
			t.Skip(SkipMessage(err))
		}
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return k
}
