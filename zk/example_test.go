package zk_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// A create needs nothing but package zk: the ACL lists, create modes and
// permissions are all defined here.
func ExampleConn_Create() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, "127.0.0.1:2181/app", zk.WithSessionTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if err := c.EnsurePath(ctx, "/jobs", zk.OpenACLUnsafe); err != nil {
		log.Fatal(err)
	}
	p, err := c.Create(ctx, "/jobs/job-", []byte("payload"), zk.OpenACLUnsafe, zk.ModePersistentSequential)
	if err != nil {
		log.Fatal(err)
	}
	// Readable by everyone, writable by bob only.
	acl := append(zk.DigestACL(zk.PermAll, "bob", "secret"), zk.ReadACLUnsafe...)
	if _, err := c.Create(ctx, "/jobs/config", nil, acl, zk.ModePersistent); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}
	var st *zk.Stat
	_, st, err = c.Get(ctx, p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p, st.Version)
}

// DigestACL computes the id a server derives from "user:password".
func ExampleDigestACL() {
	for _, a := range zk.DigestACL(zk.PermRead|zk.PermWrite, "bob", "secret") {
		fmt.Printf("%s:%s perms=%d\n", a.ID.Scheme, a.ID.ID, a.Perms)
	}
	fmt.Println(zk.OpenACLUnsafe[0].ID == zk.AnyoneIDUnsafe)
	// Output:
	// digest:bob:fyVmFCwVbTJYrznoSu1koqYEYF0= perms=3
	// true
}
