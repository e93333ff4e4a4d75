package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/zkgo/zkgo/recipe/leader"
	"github.com/zkgo/zkgo/zk"
)

// rejoinPause is how long "zkgo elect" waits before rejoining after a term
// in which the command failed within rejoinPause of starting, so that a
// command that cannot start does not make the leadership flap.
const rejoinPause = time.Second

func runElect(args []string) int {
	r := &runner{name: "elect"}
	fs := flag.NewFlagSet("elect", flag.ContinueOnError)
	finish := r.connFlags(fs)
	id := fs.String("id", "", "participant id, stored in the election node (default HOSTNAME-PID)")
	once := fs.Bool("once", false, "exit after the first term (the command exited, or leadership was lost) instead of rejoining the election")
	list := fs.Bool("list", false, "print the participants of the election at PATH, leader first, and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo elect [flags] PATH [flags] -- COMMAND [ARGS...]
       zkgo elect [-server ...] -list PATH

Joins the leader election at PATH (Apache Curator's LeaderLatch layout:
PATH/_c_<uuid>-latch-<seq>, data = id) and runs COMMAND while this process
is the leader. COMMAND finds in its environment ZKGO_FENCING_TOKEN (larger
than that of every earlier leader), ZKGO_LEADER_PATH (our election node)
and ZKGO_LEADER_ID.

When COMMAND exits, zkgo leaves the election (the next participant leads)
and joins again at the end of the queue; with -once it exits with
COMMAND's status instead. If leadership is lost (connection suspended,
session expired, node deleted) COMMAND's process group gets SIGTERM, then
SIGKILL after the grace period, which ends before the server can make
another participant leader; zkgo then rejoins (with -once: exits with
status 4). SIGINT, SIGTERM and SIGHUP sent to zkgo are forwarded to
COMMAND's process group (as are SIGQUIT, SIGUSR1 and SIGUSR2); zkgo leaves
the election and exits once COMMAND has exited. COMMAND runs in a process
group of its own; if zkgo dies (even by kill -9) the group is killed.

-list prints one line per participant, in order: "leader" or "waiting",
the id and the node path, separated by tabs.

Exit status: COMMAND's (128+n if it was killed by signal n) when it ends
the run; 1 connection error; 2 usage error; 4 leadership was lost and
COMMAND stopped; 126/127 COMMAND cannot be run / was not found; 128+n if
zkgo got signal n while waiting to lead.

Flags go before or after PATH; from COMMAND on (or the -- before it)
every argument is COMMAND's.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 2); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if !finish() {
		return exitUsage
	}
	if *list {
		if fs.NArg() != 1 {
			r.errorf("-list takes exactly one PATH")
			return exitUsage
		}
		if err := checkPath(fs.Arg(0)); err != nil {
			r.errorf("%v", err)
			return exitUsage
		}
		return r.list(fs.Arg(0))
	}
	path, argv, err := splitCommand(fs.Args())
	if err != nil {
		r.errorf("%v", err)
		fs.Usage()
		return exitUsage
	}
	if _, code := r.command(argv); code != 0 {
		return code
	}
	if *id == "" {
		*id = defaultID()
	}
	r.notify()

	sigCtx, stopSignals := r.untilSignal(context.Background())
	conn, err := r.connect(sigCtx)
	if err != nil {
		if s := stopSignals(); s != nil {
			r.errorf("interrupted (%v) while connecting", s)
			return signalStatus(s)
		}
		r.errorf("%v", err)
		return exitConn
	}
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	// reconnect replaces a Conn whose session ended.
	reconnect := func(ctx context.Context) int {
		conn.Close()
		conn, err = r.connect(ctx)
		if err != nil {
			if s := stopSignals(); s != nil {
				r.errorf("interrupted (%v) while reconnecting", s)
				return signalStatus(s)
			}
			r.errorf("the session ended and %v", err)
			return exitConn
		}
		return 0
	}

	for {
		latch := leader.NewLatch(conn, path, *id)
		if err := latch.Start(); err != nil {
			r.errorf("%v", err)
			return exitConn
		}
		g, err := latch.Await(sigCtx)
		if err != nil {
			latch.Close(context.Background())
			if sigCtx.Err() != nil {
				s := stopSignals()
				r.errorf("interrupted (%v) while waiting to lead %s", s, path)
				return signalStatus(s)
			}
			if sessionGone(err) || conn.State() == zk.StateLost {
				if code := reconnect(sigCtx); code != 0 {
					return code
				}
				continue
			}
			stopSignals()
			r.errorf("joining the election at %s: %v", path, err)
			return exitConn
		}
		if s := stopSignals(); s != nil {
			latch.Close(context.Background())
			r.errorf("interrupted (%v) while taking the leadership of %s", s, path)
			return signalStatus(s)
		}
		cmd, code := r.command(argv)
		if cmd == nil {
			latch.Close(context.Background())
			return code
		}
		grace := r.graceFor(conn)
		started := time.Now()
		out, err := r.supervise(cmd, []string{
			"ZKGO_FENCING_TOKEN=" + strconv.FormatInt(g.Token(), 10),
			"ZKGO_LEADER_PATH=" + g.Path(),
			"ZKGO_LEADER_ID=" + *id,
		}, g, grace)
		if err != nil {
			latch.Close(context.Background())
			r.errorf("%v", err)
			return exitNoExec
		}
		if out.lost && (out.sig != nil || *once) {
			// Closing the session (deferred) removes our node if the
			// server still has it; Close could wait for a reconnection.
			return exitLost
		}
		// Leave the election (deleting our node), so that the next
		// participant leads at once.
		latch.Close(context.Background())
		if out.sig != nil || *once {
			return out.status
		}

		sigCtx, stopSignals = r.untilSignal(context.Background())
		if out.lost {
			r.errorf("rejoining the election at %s", path)
			if s := conn.State(); s == zk.StateLost || s == zk.StateClosed {
				if code := reconnect(sigCtx); code != 0 {
					return code
				}
			}
			continue
		}
		if out.status != 0 {
			r.errorf("the command exited with status %d; rejoining the election at %s", out.status, path)
			if time.Since(started) < rejoinPause {
				t := time.NewTimer(rejoinPause)
				select {
				case <-t.C:
				case <-sigCtx.Done():
					t.Stop()
					s := stopSignals()
					return signalStatus(s)
				}
			}
		}
	}
}

// list prints the election's participants, leader first.
func (r *runner) list(path string) int {
	ctx := context.Background()
	conn, err := r.connect(ctx)
	if err != nil {
		r.errorf("%v", err)
		return exitConn
	}
	defer conn.Close()
	ps, err := leader.NewLatch(conn, path, "").Participants(ctx)
	if err != nil {
		r.errorf("listing %s: %v", path, err)
		return exitConn
	}
	for _, p := range ps {
		role := "waiting"
		if p.Leader {
			role = "leader"
		}
		fmt.Printf("%s\t%s\t%s\n", role, p.ID, p.Path)
	}
	return 0
}
