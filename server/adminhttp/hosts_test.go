package adminhttp

import (
	"os"
	"testing"
)

// The admin port's Host check (hosts.go): IP literals, localhost,
// the host name and the configured names pass, ports and case aside;
// other names do not.
func TestAdminHostsAllowed(t *testing.T) {
	h := newAdminHosts([]string{"zk1.example.org", ".prod.example.net", "*.corp.example", "zk2.example.org:8080", " "})
	hn, _ := os.Hostname()
	for host, want := range map[string]bool{
		"":                     true,
		"127.0.0.1:8080":       true,
		"10.1.2.3":             true,
		"[::1]:8080":           true,
		"[fe80::1%25eth0]":     true,
		"localhost:8080":       true,
		"LOCALHOST.":           true,
		"app.localhost":        true,
		hn:                     true,
		"zk1.example.org":      true,
		"ZK1.Example.Org.:80":  true,
		"zk2.example.org":      true,
		"a.prod.example.net":   true,
		"b.corp.example:1":     true,
		"prod.example.net":     false,
		"evil-zk1.example.org": false,
		"attacker.example":     false,
		"zk1.example.org.evil": false,
		"localhost.evil.com":   false,
		"127.0.0.1.nip.io":     false,
	} {
		if got := h.allowed(host); got != want {
			t.Errorf("allowed(%q) = %v, want %v", host, got, want)
		}
	}
	if !newAdminHosts([]string{"*"}).allowed("anything.example") {
		t.Error(`"*" does not allow every name`)
	}
}
