package config

import (
	"strings"
	"testing"
)

func TestDynamicText(t *testing.T) {
	for _, tt := range []struct {
		name, cfg, want string
	}{
		{"client parts", "server.2=10.0.0.2:2888:3888;2181\nserver.1=10.0.0.1:2888:3888:participant;127.0.0.1:2181\nserver.3=10.0.0.3:2888:3888:observer;2182\n",
			"server.1=10.0.0.1:2888:3888:participant;127.0.0.1:2181\nserver.2=10.0.0.2:2888:3888:participant;0.0.0.0:2181\nserver.3=10.0.0.3:2888:3888:observer;0.0.0.0:2182\nversion=0"},
		{"static client port", "clientPort=2181\nserver.1=h1:2888:3888\nserver.2=h2:2888:3888\n",
			"server.1=h1:2888:3888:participant\nserver.2=h2:2888:3888:participant\nversion=0"},
		{"ipv6 and version", "version=100000000\nserver.1=[::1]:2888:3888;[::1]:2181\nserver.2=[::1]:2889:3889;[::1]:2182\n",
			"server.1=[::1]:2888:3888:participant;[::1]:2181\nserver.2=[::1]:2889:3889:participant;[::1]:2182\nversion=100000000"},
		// Found by FuzzParseDynamic: hosts are trimmed, and any host
		// with a colon is bracketed, so the text reads back.
		{"padded and colon hosts", "server.1=[ h1 ]:2888:3888;[ h1 ]:2181\nserver.2=[::ffff:10.0.0.2]:2888:3888;[::ffff:10.0.0.2]:2181\nserver.3=[a:b]:2888:3888\nserver.4=h4:2888:3888; [::1]:2184\n",
			"server.1=h1:2888:3888:participant;h1:2181\nserver.2=[::ffff:10.0.0.2]:2888:3888:participant;[::ffff:10.0.0.2]:2181\nserver.3=[a:b]:2888:3888:participant\nserver.4=h4:2888:3888:participant;[::1]:2184\nversion=0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse(strings.NewReader("tickTime=2000\ndataDir=/tmp/x\n"+tt.cfg), "zoo.cfg")
			if err != nil {
				t.Fatal(err)
			}
			if got := c.DynamicText(); got != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// Hosts with brackets, spaces or backslashes left in them are refused
// (found by FuzzParseDynamic: they were kept and written back unreadable).
func TestServerHostsRefused(t *testing.T) {
	for _, line := range []string{
		"server.1=h[1:2888:3888",
		"server.1=[h]1]:2888:3888",
		"server.1=[a b]:2888:3888",
		"server.1=h1:2888:3888;[0:2181",
		"server.1=h1:2888:3888;[ ]]:2181",
		"server.1=h1:2888:3888;[:\\\\]:2181",
		"server.1=h\\\\1:2888:3888",
	} {
		if _, _, err := Parse(strings.NewReader("tickTime=2000\ndataDir=/tmp/x\n"+line+"\n"), "zoo.cfg"); err == nil {
			t.Errorf("%s: accepted", line)
		}
	}
}
