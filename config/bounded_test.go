package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgo/zkgo/internal/boundedfile"
)

// pad returns text followed by comment lines up to more than n bytes.
func pad(text string, n int) string {
	line := "# " + strings.Repeat("x", 97) + "\n"
	return text + strings.Repeat(line, n/len(line)+1)
}

func wantTooLarge(t *testing.T, what string, err error, path, limit string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), boundedfile.ErrTooLarge.Error()) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), limit) {
		t.Errorf("%s: err = %v, want one naming %s and %s bytes", what, err, path, limit)
	}
}

// Every file Load reads is bounded: zoo.cfg, the dynamic configuration
// file and myid (the JAAS file and java.env already were), and so is the
// password file of a TLS store.
func TestLoadBoundsFiles(t *testing.T) {
	t.Run("zoo.cfg", func(t *testing.T) {
		path := install(t, "2\n", "ensemble.cfg")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(pad(string(b), boundedfile.Config)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err = Load(path)
		wantTooLarge(t, "zoo.cfg", err, path, "1048576")
	})
	t.Run("dynamicConfigFile", func(t *testing.T) {
		path := install(t, "1", "dynamic.cfg", "dynamic-servers.cfg")
		if _, _, err := Load(path); err != nil {
			t.Fatal(err)
		}
		dyn := filepath.Join(filepath.Dir(path), "dynamic-servers.cfg")
		b, err := os.ReadFile(dyn)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dyn, []byte(pad(string(b), boundedfile.Config)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err = Load(path)
		wantTooLarge(t, "dynamicConfigFile", err, dyn, "1048576")
	})
	t.Run("myid", func(t *testing.T) {
		path := install(t, pad("2\n", boundedfile.Small), "ensemble.cfg")
		_, _, err := Load(path)
		wantTooLarge(t, "myid", err, "myid", "65536")
	})
	t.Run("passwordPath", func(t *testing.T) {
		pw := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(pw, []byte(pad("s3cret\n", boundedfile.Small)), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := Parse(strings.NewReader("ssl.keyStore.passwordPath="+pw+"\n"), "zoo.cfg")
		wantTooLarge(t, "passwordPath", err, pw, "65536")
	})
	t.Run("Parse", func(t *testing.T) {
		_, _, err := Parse(strings.NewReader(pad("tickTime=2000\n", boundedfile.Config)), "stdin.cfg")
		wantTooLarge(t, "Parse", err, "stdin.cfg", "1048576")
	})
}

// A configuration file that never ends stops at the bound: pointing
// dynamicConfigFile (or a client configuration, whose size a device
// does not tell) at /dev/zero once read gigabytes.
func TestLoadDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	path := install(t, "1", "dynamic.cfg")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), "dynamicConfigFile=dynamic-servers.cfg", "dynamicConfigFile=/dev/zero", 1))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = Load(path)
	wantTooLarge(t, "dynamicConfigFile", err, "/dev/zero", "1048576")
	_, _, err = LoadClientConfig("/dev/zero")
	wantTooLarge(t, "client configuration", err, "/dev/zero", "1048576")
}
