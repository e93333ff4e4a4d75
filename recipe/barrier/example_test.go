package barrier_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe/barrier"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// A Barrier holds workers back until it is removed.
func ExampleBarrier() {
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

	b := barrier.New(conn, "/barriers/deploy")
	if err := b.Set(ctx); err != nil {
		log.Fatal(err)
	}
	waited := make(chan error)
	go func() { waited <- b.Wait(ctx) }()
	set, _ := b.IsSet(ctx)
	fmt.Println("set:", set)
	if err := b.Remove(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("worker released:", <-waited)
	// Output:
	// set: true
	// worker released: <nil>
}

// A DoubleBarrier lets three members start together and finish together.
func ExampleDoubleBarrier() {
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

	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := barrier.NewDouble(conn, "/barriers/round", 3)
			if err != nil {
				errs <- err
				return
			}
			errs <- d.Enter(ctx) // returns once all three are in
			errs <- d.Leave(ctx) // returns once all three are out
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Println("entered and left:", n/2)
	// Output: entered and left: 3
}
