// Package browsertest finds the Chromium that the web console's browser
// tests drive (package console's and cmd/zkgo's).
package browsertest

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium returns ZKGO_CHROMIUM, or the first Chromium on $PATH; without
// one it skips the test with a message saying what to install.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ZKGO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("browser tests skipped: no chromium binary found (install Debian's chromium package or set ZKGO_CHROMIUM)")
	return ""
}
