package curator_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/recipe/discovery"
	"github.com/zkgo/zkgo/tests/framework/apachezk"
	"github.com/zkgo/zkgo/tests/interop/curator"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// TestDiscoveryWithCurator: a service registered by curator-x-discovery is
// found from Go (query and Provider), one registered from Go is found by
// Curator's ServiceDiscovery and ServiceProvider, and unregistering on
// either side is seen on the other, against zkgo and Apache ZooKeeper.
func TestDiscoveryWithCurator(t *testing.T) {
	run := func(t *testing.T, addr, base string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		java := curator.StartPeer(t, addr)
		curator.SkipIfNoDiscovery(t)
		c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		d := discovery.New(c, base)

		// Java registers first, so Curator creates the base path.
		java.Want(t, "OK", "disc-start %s", base)
		java.Want(t, "OK", "disc-register api j1 10.0.0.1 8080 from-java")
		got, err := d.Instances(ctx, "api")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != "j1" || got[0].Address != "10.0.0.1" || got[0].Port == nil || *got[0].Port != 8080 ||
			string(got[0].Payload) != `"from-java"` || got[0].ServiceType != discovery.Dynamic {
			t.Fatalf("Go reads Curator's instance as %s", describe(got))
		}

		p, err := d.NewProvider(ctx, "api")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		waitIDs(ctx, t, p, "j1")

		in := discovery.NewInstance("api", "10.0.0.2", 9090)
		in.ID, in.Payload = "g1", []byte(`"from-go"`)
		if err := d.Register(ctx, in); err != nil {
			t.Fatal(err)
		}
		java.Want(t, "g1@10.0.0.2:9090:from-go,j1@10.0.0.1:8080:from-java", "disc-query api")
		java.Want(t, "OK", "disc-provider api")
		java.Want(t, "SEEN", "disc-await api g1,j1 20000")
		waitIDs(ctx, t, p, "g1", "j1")

		// Go's Close unregisters g1; Curator's provider drops it.
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
		java.Want(t, "SEEN", "disc-await api j1 20000")
		java.Want(t, "OK", "disc-unregister api j1")
		waitIDs(ctx, t, p)
		if _, err := p.Instance(); err == nil {
			t.Fatal("the Go provider still offers an instance after both were unregistered")
		}
		java.Want(t, "NONE", "disc-query api")
		java.Want(t, "OK", "disc-close")
		java.Want(t, "BYE", "quit")
	}
	t.Run("zkgo", func(t *testing.T) {
		srv := zktest.Start(t)
		run(t, srv.Addr(), "/interop-discovery")
	})
	t.Run("apache", func(t *testing.T) {
		apachezk.SkipIfUnavailable(t, apacheErr)
		run(t, apache.Addr(), fmt.Sprintf("/interop-discovery-%d", time.Now().UnixNano()))
	})
}

// waitIDs waits until the provider's list is exactly ids.
func waitIDs(ctx context.Context, t *testing.T, p *discovery.Provider, ids ...string) {
	t.Helper()
	sort.Strings(ids)
	want := strings.Join(ids, ",")
	for {
		in, changed := p.Instances()
		var have []string
		for _, i := range in {
			have = append(have, i.ID)
		}
		sort.Strings(have)
		if strings.Join(have, ",") == want {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the Go provider lists [%s], want [%s]", strings.Join(have, ","), want)
		}
	}
}

func describe(in []*discovery.Instance) string {
	var b strings.Builder
	for _, i := range in {
		data, _ := i.Encode()
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}
