// Package boundedfile reads whole files that must be small (configuration
// files, myid, password files, certificate bundles) without trusting their
// size: a path pointing at /dev/zero, a FIFO or a huge file gets an error
// naming the file and the limit once the limit is passed, instead of
// reading until memory runs out.
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is wrapped by the error of a file past its limit.
var ErrTooLarge = errors.New("file too large")

// Common limits.
const (
	// Config bounds configuration files: zoo.cfg, the dynamic
	// configuration file, client configuration files.
	Config = 1 << 20
	// Small bounds files of a line or so: myid, password files.
	Small = 64 << 10
	// Certs bounds certificate and key stores.
	Certs = 16 << 20
)

// ReadFile reads the file at path, which may hold at most limit bytes;
// what names the file's role in the error ("dynamicConfigFile").
func ReadFile(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, what, limit)
}

// Read reads r to its end, at most limit bytes of it; name and what
// describe it in the error.
func Read(r io.Reader, name, what string, limit int64) ([]byte, error) {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > limit {
			return nil, tooLarge(name, what, limit)
		}
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(name, what, limit)
	}
	return data, nil
}

func tooLarge(name, what string, limit int64) error {
	return fmt.Errorf("%s: %w: the %s may hold at most %d bytes", name, ErrTooLarge, what, limit)
}
