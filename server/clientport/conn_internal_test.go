package clientport

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// peerGone tells a client that closed its connection after its connect
// request (one left in a paused member's accept queue) from one that
// waits for the reply or has pipelined more requests.
func TestPeerGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	request := []byte("connect-request")
	for _, tt := range []struct {
		name  string
		after func(c net.Conn) // what the client does after its request
		want  bool
	}{
		{"closed", func(c net.Conn) { c.Close() }, true},
		{"waiting", func(c net.Conn) {}, false},
		{"pipelined and closed", func(c net.Conn) { c.Write([]byte("more")); c.Close() }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			if _, err := client.Write(request); err != nil {
				t.Fatal(err)
			}
			tt.after(client)
			br := bufio.NewReaderSize(server, 512)
			if _, err := io.ReadFull(br, make([]byte, len(request))); err != nil {
				t.Fatal(err)
			}
			if tt.want {
				// The client's close reaches the server's socket: wait for
				// it (a read that sees the end), without consuming data.
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					if peerGone(server, br, time.Minute) {
						return
					}
					if time.Now().After(deadline) {
						t.Fatal("peerGone never saw the client's close")
					}
				}
			}
			if peerGone(server, br, time.Minute) {
				t.Fatal("peerGone: true for a client that is still there")
			}
			// The handshake deadline is back, and what was pipelined is
			// still there to read.
			if tt.name == "pipelined and closed" {
				more := make([]byte, 4)
				if _, err := io.ReadFull(br, more); err != nil || string(more) != "more" {
					t.Fatalf("pipelined bytes after peerGone: %q, %v", more, err)
				}
			}
		})
	}
}

func TestParkAfter(t *testing.T) {
	const idle = 250 * time.Millisecond
	for _, c := range []struct {
		since, want time.Duration
	}{
		{0, 4 * idle},
		{100 * time.Millisecond, 4 * idle},
		{999 * time.Millisecond, 4 * idle},
		{time.Second, idle},
		{10 * time.Second, idle},
		{time.Duration(1<<63 - 1), idle}, // the first wait: no wait before
	} {
		if got := parkAfter(idle, c.since); got != c.want {
			t.Errorf("parkAfter(%v, %v) = %v, want %v", idle, c.since, got, c.want)
		}
	}
}
