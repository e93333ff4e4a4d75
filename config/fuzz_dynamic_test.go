package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseDynamic: a dynamic configuration file (the file zoo.cfg's
// dynamicConfigFile names) is parsed without a panic; what it accepts
// validates or fails Validate with an error, and renders (DynamicText) as
// text that parses back to as many servers and renders the same (the
// first rendering fills in defaults, such as a client address 0.0.0.0).
func FuzzParseDynamic(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "dynamic-servers.cfg"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	for _, s := range []string{
		"server.2=10.0.0.2:2888:3888;2181\nserver.1=10.0.0.1:2888:3888:participant;127.0.0.1:2181\nserver.3=10.0.0.3:2888:3888:observer;2182\n",
		"server.1=[::1]:2888:3888;[::1]:2181\nserver.2=[::1]:2889:3889;[::1]:2182\n",
		"server.1=h1:2888:3888\nserver.1=h2:2888:3888\n",
		"server.1=h1:2888:3888|h1b:2889:3889;2181\n",
		"version=100000000\n",
		"group.1=1:2:3\nweight.1=1\n",
		"server.255=h:1:2\nserver.-1=h:1:2\n",
		"server.1 = h1:2888:3888 ; 2181 \\\n  \n# comment\n",
	} {
		f.Add(s)
	}
	base := "tickTime=2000\ndataDir=/tmp/zkgo-fuzz\nreconfigEnabled=true\nstandaloneEnabled=false\n"
	f.Fuzz(func(t *testing.T, text string) {
		c, _, err := Parse(strings.NewReader(base), "zoo.cfg")
		if err != nil {
			t.Fatal(err)
		}
		const name = "zoo.cfg.dynamic.100000000"
		if err := c.parseDynamic(text, name); err != nil {
			return
		}
		_ = c.Validate()
		rendered := c.DynamicText()
		lines := strings.Split(rendered, "\n")
		if last := lines[len(lines)-1]; last != "version=100000000" {
			t.Fatalf("rendered version line %q", last)
		}
		again, _, err := Parse(strings.NewReader(base), "zoo.cfg")
		if err != nil {
			t.Fatal(err)
		}
		if err := again.parseDynamic(strings.Join(lines[:len(lines)-1], "\n"), name); err != nil {
			t.Fatalf("rendered text does not parse: %v\n%s", err, rendered)
		}
		if len(again.Servers) != len(c.Servers) || again.DynamicText() != rendered {
			t.Fatalf("rendering again differs:\n%s\n%s", rendered, again.DynamicText())
		}
	})
}
