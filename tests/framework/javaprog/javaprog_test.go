package javaprog

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// A missing jar is named, with the Debian package that installs it, and
// the error wraps ErrNotInstalled (callers skip or report on it).
func TestMissingJarNamed(t *testing.T) {
	c := &Cache{Prefix: "javaprog-test-", Spec: Spec{
		Sources: map[string][]byte{"X.java": []byte("class X {}\n")},
		Jars:    []Jar{{File: "no-such-library-for-zkgo.jar", Package: "libno-such-java"}},
	}}
	defer c.Cleanup()
	_, err := c.Program()
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("got %v, want an error wrapping ErrNotInstalled", err)
	}
	want := filepath.Join(JavaDir, "no-such-library-for-zkgo.jar") + " (apt-get install libno-such-java)"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
}
