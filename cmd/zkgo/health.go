package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// runHealth is "zkgo health": the container image's HEALTHCHECK (the image
// has no shell and no nc) and a probe for service managers. It sends ruok
// (which 4lw.commands.whitelist must allow) and exits 0 on "imok", 1
// otherwise; with -serving it sends srvr and also wants the member to be
// serving (part of a quorum, or standalone), as zkServer.sh status does.
func runHealth(args []string) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	addr := fs.String("server", "127.0.0.1:2181", "client `host:port` of the server to ask")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	serving := fs.Bool("serving", false, "also require the server to be serving requests (srvr prints its Mode; needs srvr in 4lw.commands.whitelist)")
	quiet := fs.Bool("q", false, "print nothing on success")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo health [flags]

Exits 0 if the server answers ruok with imok, 1 otherwise (a container
HEALTHCHECK or a service manager's probe). ruok must be in the server's
4lw.commands.whitelist.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	out, err := zk.FourLetterWord(ctx, *addr, "ruok")
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo health: %s: %v\n", *addr, err)
		return 1
	}
	if out != "imok" {
		fmt.Fprintf(os.Stderr, "zkgo health: %s answered ruok with %q, not imok (is ruok in 4lw.commands.whitelist?)\n", *addr, strings.TrimSpace(out))
		return 1
	}
	mode := ""
	if *serving {
		out, err := zk.FourLetterWord(ctx, *addr, "srvr")
		if err != nil {
			fmt.Fprintf(os.Stderr, "zkgo health: %s: srvr: %v\n", *addr, err)
			return 1
		}
		for _, l := range strings.Split(out, "\n") {
			if m, ok := strings.CutPrefix(l, "Mode: "); ok {
				mode = strings.TrimSpace(m)
			}
		}
		if mode == "" {
			fmt.Fprintf(os.Stderr, "zkgo health: %s is not serving: %s\n", *addr, strings.TrimSpace(out))
			return 1
		}
	}
	if !*quiet {
		if mode != "" {
			fmt.Printf("imok (%s)\n", mode)
		} else {
			fmt.Println("imok")
		}
	}
	return 0
}
