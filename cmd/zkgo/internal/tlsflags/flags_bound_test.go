package tlsflags

import (
	"errors"
	"flag"
	"os"
	"testing"

	"github.com/zkgo/zkgo/internal/boundedfile"
)

// The PEM files of the client flags are read with a bound: a file that
// never ends is an error, not a read until memory runs out.
func TestClientFlagsBoundFiles(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	for _, args := range [][]string{
		{"-tls-ca", "/dev/zero"},
		{"-tls-cert", "/dev/zero", "-tls-key", "/dev/zero"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f := AddClientFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.Config(); !errors.Is(err, boundedfile.ErrTooLarge) {
			t.Errorf("%v: err = %v", args, err)
		}
	}
}
