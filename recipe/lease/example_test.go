package lease_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe/lease"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// A lease is held for a duration, whatever becomes of the session: the
// second contender is refused until it ends (kazoo's NonBlockingLease).
func ExampleNonBlocking() {
	srv, err := zktest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	a, err := lease.NonBlocking(ctx, conn, "/leases/cron", time.Hour, lease.WithIdentifier("host-a"))
	if err != nil {
		log.Fatal(err)
	}
	b, err := lease.NonBlocking(ctx, conn, "/leases/cron", time.Hour, lease.WithIdentifier("host-b"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a obtained:", a.Obtained)
	fmt.Println("b obtained:", b.Obtained, "holder:", b.Holder)
	// Output:
	// a obtained: true
	// b obtained: false holder: host-a
}
