package storage

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDeleterWaitsForQuiet: queued files stay while entries keep being
// appended, unless more than deleteBacklog wait; once the WAL is quiet
// they go; halt deletes the rest.
func TestDeleterWaitsForQuiet(t *testing.T) {
	oldQuiet, oldBacklog := deleteQuiet, deleteBacklog
	deleteQuiet, deleteBacklog = 200*time.Millisecond, 2
	t.Cleanup(func() { deleteQuiet, deleteBacklog = oldQuiet, oldBacklog })

	dir := t.TempDir()
	mk := func(n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			p := filepath.Join(dir, fmt.Sprintf("%d-%d.wal.purged", n, i))
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
		return out
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	s := &Storage{log: slog.New(slog.DiscardHandler)}
	d := newDeleter(s)

	// Busy: an entry is appended every millisecond.
	busy := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-busy:
				return
			case <-time.After(time.Millisecond):
				s.entries.Add(1)
			}
		}
	}()
	files := mk(4)
	d.add(files)
	// Over the backlog (4 > 2): deleted down to 2 although busy.
	deadline := time.Now().Add(20 * time.Second)
	for d.pending() > deleteBacklog {
		if time.Now().After(deadline) {
			t.Fatalf("backlog not worked off: %d pending", d.pending())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if exists(files[0]) || exists(files[1]) {
		t.Fatal("oldest files not deleted first")
	}
	// Within the backlog and busy: they stay.
	time.Sleep(2 * deleteQuiet)
	if d.pending() != 2 || !exists(files[2]) || !exists(files[3]) {
		t.Fatalf("deleted while the WAL was busy: %d pending", d.pending())
	}
	// Quiet: they go.
	close(busy)
	<-stopped
	for d.pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not deleted when quiet: %d pending", d.pending())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if exists(files[2]) || exists(files[3]) {
		t.Fatal("files left")
	}

	// halt deletes what waits, and later adds delete at once.
	s.entries.Add(1)
	more := mk(2)
	d.add(more)
	d.halt()
	late := mk(1)
	d.add(late)
	for _, p := range append(more, late...) {
		if exists(p) {
			t.Fatalf("%s left after halt", p)
		}
	}
}
