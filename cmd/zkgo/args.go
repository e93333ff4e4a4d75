package main

import (
	"flag"
	"strings"
)

// Flags and positional arguments: every subcommand parses its arguments
// with parseArgs, which takes flags before, between and after the
// positional arguments (Go's fs.Parse stops at the first positional
// argument, so "zkgo import DIR -data-dir X" would be refused). Each
// subcommand uses one of two modes:
//
// Flags anywhere (parseArgs(fs, args, 0)): server [zoo.cfg], import
// [ZK_DATA_DIR [ZK_DATA_LOG_DIR]], export OUT_DIR, snapshot save [DIR],
// snapshot status FILE, snapshot restore FILE, fourlw WORD, bench
// WORKLOAD, and the commands without positional arguments: health, top,
// torture, version, and container, whose positional arguments are the
// server flags after "--" (zkgo container -template F -- -addr :2181).
// A directory or file whose name starts with '-' goes after "--" (or as
// ./-name).
//
// Flags up to a command (parseArgs(fs, args, n)): the n-th positional
// argument starts a command line of another program, which is passed on
// whole, flags included:
//   - lock and elect (n = 2): PATH, then COMMAND [ARGS...]; flags may come
//     before or after PATH, up to COMMAND or the "--" before it:
//     zkgo lock /app/lock -wait 5s -- cmd -x.
//   - cli (n = 1): its COMMAND ARGS are a zkCli command line
//     (zkgo cli -server H create /a -e): flags only before COMMAND. The
//     cli parses its own flags in package zkcli with Go's fs.Parse, which
//     is exactly this mode with n = 1.

// parseArgs parses args with fs (whose errors, such as an unknown flag,
// are reported as fs.Parse reports them, with fs's usage) and leaves the
// positional arguments, in their order, in fs.Args().
//
// Flags may come before, between and after the positional arguments, as
// -name, --name, -name=value, --name=value or -name value (a boolean
// flag takes no separate value: -v x is the flag and the positional x).
// "--" ends the flags: every argument after it is positional, even one
// starting with '-'. "-" alone and "" are positional.
//
// If command > 0, the command-th positional argument and every argument
// after it are positional: the command line of another program, not
// zkgo's flags. 0 means no such command.
func parseArgs(fs *flag.FlagSet, args []string, command int) error {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			if command > 0 && len(pos)+1 >= command {
				pos = append(pos, args[i:]...)
				break
			}
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(fs, a) {
			if i+1 == len(args) {
				// "flag needs an argument", as fs.Parse says it.
				return fs.Parse(flags)
			}
			i++
			flags = append(flags, args[i])
		}
	}
	// fs.Parse reads the flags in order, stops at "--" and keeps what
	// follows as fs.Args().
	return fs.Parse(append(append(flags, "--"), pos...))
}

// takesValue reports whether the flag argument a ("-name" or "--name")
// names one of fs's flags that reads its value from the next argument:
// not a boolean flag, and no "=value" in a. A malformed or unknown flag
// takes none (fs.Parse reports it).
func takesValue(fs *flag.FlagSet, a string) bool {
	name := a[1:]
	if name[0] == '-' {
		name = name[1:]
	}
	if name == "" || name[0] == '-' || name[0] == '=' || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}
