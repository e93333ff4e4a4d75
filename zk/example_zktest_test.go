package zk_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// The client basics against an in-process server (package zktest):
// connect, create, read, and watch a node for its next change.
func ExampleConnect() {
	srv, err := zktest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, err := zk.Connect(ctx, srv.Addr(), zk.WithSessionTimeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Create(ctx, "/config", []byte("v1"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		log.Fatal(err)
	}
	data, st, ev, err := c.GetW(ctx, "/config")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read %s (version %d)\n", data, st.Version)

	if _, err := c.Set(ctx, "/config", []byte("v2"), st.Version); err != nil {
		log.Fatal(err)
	}
	e := <-ev // a watch fires once
	data, st, _ = c.Get(ctx, "/config")
	fmt.Printf("%s on %s: now %s (version %d)\n", e.Type, e.Path, data, st.Version)
	// Output:
	// read v1 (version 0)
	// EventNodeDataChanged on /config: now v2 (version 1)
}
