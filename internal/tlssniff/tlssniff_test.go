package tlssniff

import (
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
