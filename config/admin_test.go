package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestAdminKeys(t *testing.T) {
	def := Admin{Enabled: true, ServerAddress: "0.0.0.0", ServerPort: 8080, CommandURL: "/commands", IdleTimeout: 30 * time.Second, Console: true, Snapshot: true, Restore: true, RateLimit: 5 * time.Minute}
	with := func(f func(a *Admin)) Admin { a := def; f(&a); return a }
	tests := []struct {
		name     string
		cfg      string
		want     Admin
		warnKeys []string
		wantErr  string
	}{
		{name: "absent: ZooKeeper's defaults", cfg: "", want: def},
		{name: "disabled", cfg: "admin.enableServer=false\n", want: with(func(a *Admin) { a.Enabled = false })},
		{name: "system property spelling", cfg: "zookeeper.admin.enableServer=false\nzookeeper.admin.serverPort=9090\n",
			want: with(func(a *Admin) { a.Enabled, a.ServerPort = false, 9090 })},
		// AdminServerFactory compares with "false" exactly.
		{name: "False is not false", cfg: "admin.enableServer=False\n", want: def, warnKeys: []string{"admin.enableServer"}},
		{name: "everything", cfg: "admin.serverAddress=[::1]\nadmin.serverPort=0\nadmin.commandURL=/zk/cmds/\nadmin.idleTimeout=0x3e8\nzkgo.admin.pprof=true\n",
			want: with(func(a *Admin) {
				a.ServerAddress, a.ServerPort, a.CommandURL, a.IdleTimeout, a.Pprof = "::1", 0, "/zk/cmds", time.Second, true
			})},
		{name: "ignored settings", cfg: "admin.httpVersion=11\nadmin.forceHttps=false\nadmin.somethingNew=1\n", want: def,
			warnKeys: []string{"admin.httpVersion", "admin.somethingNew"}},
		{name: "bad port", cfg: "admin.serverPort=eighty\n", wantErr: `zoo.cfg:1: admin.serverPort: invalid integer "eighty"`},
		{name: "port out of range", cfg: "admin.serverPort=65536\n", wantErr: "zoo.cfg:1: admin.serverPort: port 65536 out of range"},
		{name: "negative port", cfg: "zookeeper.admin.serverPort=-1\n", wantErr: "zoo.cfg:1: zookeeper.admin.serverPort: port -1 out of range"},
		{name: "relative URL", cfg: "admin.commandURL=commands\n", wantErr: `zoo.cfg:1: admin.commandURL: "commands" is not a URL path`},
		{name: "pattern in URL", cfg: "admin.commandURL=/c/{name}\n", wantErr: `zoo.cfg:1: admin.commandURL: "/c/{name}" is not a URL path`},
		{name: "root URL", cfg: "admin.commandURL=/\n", wantErr: "zoo.cfg:1: admin.commandURL: the commands cannot be served at the root"},
		{name: "zero idle timeout", cfg: "admin.idleTimeout=0\n", wantErr: "zoo.cfg:1: admin.idleTimeout: idle timeout 0 ms must be positive"},
		{name: "empty address", cfg: "admin.serverAddress=\n", wantErr: "zoo.cfg:1: admin.serverAddress: empty address"},
		{name: "https without a key store", cfg: "admin.forceHttps=true\n", wantErr: "zoo.cfg: admin.forceHttps=true needs ssl.quorum.keyStore.location"},
		{name: "unified port without a key store", cfg: "zookeeper.admin.portUnification=TRUE\n", wantErr: "zoo.cfg: admin.portUnification=true needs ssl.quorum.keyStore.location"},
		{name: "client auth without a trust store", cfg: "admin.forceHttps=true\nadmin.needClientAuth=true\nssl.quorum.keyStore.location=/k.p12\n",
			wantErr: "zoo.cfg: admin.needClientAuth=true needs ssl.quorum.trustStore.location"},
		{name: "https with the quorum key store", cfg: "admin.forceHttps=true\nssl.quorum.keyStore.location=/k.p12\n",
			want: with(func(a *Admin) { a.ForceHTTPS = true })},
		{name: "unified port and client auth", cfg: "admin.portUnification=true\nadmin.needClientAuth=true\nssl.quorum.keyStore.location=/k.p12\nssl.quorum.trustStore.location=/t.p12\n",
			want: with(func(a *Admin) { a.PortUnification, a.NeedClientAuth = true, true })},
		{name: "https off: no stores needed", cfg: "admin.enableServer=false\nadmin.forceHttps=true\n",
			want: with(func(a *Admin) { a.Enabled, a.ForceHTTPS = false, true })},
		{name: "snapshot settings", cfg: "admin.snapshot.enabled=false\nzookeeper.admin.rateLimiterIntervalInMS=1000\n",
			want: with(func(a *Admin) { a.Snapshot, a.RateLimit = false, time.Second })},
		{name: "restore off", cfg: "zookeeper.admin.restore.enabled=FALSE\n", want: with(func(a *Admin) { a.Restore = false })},
		{name: "restore on (Boolean.parseBoolean)", cfg: "admin.restore.enabled=True\n", want: with(func(a *Admin) { a.Restore = true })},
		{name: "zero rate limit", cfg: "admin.rateLimiterIntervalInMS=0\n", wantErr: "zoo.cfg:1: admin.rateLimiterIntervalInMS: interval 0 ms must be positive"},
		{name: "console off", cfg: "zkgo.admin.console=false\n", want: with(func(a *Admin) { a.Console = false })},
		{name: "bad console flag", cfg: "zkgo.admin.console=no\n", wantErr: `zoo.cfg:1: zkgo.admin.console: invalid boolean "no"`},
		{name: "console recipe roots", cfg: "zkgo.admin.console.recipeRoots=/app, /locks\n", want: with(func(a *Admin) { a.ConsoleRecipeRoots = []string{"/app", "/locks"} })},
		{name: "console read-only", cfg: "zkgo.admin.console.readOnly=true\n", want: with(func(a *Admin) { a.ConsoleReadOnly = true })},
		{name: "allowed hosts", cfg: "zkgo.admin.allowedHosts=zk1.example.org, .prod.example.org,*\n", want: with(func(a *Admin) { a.AllowedHosts = []string{"zk1.example.org", ".prod.example.org", "*"} })},
		{name: "bad allowed host", cfg: "zkgo.admin.allowedHosts=http://x\n", wantErr: `zoo.cfg:1: zkgo.admin.allowedHosts: "http://x" is not a host name (want name, .domain or *)`},
		{name: "bad console recipe root", cfg: "zkgo.admin.console.recipeRoots=app\n", wantErr: `zoo.cfg:1: zkgo.admin.console.recipeRoots: "app" is not a znode path`},
		{name: "bad pprof flag", cfg: "zkgo.admin.pprof=yes\n", wantErr: `zoo.cfg:1: zkgo.admin.pprof: invalid boolean "yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, w, err := Parse(strings.NewReader(tt.cfg), "zoo.cfg")
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Admin, tt.want) {
				t.Errorf("Admin %+v, want %+v", c.Admin, tt.want)
			}
			wantKeys(t, w, tt.warnKeys...)
		})
	}
	if got := (Admin{ServerAddress: "::1", ServerPort: 8080}).Addr(); got != "[::1]:8080" {
		t.Errorf("Addr %q", got)
	}
	if d := Default(); !d.Admin.Enabled || d.Admin.Addr() != "0.0.0.0:8080" {
		t.Errorf("Default().Admin = %+v", d.Admin)
	}
}
