package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/zkgo/zkgo/cmd/zkgo/internal/tlsflags"
)

// runFourLW runs "zkgo fourlw": one four-letter word against a server, its
// answer on stdout, what ZooKeeper's FourLetterWordMain does for
// zkServer.sh status (packaging/zkServer.sh uses it the same way).
func runFourLW(args []string) int {
	fs := flag.NewFlagSet("fourlw", flag.ContinueOnError)
	server := fs.String("server", "127.0.0.1:2181", "server `host:port`")
	timeout := fs.Duration("timeout", 5*time.Second, "time allowed for the whole exchange")
	tlsFlags := tlsflags.AddClientFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: zkgo fourlw [flags] WORD\n\nSends a four-letter word (srvr, ruok, mntr, ...) and prints the answer.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 || len(fs.Arg(0)) != 4 {
		fs.Usage()
		return 2
	}
	cfg, ok := clientTLS("fourlw", tlsFlags)
	if !ok {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	nc, err := dialFourLW(ctx, *server, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo fourlw: %v\n", err)
		return 1
	}
	defer nc.Close()
	if _, err := io.WriteString(nc, fs.Arg(0)); err != nil {
		fmt.Fprintf(os.Stderr, "zkgo fourlw: %v\n", err)
		return 1
	}
	if _, err := io.Copy(os.Stdout, io.LimitReader(nc, 16<<20)); err != nil {
		fmt.Fprintf(os.Stderr, "zkgo fourlw: %v\n", err)
		return 1
	}
	return 0
}

// clientTLS returns the TLS configuration of a client command's TLS flags
// (nil for plaintext), printing the client configuration file's warnings;
// not ok (the error printed) when the flags or files are wrong.
func clientTLS(cmd string, f *tlsflags.ClientFlags) (*tls.Config, bool) {
	cfg, warnings, err := f.Config()
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "zkgo %s: %s\n", cmd, w)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo %s: TLS: %v\n", cmd, err)
		return nil, false
	}
	return cfg, true
}

// dialFourLW connects to a server's client port to send a four-letter
// word (fourlw, top): over TLS when cfg is not nil, checking the name of
// addr's host unless cfg names a server. The connection's deadline is
// ctx's.
func dialFourLW(ctx context.Context, addr string, cfg *tls.Config) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		cfg = cfg.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	return nc, nil
}
