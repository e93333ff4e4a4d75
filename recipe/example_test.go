package recipe_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/leader"
	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// One list of options configures recipes of several packages: here the
// ACL of every node a lock and a leader latch create.
func ExampleOption() {
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

	// Nodes everyone may read, only this session's identity may change.
	acl := append(zk.WorldACL(zk.PermRead), zk.CreatorAllACL...)
	if err := conn.AddAuth(ctx, "digest", []byte("app:secret")); err != nil {
		log.Fatal(err)
	}
	opts := []recipe.Option{recipe.WithACL(acl)}

	mu := lock.NewMutex(conn, "/app/lock", opts...)
	g, err := mu.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	got, _, err := conn.GetACL(ctx, g.Path())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("lock node:", len(got), "entries,", got[0].ID.Scheme, "and", got[1].ID.Scheme)
	if err := mu.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	latch := leader.NewLatch(conn, "/app/leader", "worker-1", opts...)
	if err := latch.Start(); err != nil {
		log.Fatal(err)
	}
	defer latch.Close(ctx)
	lg, err := latch.Await(ctx)
	if err != nil {
		log.Fatal(err)
	}
	got, _, err = conn.GetACL(ctx, lg.Path())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("latch node:", len(got), "entries,", got[0].ID.Scheme, "and", got[1].ID.Scheme)
	// Output:
	// lock node: 2 entries, world and digest
	// latch node: 2 entries, world and digest
}
