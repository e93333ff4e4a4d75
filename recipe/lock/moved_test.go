package lock

import (
	"context"
	"testing"
	"time"

	"github.com/zkgo/zkgo/tests/framework/rawzk"
	"github.com/zkgo/zkgo/zk"
	"github.com/zkgo/zkgo/zktest"
)

// TestUnlockAfterSessionMoved: the session is resumed on another member
// behind the client's back (a connect request that sat in a paused
// member's accept queue and was served once it woke, after the client had
// given up on it and connected elsewhere). The client's next write is
// refused with SessionMoved; Unlock must still delete its node (retrying
// on the next connection, as Curator's RetryLoop does), or the node would
// block every later waiter for as long as the session lives.
func TestUnlockAfterSessionMoved(t *testing.T) {
	c := zktest.StartCluster(t, 3)
	c.Leader()
	ctx := t.Context()
	var conn *zk.Conn
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		conn, err = zk.Connect(cctx, c.Addr(0))
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	defer conn.Close()
	m := NewMutex(conn, "/locks/moved")
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// The ghost: the same session resumed on member 2; the connect reply
	// comes once the move is applied there.
	ghost, err := rawzk.Dial(c.Addr(1), rawzk.Options{Timeout: time.Minute, SessionID: conn.SessionID(), Passwd: conn.SessionPassword()})
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after the session moved: %v", err)
	}
	if kids := children(t, conn, "/locks/moved"); len(kids) != 0 {
		t.Fatalf("lock nodes left: %v", kids)
	}
}
