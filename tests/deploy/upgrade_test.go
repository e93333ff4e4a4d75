package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/acl"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zk"
)

// Upgrade paths an operator takes with Apache ZooKeeper, run the same way
// on zkgo.

// A standalone server becomes the first member of a 3-member ensemble:
// started with the ensemble's zoo.cfg while the two others are down, it
// serves nothing (a standalone's data must not lead alone: the two others
// could form without it); once they start with empty data directories,
// they join, receive its data, and the ensemble serves it.
func TestStandaloneToEnsemble(t *testing.T) {
	eachImpl(t, 3*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		_, ms := threeMachines(t, false)
		ensembleCfg := lines(1, ms[0].ip4, ms[1].ip4, ms[2].ip4)
		e := configure(t, im, ms, 1, func(int) string { return ensembleCfg })
		// Standalone first: no server lines.
		e[0].writeConfig("")
		e[0].start()
		e.waitLeader(ctx, t)
		c := connect(ctx, t, e[0])
		for i := range 10 {
			if _, err := c.Create(ctx, fmt.Sprintf("/standalone-%d", i), []byte("s"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		e[0].kill()

		e[0].writeConfig(ensembleCfg)
		e[0].start()
		// Alone, it must not serve: wait until it answers srvr, then
		// a while longer (the others' absence is what is tested).
		for {
			out, err := e[0].fourLetterWord(ctx, "srvr")
			if err == nil && out != "" {
				if strings.Contains(out, "Mode: leader") || strings.Contains(out, "Mode: standalone") {
					t.Fatalf("%s: the standalone's data leads alone as member 1 of 3:\n%s", im, out)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: srvr: %v", im, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // ten election timeouts of both
		if mode := e[0].mode(ctx); mode != "" {
			t.Fatalf("%s: alone, member 1 is %q", im, mode)
		}
		e[1].start()
		e[2].start()
		lead := e.waitLeader(ctx, t)
		writeThenRead(ctx, t, lead, e[2], "/ensemble")
		c3 := connect(ctx, t, e[2])
		if _, err := c3.Sync(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c3.Get(ctx, "/standalone-9"); err != nil {
			t.Fatalf("%s: the standalone's data on member 3: %v", im, err)
		}
	})
}

// A session expires one timeout after its client was last heard from,
// whether or not the connection closed since: a client silent for most
// of its timeout whose socket then closes loses its ephemeral node at the
// end of that timeout, not one timeout after the close. Measured on both
// servers, each checked against its own timeout.
func TestSessionExpiresAfterLastHeard(t *testing.T) {
	eachImpl(t, 2*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		n := newNetwork(t, false)
		mb := newMember(t, im, n.addMachine(1), 1)
		mb.writeConfig("")
		mb.start()
		ensemble{mb}.waitLeader(ctx, t)
		const timeout = 4 * time.Second
		watcher := connect(ctx, t, mb)
		// A client that sends nothing after its create (a raw
		// session: no pings), its connection left open.
		silent, err := rawzk.Dial(mb.clientAddr(), rawzk.Options{Timeout: timeout, Dial: n.dial})
		if err != nil {
			t.Fatal(err)
		}
		if hdr, err := silent.Call(proto.OpCreate, &proto.CreateRequest{Path: "/eph", ACL: acl.OpenACLUnsafe, Flags: proto.ModeEphemeral}, &proto.CreateResponse{}); err != nil || hdr.Err != 0 {
			t.Fatalf("create: %v %v", hdr.Err, err)
		}
		_, ev, err := watcher.ExistsW(ctx, "/eph")
		if err != nil {
			t.Fatal(err)
		}
		lastHeard := time.Now()
		time.Sleep(timeout * 6 / 10)
		silent.Close() // the socket closes: the server sees EOF
		select {
		case e := <-ev:
			gone := time.Since(lastHeard)
			t.Logf("%s: the ephemeral went %v after the client was last heard from (timeout %v)", im, gone.Round(10*time.Millisecond), timeout)
			if e.Type != zk.EventNodeDeleted {
				t.Fatalf("event %v", e.Type)
			}
			// One timeout after it was last heard, plus the expiry
			// check's granularity; a timeout restarted at the close
			// would be 1.6 timeouts.
			if gone > timeout*13/10 {
				t.Fatalf("%s: the session outlived its client by %v past the timeout", im, gone-timeout)
			}
		case <-ctx.Done():
			t.Fatal(errors.New("the ephemeral never went"))
		}
	})
}

// A member restarted with an older zoo.cfg: the ensemble grew by a
// reconfig (server 4), and member 1 comes back with the static file it
// had before (servers 1 to 3, no dynamic file). The membership in the
// ensemble's log wins: member 1 knows server 4, as Apache ZooKeeper's
// member learns the newer configuration from its leader.
func TestRestartWithOlderZooCfg(t *testing.T) {
	eachImpl(t, 3*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		_, e, lines := reconfigMachines(t, im, 4)
		old := reconfigCommon + strings.Join(lines[:3], "\n")
		for _, mb := range e[:3] {
			mb.writeConfig(old)
			mb.start()
		}
		e[:3].waitLeader(ctx, t)
		c := connect(ctx, t, e[1], e[2])
		if _, _, err := c.IncrementalReconfig(ctx, []string{lines[3]}, nil, -1); err != nil {
			t.Fatal(err)
		}
		e[3].writeConfig(reconfigCommon + strings.Join(lines, "\n"))
		e[3].start()
		e.waitLeader(ctx, t)
		writeThenRead(ctx, t, e[3], e[0], "/grown")
		// Member 1 restarted with its first zoo.cfg (the dynamic
		// file its server wrote is dropped: the file as it was).
		e[0].kill()
		e[0].writeConfig(old)
		e[0].start()
		e.waitLeader(ctx, t)
		writeThenRead(ctx, t, e[3], e[0], "/after-restart")
		c1 := connect(ctx, t, e[0])
		var data []byte
		for {
			if _, err := c1.Sync(ctx, "/zookeeper/config"); err == nil {
				if d, _, err := c1.GetConfig(ctx); err == nil {
					data = d
					if strings.Contains(string(d), "server.4=") {
						break
					}
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: member 1's /zookeeper/config after a restart with the older zoo.cfg:\n%s", im, data)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
