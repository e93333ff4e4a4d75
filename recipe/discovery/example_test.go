package discovery_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe/discovery"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// Services register their instances; clients find them through a
// Provider (Curator's service discovery, same node layout and JSON).
func ExampleDiscovery() {
	srv, err := zktest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := zk.Redial(ctx, srv.Addr()) // registrations survive session expiry
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	d := discovery.New(r, "/services")
	defer d.Close(ctx)
	in := discovery.NewInstance("billing", "10.0.0.7", 8080)
	in.ID = "billing-1"
	if err := d.Register(ctx, in); err != nil {
		log.Fatal(err)
	}

	p, err := d.NewProvider(ctx, "billing")
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	got, err := p.Instance()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s:%d\n", got.ID, got.Address, *got.Port)
	// Output: billing-1 10.0.0.7:8080
}
