package linearize

import (
	"context"
	"errors"

	"github.com/zkgo/zkgo/zk"
)

// StatusOf maps the error of a ZooKeeper request to an outcome: nil is OK;
// NoNode, NodeExists and BadVersion are definite answers that changed
// nothing; every other error — connection loss, operation or request
// timeout, a closed client, a cancelled context, an expired or moved
// session, throttling — is Unknown. Taking a definite refusal for unknown
// only weakens the check; the reverse would make it wrong.
func StatusOf(err error) Status {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, zk.ErrNoNode):
		return NoNode
	case errors.Is(err, zk.ErrNodeExists):
		return NodeExists
	case errors.Is(err, zk.ErrBadVersion):
		return BadVersion
	}
	return Unknown
}

// Client records the operations of one ZooKeeper session in a Recorder.
// Its methods run the requests and return the recorded outcome and the
// request's error (nil, or what failed). A Client may be used by one
// goroutine at a time.
type Client struct {
	r    *Recorder
	id   int
	conn *zk.Conn
}

// Client returns a Client recording conn's operations under client id id
// (ids are zero-based; the visualization draws one row per id).
func (r *Recorder) Client(id int, conn *zk.Conn) *Client {
	return &Client{r: r, id: id, conn: conn}
}

// Get reads key linearizably: sync, then getData (getData alone with
// Recorder.NoSync, for servers whose reads are linearizable). A sync that
// fails makes the read unknown (left out of the history).
func (c *Client) Get(ctx context.Context, key string) (Output, error) {
	op := c.r.Begin(c.id, Input{Kind: Get, Key: key})
	if _, err := c.sync(ctx, key); err != nil {
		op.End(Output{Status: Unknown}, "sync: "+err.Error())
		return Output{Status: Unknown}, err
	}
	data, st, err := c.conn.Get(ctx, key)
	out := Output{Status: StatusOf(err)}
	if err == nil {
		out.Data, out.Version = string(data), st.Version
	}
	op.End(out, note(err))
	return out, err
}

// sync is the sync before a read, or nothing with Recorder.NoSync.
func (c *Client) sync(ctx context.Context, key string) (string, error) {
	if c.r.NoSync {
		return key, nil
	}
	return c.conn.Sync(ctx, key)
}

// Set writes data to key: unconditionally with version -1, else only if
// the node's data version is version.
func (c *Client) Set(ctx context.Context, key, data string, version int32) (Output, error) {
	op := c.r.Begin(c.id, Input{Kind: Set, Key: key, Data: data, Version: version})
	st, err := c.conn.Set(ctx, key, []byte(data), version)
	out := Output{Status: StatusOf(err)}
	if err == nil {
		out.Version = st.Version
	}
	op.End(out, note(err))
	return out, err
}

// Create creates key (persistent, open ACL) holding data.
func (c *Client) Create(ctx context.Context, key, data string) (Output, error) {
	op := c.r.Begin(c.id, Input{Kind: Create, Key: key, Data: data})
	_, err := c.conn.Create(ctx, key, []byte(data), zk.OpenACLUnsafe, zk.ModePersistent)
	out := Output{Status: StatusOf(err)}
	op.End(out, note(err))
	return out, err
}

func note(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
