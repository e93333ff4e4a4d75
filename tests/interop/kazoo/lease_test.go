package kazoo_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/lease"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// leaseScript tries one kazoo lease (NonBlockingLease, or with a count
// MultiNonBlockingLease) at a given clock and prints OBTAINED or NOT.
const leaseScript = `
import sys, datetime, logging
logging.basicConfig(level=logging.ERROR)
from kazoo.client import KazooClient
hosts, kind, path, ident, secs, now = sys.argv[1:7]
t = datetime.datetime.utcfromtimestamp(float(now))
zk = KazooClient(hosts=hosts, timeout=10)
zk.start(timeout=20)
d = datetime.timedelta(seconds=int(secs))
if kind == "single":
    l = zk.NonBlockingLease(path, d, identifier=ident, utcnow=lambda: t)
else:
    l = zk.MultiNonBlockingLease(int(kind), path, d, identifier=ident, utcnow=lambda: t)
print("OBTAINED" if l else "NOT")
zk.stop()
`

// TestLeaseWithKazoo: a lease kazoo takes is held for recipe/lease, and
// one Go takes is held for kazoo, each until its expiry; the records are
// byte for byte the same format. Clocks are passed to both sides.
func TestLeaseWithKazoo(t *testing.T) {
	py := python(t)
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join(t.TempDir(), "lease.py")
	if err := writeFile(script, leaseScript); err != nil {
		t.Fatal(err)
	}
	c, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 := time.Date(2031, 3, 4, 5, 6, 7, 250e6, time.UTC)
	kazoo := func(kind, path, id string, secs int, at time.Time) string {
		t.Helper()
		now := strconv.FormatFloat(float64(at.UnixMicro())/1e6, 'f', 6, 64)
		out, err := exec.CommandContext(ctx, py, script, srv.Addr(), kind, path, id, strconv.Itoa(secs), now).CombinedOutput()
		if err != nil {
			t.Fatalf("kazoo lease: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	goLease := func(path, id string, d time.Duration, at time.Time) lease.Lease {
		t.Helper()
		l, err := lease.NonBlocking(ctx, c, path, d, lease.WithIdentifier(id), lease.WithClock(func() time.Time { return at }))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	// kazoo takes /k for 60 s; Go sees it held until then.
	if got := kazoo("single", "/k", "py", 60, t0); got != "OBTAINED" {
		t.Fatalf("kazoo: %s", got)
	}
	raw, _, err := c.Get(ctx, "/k/"+lease.HolderNode)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := lease.Decode(raw)
	if err != nil || rec.Holder != "py" || !rec.End.Equal(time.Date(2031, 3, 4, 5, 7, 7, 0, time.UTC)) {
		t.Fatalf("kazoo's record %s: %+v %v", raw, rec, err)
	}
	if enc := lease.Encode(*rec); string(enc) != string(raw) {
		t.Fatalf("Go encodes %s, kazoo wrote %s", enc, raw)
	}
	if l := goLease("/k", "go", time.Minute, t0.Add(59*time.Second)); l.Obtained || l.Holder != "py" {
		t.Fatalf("Go during kazoo's lease: %+v", l)
	}
	if l := goLease("/k", "go", time.Minute, t0.Add(61*time.Second)); !l.Obtained {
		t.Fatalf("Go after kazoo's lease ended: %+v", l)
	}
	// Now Go holds it until t0+121 s (at whole seconds: 05:08:08).
	if got := kazoo("single", "/k", "py", 60, t0.Add(100*time.Second)); got != "NOT" {
		t.Fatalf("kazoo during Go's lease: %s", got)
	}
	if got := kazoo("single", "/k", "go", 60, t0.Add(100*time.Second)); got != "OBTAINED" {
		t.Fatalf("kazoo renewing under Go's identifier: %s", got)
	}
	if got := kazoo("single", "/k", "py", 60, t0.Add(161*time.Second)); got != "OBTAINED" {
		t.Fatalf("kazoo after the lease ended: %s", got)
	}

	// Go takes /g first; kazoo is refused, then takes it after expiry.
	if l := goLease("/g", "go", 30*time.Second, t0); !l.Obtained {
		t.Fatalf("Go: %+v", l)
	}
	if got := kazoo("single", "/g", "py", 30, t0.Add(29*time.Second)); got != "NOT" {
		t.Fatalf("kazoo during Go's lease: %s", got)
	}
	if got := kazoo("single", "/g", "py", 30, t0.Add(30*time.Second)); got != "OBTAINED" {
		t.Fatalf("kazoo after Go's lease: %s", got)
	}

	// Multi: two slots shared by kazoo and Go.
	if got := kazoo("2", "/m", "py1", 600, t0); got != "OBTAINED" {
		t.Fatalf("kazoo multi: %s", got)
	}
	l, err := lease.MultiNonBlocking(ctx, c, 2, "/m", 10*time.Minute, lease.WithIdentifier("go1"), lease.WithClock(func() time.Time { return t0 }))
	if err != nil || !l.Obtained || l.Path != "/m/1" {
		t.Fatalf("Go multi: %+v %v", l, err)
	}
	if got := kazoo("2", "/m", "py2", 600, t0); got != "NOT" {
		t.Fatalf("kazoo multi, both slots taken: %s", got)
	}
	l, err = lease.MultiNonBlocking(ctx, c, 2, "/m", 10*time.Minute, lease.WithIdentifier("go2"), lease.WithClock(func() time.Time { return t0 }))
	if err != nil || l.Obtained {
		t.Fatalf("Go multi, both slots taken: %+v %v", l, err)
	}
	for i, want := range []string{"py1", "go1"} {
		r, err := lease.Read(ctx, c, "/m/"+strconv.Itoa(i))
		if err != nil || r.Holder != want {
			t.Fatalf("/m/%d: %+v %v", i, r, err)
		}
	}
}
