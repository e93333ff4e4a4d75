package server_test

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/storage"
)

// A member whose disk fails stops on its own — Done is closed and Err
// wraps storage.ErrFailed — and says so in one log line that names the
// directory and the error; the others go on. Restarted once the disk is
// healed, it catches up.
func TestDiskFailureStopsMember(t *testing.T) {
	var logs [3]lockedBuffer
	c := startCluster(t, 3, 0, func(o *server.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs[o.ServerID-1], nil))
	})
	lead := c.createOnLeader("/before", "1")
	f := (lead + 1) % 3
	dir := filepath.Join(c.dirs[f], "zkgo")
	injected := errors.New("injected EIO")
	storage.SetFaultHook(func(d string, op storage.FaultOp) error {
		if d == dir {
			return injected
		}
		return nil
	})
	t.Cleanup(func() { storage.SetFaultHook(nil) })
	c.createOnLeader("/during", "2")

	select {
	case <-c.members[f].Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("member %d did not stop after its disk failed", f+1)
	}
	c.members[f].Close()
	if err := c.members[f].Err(); !errors.Is(err, storage.ErrFailed) || !errors.Is(err, injected) {
		t.Fatalf("Err() = %v, want the disk's error", err)
	}
	var line string
	for _, l := range strings.Split(logs[f].String(), "\n") {
		if strings.Contains(l, "disk failure") {
			if line != "" {
				t.Fatalf("more than one disk failure line:\n%s\n%s", line, l)
			}
			line = l
		}
	}
	for _, want := range []string{"dir=" + dir, injected.Error(), "acknowledges no write"} {
		if !strings.Contains(line, want) {
			t.Errorf("the disk failure line %q does not say %q", line, want)
		}
	}
	for i := range 3 {
		if i != f && c.members[i].Err() != nil {
			t.Fatalf("member %d stopped too: %v", i+1, c.members[i].Err())
		}
	}
	c.createOnLeader("/after", "3")

	storage.SetFaultHook(nil)
	c.restart(f)
	c.waitNode(f, "/during", "2")
	c.waitNode(f, "/after", "3")
}
