package shared_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe/shared"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// An AtomicLong is a counter that many processes update without losing
// an increment; a Count is a watched int32 (Curator's SharedCount).
func ExampleAtomicLong() {
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

	n := shared.NewAtomicLong(conn, "/counters/jobs")
	for range 3 {
		if _, err := n.Increment(ctx); err != nil {
			log.Fatal(err)
		}
	}
	r, err := n.Add(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("succeeded:", r.Succeeded, "from", r.Pre, "to", r.Post)

	c := shared.NewCount(conn, "/counters/workers", 1)
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, 4); err != nil {
		log.Fatal(err)
	}
	fmt.Println("workers:", c.Get())
	// Output:
	// succeeded: true from 3 to 13
	// workers: 4
}
