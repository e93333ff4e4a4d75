package partition_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe/partition"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// A SetPartitioner divides a set of items among the members of a party
// (kazoo's SetPartitioner); alone, a member gets every item.
func ExampleSetPartitioner() {
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

	p, err := partition.New(ctx, conn, "/partitions/shards", []string{"s1", "s2", "s3"},
		partition.WithIdentifier("worker-1"), partition.WithTimeBoundary(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	state, err := p.WaitForAcquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(state, p.Partitions())
	if err := p.Finish(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: ACQUIRED [s1 s2 s3]
}
