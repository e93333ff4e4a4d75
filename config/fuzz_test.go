package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: zoo.cfg parsing never panics, and what it accepts validates
// or fails Validate with an error (never a panic), and a client
// configuration file is read the same way.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"tickTime=2000\ndataDir=/d\nclientPort=2181\n",
		"server.1=127.0.0.1:2888:3888;2181\nserver.2=127.0.0.1:2889:3889:observer;127.0.0.1:2182\n",
		"secureClientPort=2281\nssl.keyStore.location=/k.jks\nssl.clientAuth=want\n",
		"4lw.commands.whitelist=*\nsnapCount=#10\njute.maxbuffer=0x10\n",
		"a\\\n b=c\\u0041\n! comment\n# c\nkey : value\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if c, _, err := Parse(strings.NewReader(text), "fuzz.cfg"); err == nil {
			_ = c.Validate()
			_ = c.ClientAddr()
			_ = c.SecureClientAddr()
		}
		p := filepath.Join(t.TempDir(), "client.properties")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		LoadClientConfig(p)
	})
}
