package zktest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// New starts a server outside a test (in a test, Start closes it for you);
// connect to its Addr.
func ExampleNew() {
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

	if _, err := conn.Create(ctx, "/hello", []byte("world"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		log.Fatal(err)
	}
	data, _, err := conn.Get(ctx, "/hello")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(data))
	// Output: world
}
