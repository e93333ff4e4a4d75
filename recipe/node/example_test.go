package node_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe/node"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// A PersistentNode keeps an ephemeral node in place: over a Redialer it
// is created again in each new session.
func ExamplePersistentNode() {
	srv, err := zktest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := zk.Redial(ctx, srv.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	n := node.New(r, "/workers/w1", zk.ModeEphemeral, []byte("idle"))
	path, err := n.WaitCreated(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := n.SetData(ctx, []byte("busy")); err != nil {
		log.Fatal(err)
	}
	data, _, err := r.Current().Get(ctx, path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(path, string(data))
	if err := n.Close(ctx); err != nil {
		log.Fatal(err)
	}
	st, _ := r.Current().Exists(ctx, path)
	fmt.Println("after Close:", st != nil)
	// Output:
	// /workers/w1 busy
	// after Close: false
}

// GroupMember joins a group and sees its members.
func ExampleGroupMember() {
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

	a := node.NewGroupMember(conn, "/groups/indexers", "a", []byte("host-a"))
	b := node.NewGroupMember(conn, "/groups/indexers", "b", []byte("host-b"))
	for _, m := range []*node.GroupMember{a, b} {
		if err := m.WaitJoined(ctx); err != nil {
			log.Fatal(err)
		}
	}
	for {
		members, changed := a.Members()
		if len(members) == 2 {
			fmt.Println(string(members["a"]), string(members["b"]))
			break
		}
		<-changed
	}
	b.Close(ctx)
	a.Close(ctx)
	// Output: host-a host-b
}
