package lock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/recipe/lock"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// Two processes (two sessions here) contend for one lock; the holder's
// Grant carries a fencing token that grows with every new holder.
func ExampleMutex() {
	srv, err := zktest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	ma := lock.NewMutex(a, "/locks/report")
	mb := lock.NewMutex(b, "/locks/report")

	ga, err := ma.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, ok, err := mb.TryLock(ctx)
	fmt.Println("b while a holds it:", ok, err)

	if err := ma.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	gb, err := mb.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("b holds it:", mb.IsHeld(), "newer token:", gb.Token() > ga.Token())
	if err := mb.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// b while a holds it: false <nil>
	// b holds it: true newer token: true
}

// A Redialer starts a new session when one expires; pass it wherever a
// recipe takes a connection, and each Lock runs in the current session.
func ExampleNewMutex_redialer() {
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

	m := lock.NewMutex(r, "/locks/nightly")
	g, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", g.Held())
	// ... work, passing g.Token() to what the lock protects ...
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", g.Held())
	// Output:
	// held: true
	// held: false
}
