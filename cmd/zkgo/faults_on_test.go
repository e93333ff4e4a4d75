//go:build zkgofaults

package main

import (
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zkgo/zkgo/storage"
)

// Run with: go test -tags zkgofaults -run 'ParsePeerVia|ParseDiskFault|DiskFaultsHook' ./cmd/zkgo

func TestParsePeerVia(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want map[int64]string // nil: an error
	}{
		{"2=127.0.0.1:40001,3=127.0.0.1:40002", map[int64]string{2: "127.0.0.1:40001", 3: "127.0.0.1:40002"}},
		{" 1 = [::1]:5 ", map[int64]string{1: "[::1]:5"}},
		{"2=127.0.0.1", nil},
		{"2:127.0.0.1:1", nil},
		{"0=127.0.0.1:1", nil},
		{"255=127.0.0.1:1", nil},
		{"2=127.0.0.1:1,2=127.0.0.1:2", nil},
		{"2=127.0.0.1:1,", nil},
	} {
		got, err := parsePeerVia(tt.in)
		if tt.want == nil {
			if err == nil {
				t.Errorf("parsePeerVia(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("parsePeerVia(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseDiskFault(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    diskFault
		wantErr bool
	}{
		{"", diskFault{}, false},
		{"none", diskFault{}, false},
		{"enospc", diskFault{kind: faultENOSPC}, false},
		{"eio", diskFault{kind: faultEIO}, false},
		{"eio-after 12", diskFault{kind: faultEIOAfter, after: 12}, false},
		{"slow 250ms", diskFault{kind: faultSlow, delay: 250 * time.Millisecond}, false},
		{"slow", diskFault{}, true},
		{"slow fast", diskFault{}, true},
		{"eio-after -1", diskFault{}, true},
		{"eio now", diskFault{}, true},
		{"ENOSPC", diskFault{}, true},
	} {
		got, err := parseDiskFault(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseDiskFault(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// The hook follows the control file: which steps each fault refuses, with
// which errno, and eio-after counting from when the file said so.
func TestDiskFaultsHook(t *testing.T) {
	ctl := filepath.Join(t.TempDir(), "disk")
	d := &diskFaults{path: ctl, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	set := func(text string) {
		t.Helper()
		if err := os.WriteFile(ctl, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		d.mu.Lock()
		d.read = time.Time{} // read it at the next step, not diskFaultReread later
		d.mu.Unlock()
	}
	ops := []storage.FaultOp{storage.FaultWALWrite, storage.FaultWALSync, storage.FaultSnapWrite,
		storage.FaultSnapSync, storage.FaultSnapRename, storage.FaultPurge}
	check := func(fault string, want map[storage.FaultOp]error) {
		t.Helper()
		for _, op := range ops {
			err := d.hook("dir", op)
			if w := want[op]; w == nil && err != nil || w != nil && !errors.Is(err, w) {
				t.Errorf("%q: %v returned %v, want %v", fault, op, err, w)
			}
		}
	}
	check("(no file)", nil)
	set("enospc\n")
	check("enospc", map[storage.FaultOp]error{storage.FaultWALWrite: syscall.ENOSPC, storage.FaultSnapWrite: syscall.ENOSPC, storage.FaultSnapRename: syscall.ENOSPC})
	set("eio")
	check("eio", map[storage.FaultOp]error{storage.FaultWALWrite: syscall.EIO, storage.FaultWALSync: syscall.EIO,
		storage.FaultSnapWrite: syscall.EIO, storage.FaultSnapSync: syscall.EIO, storage.FaultSnapRename: syscall.EIO})
	set("slow 1ms")
	check("slow", nil)
	set("none")
	check("none", nil)
	set("bogus")
	check("bogus", nil)

	set("eio-after 3")
	for i := 1; i <= 5; i++ {
		err := d.hook("dir", storage.FaultWALSync)
		if i <= 3 && err != nil || i > 3 && !errors.Is(err, syscall.EIO) {
			t.Errorf("eio-after 3: step %d returned %v", i, err)
		}
	}
	if err := d.hook("dir", storage.FaultPurge); err != nil {
		t.Errorf("eio-after 3: a purge returned %v", err)
	}
	if err := os.Remove(ctl); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.read = time.Time{}
	d.mu.Unlock()
	check("(file removed)", nil)
}
