package linearize

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// OutEnv names the environment variable that sets the directory where
// Require writes visualizations; unset, it makes a directory under the
// system's temporary directory (not t.TempDir, which is removed when the
// test ends, with the file).
const OutEnv = "ZKGO_LIN_OUT"

// Check reports whether history (from Recorder.History) is linearizable
// under Model: Ok, Illegal, or Unknown if the search took longer than
// timeout (0: no limit).
func Check(history []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(Model, history, timeout)
}

// Visualize writes porcupine's visualization of history — every
// operation, per path, with the longest linearization found (the point
// where it fails, on a history that is not linearizable) — to a new HTML
// file in dir and returns its path.
func Visualize(history []porcupine.Operation, dir string, timeout time.Duration) (string, error) {
	_, info := porcupine.CheckOperationsVerbose(Model, history, timeout)
	f, err := os.CreateTemp(dir, "linearize-*.html")
	if err != nil {
		return "", err
	}
	if err := porcupine.Visualize(Model, info, f); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// visualizeTimeout bounds the search for the partial linearizations that
// Require's visualization shows: on a history that is not linearizable
// it can take much longer than the check itself.
const visualizeTimeout = 10 * time.Second

// Require fails t unless history is linearizable. A history that is not
// gets its visualization written to a file in $ZKGO_LIN_OUT (or a new
// temporary directory), named in the failure. A check that takes longer
// than timeout (0: no limit) fails as inconclusive.
func Require(t testing.TB, history []porcupine.Operation, timeout time.Duration) {
	t.Helper()
	switch res := Check(history, timeout); res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		t.Fatalf("linearizability check of %d operations inconclusive after %v", len(history), timeout)
	default:
		path, err := visualizeOut(history, visualizeTimeout)
		if err != nil {
			t.Fatalf("history of %d operations is not linearizable (visualization not written: %v)", len(history), err)
		}
		t.Fatalf("history of %d operations is not linearizable; visualization: %s", len(history), path)
	}
}

func visualizeOut(history []porcupine.Operation, timeout time.Duration) (string, error) {
	dir := os.Getenv(OutEnv)
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "zkgo-lin-"); err != nil {
			return "", err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", OutEnv, err)
	}
	return Visualize(history, dir, timeout)
}

// Writes returns history without its reads: what Apache ZooKeeper is
// checked on, since its sync-then-read may answer from a member that has
// not yet applied a write another session saw acknowledged (sync is not
// a quorum operation there; see StaleReads).
func Writes(history []porcupine.Operation) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range history {
		if op.Input.(Input).Kind != Get {
			out = append(out, op)
		}
	}
	return out
}

// StaleReads counts the reads in history that answered an older state of
// their znode than an operation that had returned before the read was
// called had seen or made: absent after a create, or a data version
// below one already read or written. Such a read alone makes a history
// not linearizable.
func StaleReads(history []porcupine.Operation) int {
	// known: every answered state of a znode, as a version, and when
	// its operation returned.
	type seen struct {
		key     string
		ret     int64
		version int32
	}
	var known []seen
	for _, op := range history {
		in, out := op.Input.(Input), op.Output.(Output)
		if v, ok := versionOf(in, out); ok && v >= 0 {
			known = append(known, seen{in.Key, op.Return, v})
		}
	}
	stale := 0
	for _, op := range history {
		in, out := op.Input.(Input), op.Output.(Output)
		v, ok := versionOf(in, out)
		if in.Kind != Get || !ok {
			continue
		}
		for _, k := range known {
			if k.key == in.Key && k.ret < op.Call && k.version > v {
				stale++
				break
			}
		}
	}
	return stale
}

// versionOf is the data version an answered operation saw or made: -1
// for a read of an absent node, 0 for a create.
func versionOf(in Input, out Output) (int32, bool) {
	switch {
	case in.Kind == Get && out.Status == NoNode:
		return -1, true
	case out.Status != OK:
		return 0, false
	case in.Kind == Create:
		return 0, true
	default:
		return out.Version, true
	}
}
