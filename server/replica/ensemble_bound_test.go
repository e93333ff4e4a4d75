package replica

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The identity file is read with a bound: a file that never ends (here
// /dev/zero behind a symlink) is an error naming it, not a read until
// memory runs out.
func TestIdentityFileBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, ensembleFile)); err != nil {
		t.Skip(err)
	}
	if _, _, err := readIdentity(dir); err == nil || !strings.Contains(err.Error(), ensembleFile) || !strings.Contains(err.Error(), "4096 bytes") {
		t.Fatalf("readIdentity on /dev/zero: %v", err)
	}
}
