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

	"github.com/zkgo/zkgo/internal/tlsconf"
)

// runFourLW runs "zkgo fourlw": one four-letter word against a server, its
// answer on stdout, what ZooKeeper's FourLetterWordMain does for
// zkServer.sh status (packaging/zkServer.sh uses it the same way).
func runFourLW(args []string) int {
	fs := flag.NewFlagSet("fourlw", flag.ContinueOnError)
	server := fs.String("server", "127.0.0.1:2181", "server `host:port`")
	timeout := fs.Duration("timeout", 5*time.Second, "time allowed for the whole exchange")
	tlsFlags := tlsconf.AddClientFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: zkgo fourlw [flags] WORD\n\nSends a four-letter word (srvr, ruok, mntr, ...) and prints the answer.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 || len(fs.Arg(0)) != 4 {
		fs.Usage()
		return 2
	}
	cfg, warnings, err := tlsFlags.Config()
	for _, w := range warnings {
		fmt.Fprintf(os.Stderr, "zkgo fourlw: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo fourlw: TLS: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", *server)
	if err == nil && cfg != nil {
		host, _, _ := net.SplitHostPort(*server)
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err = tc.HandshakeContext(ctx); err != nil {
			nc.Close()
		}
		nc = tc
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo fourlw: %v\n", err)
		return 1
	}
	defer nc.Close()
	dl, _ := ctx.Deadline()
	nc.SetDeadline(dl)
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
