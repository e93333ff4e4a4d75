package zkcli

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/zkgo/zkgo/recipe/cache"
)

// untimed names the commands that run until interrupted rather than
// within the command timeout.
var untimed = map[string]bool{"watch": true}

// cmdWatch is "watch path [-R]" (zkgo only): it follows the node (with -R,
// the subtree) with a recipe/cache NodeCache (TreeCache) and prints its
// events, one line each, until interrupted (Ctrl-C) or the cache stops.
// The initial state comes first (Created lines, then Initialized).
func cmdWatch(s *Shell, ctx context.Context, c *command, args []string) error {
	cl, err := parseOpts(args, []optDef{{"R", false, "recurse"}}, nil)
	if err != nil {
		return parseFail(err)
	}
	if cl.nargs() != 2 {
		return c.usage()
	}
	path := cl.arg(1)
	if err := checkPath(path, false); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	conn := s.live()
	var (
		events <-chan cache.Event
		start  func(context.Context) error
		end    func() error
	)
	if cl.has("R") {
		tc := cache.NewTree(conn, path)
		events, start, end = tc.Events(), tc.Start, tc.Close
	} else {
		nc := cache.NewNode(conn, path)
		events, start, end = nc.Events(), nc.Start, nc.Close
	}
	defer end()
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				if err := <-done; err != nil && ctx.Err() == nil {
					return zkFail(err, path)
				}
				return nil
			}
			s.outf("%s\n", formatCacheEvent(ev))
			if ev.Type == cache.Stopped {
				return silent()
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// formatCacheEvent writes a cache event on one line: the type, the path,
// the zxid in hex (as stat prints zxids), and for a node's new state its
// version and data (quoted).
func formatCacheEvent(ev cache.Event) string {
	switch ev.Type {
	case cache.Created, cache.Changed:
		return fmt.Sprintf("%v %s zxid:0x%x version:%d data:%q", ev.Type, ev.Path, ev.Zxid, ev.Stat.Version, ev.Data)
	case cache.Deleted:
		return fmt.Sprintf("%v %s zxid:0x%x", ev.Type, ev.Path, ev.Zxid)
	case cache.Initialized, cache.Resynced:
		return fmt.Sprintf("%v zxid:0x%x", ev.Type, ev.Zxid)
	case cache.Error:
		return fmt.Sprintf("%v %s: %v", ev.Type, ev.Path, ev.Err)
	case cache.Lost, cache.Stopped:
		return fmt.Sprintf("%v: %v", ev.Type, ev.Err)
	}
	return ev.Type.String()
}
