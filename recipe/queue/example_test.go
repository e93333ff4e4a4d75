package queue_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe/queue"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// A Simple queue shares its items with Curator's SimpleDistributedQueue
// on the same path: "qn-" nodes whose data is the value.
func ExampleSimple() {
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

	q := queue.NewSimple(conn, "/jobs/simple")
	for _, job := range []string{"resize", "upload", "notify"} {
		if err := q.Offer(ctx, []byte(job)); err != nil {
			log.Fatal(err)
		}
	}
	head, _ := q.Element(ctx)
	fmt.Println("head:", string(head))
	names, _, _ := conn.Children(ctx, "/jobs/simple")
	fmt.Println("items:", len(names), names[0][:3])
	for {
		v, ok, err := q.Poll(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if !ok {
			break
		}
		fmt.Println("took:", string(v))
	}
	// Output:
	// head: resize
	// items: 3 qn-
	// took: resize
	// took: upload
	// took: notify
}
