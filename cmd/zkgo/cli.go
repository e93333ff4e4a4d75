package main

import (
	"os"

	"github.com/zkgo/zkgo/cmd/zkgo/internal/zkcli"
)

// runCLI runs "zkgo cli": a zkCli.sh-compatible shell, or one command with
// "zkgo cli -server ADDR COMMAND ARGS". See package zkcli.
//
// zkcli.Main parses the flags itself, with Go's fs.Parse, which stops at
// COMMAND: what parseArgs(fs, args, 1) does (args.go). COMMAND's own
// options (create /a -e) are zkCli's, never zkgo's flags, so the cli's
// flags go before COMMAND only.
func runCLI(args []string) int {
	return zkcli.Main(args, os.Stdin, os.Stdout, os.Stderr, version)
}
