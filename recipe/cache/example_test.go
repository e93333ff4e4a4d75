package cache_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe/cache"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// A TreeCache keeps a local copy of a subtree and reports each change.
func ExampleTreeCache() {
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
	if err := conn.EnsurePath(ctx, "/services/web", zk.OpenACLUnsafe); err != nil {
		log.Fatal(err)
	}

	c := cache.NewTree(conn, "/services")
	events := c.Events() // before Start, to see the initial snapshot
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	next := func(want cache.EventType) cache.Event {
		for e := range events {
			if e.Type == want {
				return e
			}
		}
		log.Fatal("events closed")
		return cache.Event{}
	}
	next(cache.Initialized)
	fmt.Println("cached:", c.Len())

	if _, err := conn.Create(ctx, "/services/web/a", []byte("10.0.0.1"), zk.OpenACLUnsafe, zk.ModePersistent); err != nil {
		log.Fatal(err)
	}
	e := next(cache.Created)
	fmt.Println(e.Type, e.Path, string(e.Data))
	got, _ := c.Get("/services/web/a")
	fmt.Println("get:", string(got.Data), "children of web:", c.Children("/services/web"))
	// Output:
	// cached: 2
	// Created /services/web/a 10.0.0.1
	// get: 10.0.0.1 children of web: [a]
}
