package main

import (
	"os"

	"github.com/zkgo/zkgo/internal/zkcli"
)

// runCLI runs "zkgo cli": a zkCli.sh-compatible shell, or one command with
// "zkgo cli -server ADDR COMMAND ARGS". See package zkcli.
func runCLI(args []string) int {
	return zkcli.Main(args, os.Stdin, os.Stdout, os.Stderr, version)
}
