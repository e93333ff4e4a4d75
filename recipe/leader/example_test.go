package leader_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/leader"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// A Latch joins an election and keeps its place until closed; Await
// returns once it leads.
func ExampleLatch() {
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

	first := leader.NewLatch(conn, "/election/scheduler", "node-1")
	second := leader.NewLatch(conn, "/election/scheduler", "node-2")
	if err := first.Start(); err != nil {
		log.Fatal(err)
	}
	if _, err := first.Await(ctx); err != nil {
		log.Fatal(err)
	}
	if err := second.Start(); err != nil { // queues behind first
		log.Fatal(err)
	}
	p, _, err := second.Leader(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader:", p.ID, "second leads:", second.HasLeadership())

	if err := first.Close(ctx); err != nil { // hands leadership on
		log.Fatal(err)
	}
	if _, err := second.Await(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("second leads:", second.HasLeadership())
	if err := second.Close(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// leader: node-1 second leads: false
	// second leads: true
}

// A Selector over a Redialer: each turn at leadership runs in the session
// current at the time, so the participant takes part again after its
// session expires, without a restart.
func ExampleNewSelector_redialer() {
	srv, err := zktest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := zk.Redial(ctx, srv.Addr(), zk.WithSessionTimeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	led := make(chan struct{})
	s := leader.NewSelector(r, "/election/compactor", "node-1", func(ctx context.Context, g *recipe.Grant) error {
		fmt.Println("leading, token > 0:", g.Token() > 0)
		close(led)
		<-ctx.Done() // lead until interrupted or the grant is lost
		return nil
	})
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}
	<-led
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading:", s.HasLeadership())
	// Output:
	// leading, token > 0: true
	// leading: false
}
