//go:build zkgofaults

package main

// Fault injection for test harnesses that run zkgo members as processes.
// This file is compiled only with the build tag zkgofaults
// (go build -tags zkgofaults ./cmd/zkgo); a production build has none of
// it and ignores the variables (faults_off.go).
//
// ZKGO_FAULT_PEER_VIA="2=127.0.0.1:40001,3=127.0.0.1:40002" makes the
// member dial server 2 at 127.0.0.1:40001 and server 3 at
// 127.0.0.1:40002 (a proxy on each link) for every connection it opens
// to them, while zoo.cfg, and so the ensemble's identity, stays the same
// on every member (server.Options.PeerDialAddr). Servers not listed are
// dialled at their zoo.cfg address.
//
// ZKGO_FAULT_DISK=<path> names a control file whose content (one line;
// surrounding space ignored) selects the disk fault from now on
// (storage.SetFaultHook), re-read at most every diskFaultReread:
//
//	(missing file), "", "none"  no fault
//	"enospc"                    every write step fails with ENOSPC
//	"eio"                       every write and fsync step fails with EIO
//	"eio-after <n>"             the first n write and fsync steps after
//	                            the file said so succeed, the rest fail
//	                            with EIO
//	"slow <duration>"           every fsync step first sleeps <duration>
//	                            (Go syntax: 200ms, 1.5s)
//
// A refused step is not taken (nothing torn or untrue reaches the disk);
// what the member then does is in docs/DESIGN.md, "Disk faults". Content
// that does not parse is logged and means no fault.

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/internal/boundedfile"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/storage"
)

const (
	envPeerVia = "ZKGO_FAULT_PEER_VIA"
	envDisk    = "ZKGO_FAULT_DISK"
)

// diskFaultReread is how long a control file's content is trusted before
// it is read again: a harness switches faults at most this late.
const diskFaultReread = 50 * time.Millisecond

// installFaults installs the faults the environment asks for.
func installFaults(opts *server.Options, log *slog.Logger) error {
	if v := os.Getenv(envPeerVia); v != "" {
		via, err := parsePeerVia(v)
		if err != nil {
			return fmt.Errorf("%s: %w", envPeerVia, err)
		}
		opts.PeerDialAddr = func(id int64, addr string) string {
			if a, ok := via[id]; ok {
				return a
			}
			return addr
		}
		log.Warn("FAULT INJECTION: peers are dialled through other addresses", "env", envPeerVia, "via", v)
	}
	if path := os.Getenv(envDisk); path != "" {
		d := &diskFaults{path: path, log: log}
		storage.SetFaultHook(d.hook)
		log.Warn("FAULT INJECTION: disk faults as a control file says", "env", envDisk, "file", path)
	}
	return nil
}

// parsePeerVia parses ZKGO_FAULT_PEER_VIA: comma-separated
// serverID=host:port.
func parsePeerVia(v string) (map[int64]string, error) {
	via := map[int64]string{}
	for item := range strings.SplitSeq(v, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("%q is not serverID=host:port", item)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64)
		if err != nil || n < 1 || n > 254 {
			return nil, fmt.Errorf("%q: server id must be 1..254", item)
		}
		addr = strings.TrimSpace(addr)
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		if _, dup := via[n]; dup {
			return nil, fmt.Errorf("server %d given twice", n)
		}
		via[n] = addr
	}
	return via, nil
}

// diskFaultKind is what a control file selects.
type diskFaultKind uint8

const (
	faultNone diskFaultKind = iota
	faultENOSPC
	faultEIO
	faultEIOAfter
	faultSlow
)

// diskFault is a parsed control file.
type diskFault struct {
	kind  diskFaultKind
	after int           // faultEIOAfter: steps that still succeed
	delay time.Duration // faultSlow: sleep before each fsync step
}

// parseDiskFault parses a control file's content.
func parseDiskFault(text string) (diskFault, error) {
	f := strings.Fields(text)
	if len(f) == 0 {
		return diskFault{}, nil
	}
	switch {
	case f[0] == "none" && len(f) == 1:
		return diskFault{}, nil
	case f[0] == "enospc" && len(f) == 1:
		return diskFault{kind: faultENOSPC}, nil
	case f[0] == "eio" && len(f) == 1:
		return diskFault{kind: faultEIO}, nil
	case f[0] == "eio-after" && len(f) == 2:
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 {
			return diskFault{}, fmt.Errorf("eio-after needs a count of steps, not %q", f[1])
		}
		return diskFault{kind: faultEIOAfter, after: n}, nil
	case f[0] == "slow" && len(f) == 2:
		d, err := time.ParseDuration(f[1])
		if err != nil || d < 0 {
			return diskFault{}, fmt.Errorf("slow needs a duration such as 200ms, not %q", f[1])
		}
		return diskFault{kind: faultSlow, delay: d}, nil
	}
	return diskFault{}, errors.New(`want "", "none", "enospc", "eio", "eio-after <n>" or "slow <duration>"`)
}

// diskFaults is the storage fault hook that follows a control file.
type diskFaults struct {
	path string
	log  *slog.Logger

	mu    sync.Mutex // guards the fields below
	read  time.Time  // when the control file was last read
	text  string     // what it said then, trimmed
	fault diskFault  // the fault text selects
	steps int        // write and fsync steps seen since fault was selected
}

// hook is the storage.FaultHook.
func (d *diskFaults) hook(_ string, op storage.FaultOp) error {
	f, steps := d.current(op.Writes() || op.Syncs())
	var errno syscall.Errno
	switch f.kind {
	case faultENOSPC:
		if op.Writes() {
			errno = syscall.ENOSPC
		}
	case faultEIO:
		if op.Writes() || op.Syncs() {
			errno = syscall.EIO
		}
	case faultEIOAfter:
		if (op.Writes() || op.Syncs()) && steps > f.after {
			errno = syscall.EIO
		}
	case faultSlow:
		if op.Syncs() {
			time.Sleep(f.delay)
		}
	}
	if errno == 0 {
		return nil
	}
	return fmt.Errorf("%v refused (fault injected by %s): %w", op, envDisk, errno)
}

// current returns the fault in force, re-reading the control file if the
// last reading is older than diskFaultReread, and how many steps (count
// adds this one) were seen since the fault was selected.
func (d *diskFaults) current(count bool) (diskFault, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := time.Now(); now.Sub(d.read) >= diskFaultReread {
		d.read = now
		b, err := boundedfile.ReadFile(d.path, "fault control file", boundedfile.Small)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			d.log.Warn("FAULT INJECTION: reading the control file", "file", d.path, "err", err)
		}
		if text := strings.TrimSpace(string(b)); text != d.text {
			d.text, d.steps = text, 0
			f, err := parseDiskFault(text)
			if err != nil {
				d.log.Warn("FAULT INJECTION: control file not understood; no disk fault", "file", d.path, "content", text, "err", err)
			} else {
				d.log.Warn("FAULT INJECTION: disk fault selected", "file", d.path, "fault", text)
			}
			d.fault = f
		}
	}
	if count {
		d.steps++
	}
	return d.fault, d.steps
}
