package zkcli

import (
	"os"
	"path/filepath"
	"testing"
)

// reconfig -file reports the server's refusal: the read of the file once
// shadowed the request's error, and a refused reconfig looked like success.
func TestReconfigFileReportsRefusal(t *testing.T) {
	h := newHarness(t)
	file := filepath.Join(t.TempDir(), "zoo.cfg.dynamic")
	if err := os.WriteFile(file, []byte("server.1=127.0.0.1:2888:3888;2181\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := h.exec("reconfig -file " + file)
	if code == 0 || errs == "" {
		t.Fatalf("reconfig -file on a server that refuses it: %d %q %q", code, out, errs)
	}
	t.Logf("refused: %d %q", code, errs)
}
