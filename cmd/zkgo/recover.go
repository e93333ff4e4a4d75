package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/zkgo/zkgo/server"
)

// runRecover is zkgo recover: after an ensemble lost a majority of its
// members for good, one stopped survivor's data becomes a new ensemble's
// (server.RecoverDataDir says how).
func runRecover(args []string) int {
	fs := flag.NewFlagSet("recover", flag.ContinueOnError)
	target := addTargetFlags(fs, "recover")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, `Usage: zkgo recover -config zoo.cfg

After an ensemble has lost a majority of its members for good, it can
never commit again. Run this on one surviving member, stopped: its data
(every entry its log holds, applied) becomes a standalone server's, and
its old data is kept beside it as zkgo.before-recovery-<time>. Then
start the member again:
  - with the same zoo.cfg: it converts the data into a new ensemble's
    (a new formation: the lost members' data can never rejoin it) and
    waits for a majority; start new members with empty data directories
    at the lost ones' addresses: they join it and receive its state;
  - or with a zoo.cfg listing it alone (standaloneEnabled=false,
    reconfigEnabled=true): it serves at once; add members by reconfig.
Pick the survivor that holds the most (lgif's last_log_idx, or the
largest zxid in srvr) when there are several.

`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 0 || *target.config == "" {
		fs.Usage()
		return 2
	}
	opts, _, err := target.options()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo recover:", err)
		return 2
	}
	t, kept, err := server.RecoverDataDir(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo recover:", err)
		return 1
	}
	fmt.Printf("recovered %d znodes up to zxid 0x%x; the old data is in %s\n", t.NodeCount(), t.LastZxid(), kept)
	fmt.Println("start the member again (zkgo recover -help says how the ensemble grows back)")
	return 0
}
