package recipeutil_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/recipeutil"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// lockOnce is the package comment's minimal mutex: a sequential node
// named as Curator names a lock's, the turn of the first in line, and a
// Grant that ends when the session does.
func lockOnce(ctx context.Context, conn *zk.Conn, base string) (*recipe.Grant, error) {
	path, st, err := recipeutil.CreateNode(ctx, conn, base, "lock-", nil, nil)
	if err != nil {
		return nil, err
	}
	name := path[strings.LastIndex(path, "/")+1:]
	if err := recipeutil.WaitTurn(ctx, conn, base, []string{"lock-"}, name, recipeutil.FirstN(1)); err != nil {
		recipeutil.DeleteNode(ctx, conn, path)
		return nil, err
	}
	return recipeutil.Hold(ctx, conn, path, st.Czxid, recipeutil.HoldOptions{})
}

// A mutex of one's own from the building blocks: the second contender
// waits for its turn until the first lets go.
func Example() {
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

	first, err := lockOnce(ctx, conn, "/app/mylock")
	if err != nil {
		log.Fatal(err)
	}
	second := make(chan *recipe.Grant)
	go func() {
		g, err := lockOnce(ctx, conn, "/app/mylock")
		if err != nil {
			log.Fatal(err)
		}
		second <- g
	}()
	// Wait until the second contender's node is in the queue.
	for {
		kids, _, ev, err := conn.ChildrenW(ctx, "/app/mylock")
		if err != nil {
			log.Fatal(err)
		}
		if len(kids) == 2 {
			break
		}
		<-ev
	}
	fmt.Println("first holds it:", first.Held())
	if err := recipeutil.DeleteNode(ctx, conn, first.Path()); err != nil {
		log.Fatal(err)
	}
	first.Release()
	g := <-second
	fmt.Println("second holds it:", g.Held(), "newer token:", g.Token() > first.Token())
	if err := recipeutil.DeleteNode(ctx, conn, g.Path()); err != nil {
		log.Fatal(err)
	}
	g.Release()
	// Output:
	// first holds it: true
	// second holds it: true newer token: true
}
