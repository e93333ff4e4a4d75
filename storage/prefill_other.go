//go:build !linux

package storage

import (
	"errors"
	"os"
)

// prefillSupported: elsewhere the prefiller does not run (see
// prefill_linux.go).
const prefillSupported = false

// nextHole treats the whole rest of the file as a candidate; fillChunk
// still writes only over zeros.
func nextHole(f *os.File, off, size int64) (start, end int64, err error) {
	return off, size, nil
}

// openDirect: no O_DIRECT here (the prefiller does not run anyway).
func openDirect(string) (*os.File, error) { return nil, errors.ErrUnsupported }
