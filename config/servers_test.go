package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadDynamic(t *testing.T) {
	path := install(t, "4", "dynamic.cfg", "dynamic-servers.cfg")
	c, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 4 || c.Servers[3].Role != Observer || c.Servers[1].PeerPort != 2889 {
		t.Errorf("Servers: %+v", c.Servers)
	}
	if c.Version != 0 || c.PeerType != Observer || c.ClientAddr() != "127.0.0.1:2184" || c.DynamicConfigFile != "dynamic-servers.cfg" {
		t.Errorf("Version %x, PeerType %v, ClientAddr %q, DynamicConfigFile %q", c.Version, c.PeerType, c.ClientAddr(), c.DynamicConfigFile)
	}
	// Server 4 is an observer but peerType is not set: ZooKeeper warns too.
	wantKeys(t, warnings, "peerType")

	// The version is the hexadecimal suffix of the dynamic file's name.
	dir := filepath.Dir(path)
	if err := os.Rename(filepath.Join(dir, "dynamic-servers.cfg"), filepath.Join(dir, "zoo.cfg.dynamic.100000000")); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(path)
	abs := filepath.ToSlash(filepath.Join(dir, "zoo.cfg.dynamic.100000000"))
	cfg = []byte(strings.Replace(string(cfg), "dynamicConfigFile=dynamic-servers.cfg", "dynamicConfigFile="+abs, 1))
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, _, err = Load(path); err != nil {
		t.Fatal(err)
	}
	if c.Version != 0x100000000 || len(c.Servers) != 4 {
		t.Errorf("Version %x, %d servers", c.Version, len(c.Servers))
	}

	for _, tc := range []struct{ name, dyn, want string }{
		{"version inside", "version=100000000\nserver.1=a:1:2\n", "version"},
		{"unknown key", "server.1=a:1:2\ntickTime=2000\n", "tickTime"},
		{"hierarchical", "server.1=a:1:2\ngroup.1=1\n", "group.1"},
		{"bad server", "server.1=a:1\n", "server.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(abs, []byte(tc.dyn), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load error %v, want mention of %q", err, tc.want)
			}
		})
	}

	if _, _, err := parseString(t, "dataDir=/d\ndynamicConfigFile=x\nserver.1=a:1:2\n"); err == nil || !strings.Contains(err.Error(), "zoo.cfg:3: server.1") {
		t.Errorf("server.N next to dynamicConfigFile: %v", err)
	}
	if _, _, err := Load(install(t, "1", "dynamic.cfg")); err == nil {
		t.Error("missing dynamic file: no error")
	}
}

func TestParseServer(t *testing.T) {
	a := func(h string, p, e int) Address { return Address{h, p, e} }
	tt := []struct {
		value string
		multi bool
		want  *Server // nil: error
	}{
		{"zoo1:2888:3888", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}}},
		{"zoo1:2888:3888:participant", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}}},
		{"zoo1:2888:3888:Observer", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}, Role: Observer}},
		{"zoo1:2888:3888;2181", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}, ClientPort: 2181}},
		{"zoo1:2888:3888:observer;10.1.1.1:2181", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}, Role: Observer, ClientAddr: "10.1.1.1", ClientPort: 2181}},
		{"zoo1:2888:3888;", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}}},
		{"zoo1:2888:3888:", false, &Server{Addrs: []Address{a("zoo1", 2888, 3888)}}},
		{"[::1]:2888:3888;[::1]:2181", false, &Server{Addrs: []Address{a("::1", 2888, 3888)}, ClientAddr: "::1", ClientPort: 2181}},
		{"[fe80::1]:2888:3888:observer", false, &Server{Addrs: []Address{a("fe80::1", 2888, 3888)}, Role: Observer}},
		{"a:1:2|b:3:4", true, &Server{Addrs: []Address{a("a", 1, 2), a("b", 3, 4)}}},
		{"a:1:2:observer|b:3:4", true, &Server{Addrs: []Address{a("a", 1, 2), a("b", 3, 4)}, Role: Observer}},
		{"a:1:2|b:3:4", false, nil},
		{"a:1:2:observer|b:3:4:participant", true, nil},
		{"zoo1:2888", false, nil},
		{"zoo1", false, nil},
		{"", false, nil},
		{"zoo1:2888:3888:leader", false, nil},
		{"zoo1:2888:3888:observer:x", false, nil},
		{"zoo1:2888:2888", false, nil},
		{"zoo1:x:3888", false, nil},
		{"zoo1:2888:70000", false, nil},
		{":2888:3888", false, nil},
		{"zoo1:2888:3888;a:b:2181", false, nil},
		{"zoo1:2888:3888;2181;x", false, nil},
		{"zoo1:2888:3888;port", false, nil},
		{"[::1:2888:3888", false, nil},
		{"[::1]:", false, nil},
		{"::1:2888:3888", false, nil},
	}
	for _, tc := range tt {
		got, err := parseServer(7, tc.value, tc.multi)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: no error, got %+v", tc.value, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.value, err)
			continue
		}
		want := *tc.want
		want.ID = 7
		want.Host, want.PeerPort, want.ElectionPort = want.Addrs[0].Host, want.Addrs[0].PeerPort, want.Addrs[0].ElectionPort
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, want %+v", tc.value, got, want)
		}
	}

	// Through Parse: ids, ordering, duplicates, and multiAddress.enabled.
	c, _ := mustParse(t, "server.3=c:1:2\nserver.1=a:1:2\nmultiAddress.enabled=true\nserver.2=b:1:2|b2:1:2\n")
	if len(c.Servers) != 3 || c.Servers[0].ID != 1 || c.Servers[2].ID != 3 || len(c.Servers[1].Addrs) != 2 {
		t.Errorf("Servers: %+v", c.Servers)
	}
	for _, cfg := range []string{
		"server.x=a:1:2",
		"server.1=a:1:2\nserver.+1=b:1:2",
		"server.1=a:1:2|b:1:2",
		"group.1=1:2:3",
		"weight.1=1",
		"version=xyz\nserver.1=a:1:2",
	} {
		if _, _, err := parseString(t, cfg); err == nil {
			t.Errorf("%q: no error", cfg)
		}
	}
}
