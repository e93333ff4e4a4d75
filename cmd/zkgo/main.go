// Command zkgo is a ZooKeeper-compatible coordination service.
//
//	zkgo server [flags] [zoo.cfg]   run a server
//	zkgo cli [flags] [CMD ARGS]     a zkCli.sh-compatible shell, or one command
//	zkgo lock [flags] PATH -- CMD   run a command while holding a distributed lock
//	zkgo elect [flags] PATH -- CMD  run a command while leader of an election
//	zkgo bench [flags] WORKLOAD     benchmark a ZooKeeper-compatible server
//	zkgo import [flags] [ZK_DATA_DIR] an Apache ZooKeeper data directory into a zkgo one
//	zkgo export [flags] OUT_DIR     a stopped member's tree as an Apache ZooKeeper snapshot
//	zkgo snapshot status|restore    snapshot files (Apache ZooKeeper's format)
//	zkgo recover -config zoo.cfg    after the loss of a majority for good: a survivor's data, a new ensemble's
//	zkgo fourlw [flags] WORD        a four-letter word, as zkServer.sh status sends it
//	zkgo torture [flags]            faults against a local ensemble, checked (build with -tags zkgofaults)
//	zkgo health [flags]             exit 0 if the server answers ruok with imok
//	zkgo top [flags]                members' live numbers (mntr), one row each, refreshed
//	zkgo container [-- SERVER FLAGS] a container's entrypoint (ZOO_* variables as the official image's)
//	zkgo version [-short]           the version, commit and build time
//
// Run "zkgo help" or "zkgo COMMAND -help" for details.
//
// Flags may come before or after a command's arguments (zkgo import
// ZK_DATA_DIR -data-dir DIR); "--" ends them. lock and elect read none from
// their COMMAND on, cli none from its zkCli command on (args.go).
package main

import (
	"fmt"
	"os"
)

type command struct {
	name    string
	summary string
	run     func(args []string) int
}

var commands []command

func init() {
	commands = []command{
		{"server", "run a ZooKeeper-compatible server (standalone; reads an unchanged zoo.cfg)", runServer},
		{"cli", "a zkCli.sh-compatible shell; one-shot: zkgo cli -server ADDR COMMAND ARGS", runCLI},
		{"lock", "run a command while holding a distributed lock", runLock},
		{"elect", "run a command while leader of an election", runElect},
		{"bench", "benchmark a ZooKeeper-compatible server (workloads: get, set, create, ...)", runBench},
		{"import", "import an Apache ZooKeeper data directory into a zkgo one", runImport},
		{"export", "export a stopped member's tree as an Apache ZooKeeper snapshot", runExport},
		{"snapshot", "status and restore of snapshot files (Apache ZooKeeper's format)", runSnapshot},
		{"recover", "after the loss of a majority for good: one survivor's data becomes a new ensemble's", runRecover},
		{"fourlw", "send a four-letter word (srvr, ruok, mntr, ...) and print the answer", runFourLW},
		{"torture", "inject faults into a local ensemble while checkers watch the clients (needs -tags zkgofaults)", runTorture},
		{"top", "a terminal view of a member's or an ensemble's live numbers (mntr), refreshed", runTop},
		{"health", "exit 0 if a server answers ruok with imok (a container or service health check)", runHealth},
		{"container", "a container's entrypoint: zoo.cfg and myid from the official image's ZOO_* variables, then the server", runContainer},
		{"version", "print the version, the commit it was built from and what srvr reports", runVersion},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, `zkgo %s — a ZooKeeper-compatible coordination service

Usage:
  zkgo COMMAND [flags] [arguments]

Commands:
`, version)
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, `
Flags may come before or after a command's arguments; "--" ends them.
lock and elect read none from the command they run on, cli none from its
zkCli command on.

Run "zkgo COMMAND -help" for the flags of a command.
`)
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage()
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:])
		}
	}
	fmt.Fprintf(os.Stderr, "zkgo: unknown command %q\n\n", args[0])
	usage()
	return 2
}
