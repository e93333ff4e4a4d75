package config

import (
	"strings"
	"testing"
)

func TestAuditKeys(t *testing.T) {
	parse := func(text, jvmFlags string) *Config {
		t.Helper()
		var opts []LoadOption
		if jvmFlags != "" {
			j := &JVM{}
			if err := j.AddFlags(jvmFlags, "SERVER_JVMFLAGS"); err != nil {
				t.Fatal(err)
			}
			opts = append(opts, WithJVM(j))
		}
		c, warnings, err := Parse(strings.NewReader("tickTime=2000\n"+text), "zoo.cfg", opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range warnings {
			if strings.Contains(w, "unknown key") || strings.Contains(w, "setting of the Java server") {
				t.Errorf("warning: %s", w)
			}
		}
		return c
	}
	// Off by default; no file.
	if c := parse("dataDir=/var/lib/zk\n", ""); c.AuditEnabled {
		t.Error("audit on by default")
	}
	for _, tc := range []struct {
		text, jvm string
		on        bool
		path      string
	}{
		{"audit.enable=true\ndataDir=/var/lib/zk\n", "", true, "/var/lib/zk/zookeeper_audit.log"},
		{"audit.enable=TRUE\n", "", true, ""}, // no dataDir: the server's log
		{"audit.enable=yes\n", "", false, ""}, // Boolean.getBoolean
		{"dataDir=/d\n", "-Dzookeeper.audit.enable=true", true, "/d/zookeeper_audit.log"},
		{"audit.enable=false\ndataDir=/d\n", "-Dzookeeper.audit.enable=true", false, "/d/zookeeper_audit.log"}, // zoo.cfg wins, as in ZooKeeper
		{"audit.enable=true\ndataDir=/d\nzkgo.audit.file=-\n", "", true, ""},
		{"audit.enable=true\ndataDir=/d\nzkgo.audit.file=audit/a.log\n", "", true, "/d/audit/a.log"},
		{"audit.enable=true\ndataDir=/d\nzkgo.audit.file=/var/log/zk/audit.log\n", "", true, "/var/log/zk/audit.log"},
		{"audit.enable=true\nzkgo.audit.file=a.log\n", "", true, "a.log"},
	} {
		c := parse(tc.text, tc.jvm)
		if c.AuditEnabled != tc.on || c.AuditPath() != tc.path {
			t.Errorf("%q %q: on %v path %q; want %v %q", tc.text, tc.jvm, c.AuditEnabled, c.AuditPath(), tc.on, tc.path)
		}
	}
	if _, _, err := Parse(strings.NewReader("zkgo.audit.file=\n"), "zoo.cfg"); err == nil {
		t.Error("empty zkgo.audit.file accepted")
	}
}
