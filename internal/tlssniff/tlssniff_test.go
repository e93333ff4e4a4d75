package tlssniff

import (
	"bytes"
	"io"
	"net"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		first []byte
		tls   bool
	}{
		{[]byte{0x16, 0x03, 0x01}, true},
		{[]byte{0x00, 0x00, 0x00, 0x2c}, false},
		{[]byte("srvr"), false},
	} {
		a, b := net.Pipe()
		go func() { a.Write(tt.first); a.Close() }()
		c, isTLS, err := Detect(b)
		if err != nil || isTLS != tt.tls {
			t.Fatalf("%x: tls=%v err=%v", tt.first, isTLS, err)
		}
		got, err := io.ReadAll(c)
		if err != nil || string(got) != string(tt.first) {
			t.Fatalf("%x: read back %x, %v", tt.first, got, err)
		}
	}
	a, b := net.Pipe()
	a.Close()
	if _, _, err := Detect(b); err == nil {
		t.Fatal("no error on a closed connection")
	}
}

// FuzzDetect: any first bytes are told apart by the first alone, and
// every byte read comes back through the returned connection, in order.
func FuzzDetect(f *testing.F) {
	f.Add([]byte{0x16, 0x03, 0x01})
	f.Add([]byte("ruok"))
	f.Add([]byte{0, 0, 0, 36})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		srv, cli := net.Pipe()
		defer srv.Close()
		go func() {
			cli.Write(in)
			cli.Close()
		}()
		c, isTLS, err := Detect(srv)
		if err != nil {
			t.Fatal(err)
		}
		if isTLS != (in[0] == RecordHandshake) {
			t.Fatalf("first byte %#x: isTLS %v", in[0], isTLS)
		}
		got, _ := io.ReadAll(c)
		if !bytes.Equal(got, in) {
			t.Fatalf("read back %x, sent %x", got, in)
		}
	})
}
