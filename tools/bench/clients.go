package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/zk"
)

// kvClient is the part of a client library that get, set and mixed use, so
// that the same workload runs on zkgo's Go client (package zk) or
// go-zookeeper/zk as on this package's raw client (kvLoad.run): against one
// server, the difference is the client's cost.
type kvClient interface {
	get(path string) error
	set(path string, data []byte) error
	close()
}

type zkKV struct{ c *zk.Conn }

func zkErr(err error) error {
	if err == nil {
		return nil
	}
	if code := zk.ErrorCode(err); code != proto.ErrOk && !zk.IsRetryable(err) {
		return codeError(code)
	}
	return err
}

func (z zkKV) get(p string) error {
	_, _, err := z.c.Get(context.Background(), p)
	return zkErr(err)
}

func (z zkKV) set(p string, d []byte) error {
	_, err := z.c.Set(context.Background(), p, d, -1)
	return zkErr(err)
}

func (z zkKV) close() { z.c.Close() }

type gozkKV struct{ c *gozk.Conn }

// gozkCodes maps go-zookeeper's errors for server error codes.
var gozkCodes = map[error]proto.ErrCode{
	gozk.ErrNoNode:     proto.ErrNoNode,
	gozk.ErrBadVersion: proto.ErrBadVersion,
	gozk.ErrNodeExists: proto.ErrNodeExists,
	gozk.ErrNotEmpty:   proto.ErrNotEmpty,
	gozk.ErrNoAuth:     proto.ErrNoAuth,
}

func gozkErr(err error) error {
	if err == nil {
		return nil
	}
	if code, ok := gozkCodes[err]; ok {
		return codeError(code)
	}
	return err
}

func (g gozkKV) get(p string) error {
	_, _, err := g.c.Get(p)
	return gozkErr(err)
}

func (g gozkKV) set(p string, d []byte) error {
	_, err := g.c.Set(p, d, -1)
	return gozkErr(err)
}

func (g gozkKV) close() { g.c.Close() }

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dialKV opens cfg.Connections sessions of cfg.Client (zk or gozk), session
// i on cfg.serverFor(i); with several servers each one syncs first (see
// dialAll).
func dialKV(ctx context.Context, cfg *Config) ([]kvClient, error) {
	out := make([]kvClient, cfg.Connections)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kv, err := dialOneKV(ctx, cfg, cfg.serverFor(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out[i] = kv
		}()
	}
	wg.Wait()
	if firstErr != nil {
		for _, kv := range out {
			if kv != nil {
				kv.close()
			}
		}
		return nil, firstErr
	}
	return out, nil
}

func dialOneKV(ctx context.Context, cfg *Config, addr string) (kvClient, error) {
	switch cfg.Client {
	case "zk":
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		c, err := zk.Connect(cctx, addr, zk.WithSessionTimeout(cfg.SessionTimeout), zk.WithTLS(cfg.TLS))
		if err != nil {
			return nil, err
		}
		if cfg.multiServer() {
			if _, err := c.Sync(cctx, "/"); err != nil {
				c.Close()
				return nil, fmt.Errorf("sync on %s: %w", addr, err)
			}
		}
		return zkKV{c}, nil
	case "gozk":
		c, err := dialGozk(ctx, cfg, addr)
		if err != nil {
			return nil, err
		}
		return gozkKV{c}, nil
	}
	return nil, errors.New("unknown client " + cfg.Client)
}

// dialGozk opens a go-zookeeper session with addr and waits until it
// exists (and, on an ensemble, is synced).
func dialGozk(ctx context.Context, cfg *Config, addr string) (*gozk.Conn, error) {
	dialer := net.DialTimeout
	if cfg.TLS != nil {
		dialer = func(network, address string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, cfg.TLS)
		}
	}
	c, _, err := gozk.Connect([]string{addr}, cfg.SessionTimeout, gozk.WithLogger(quietLogger{}), gozk.WithDialer(dialer))
	if err != nil {
		return nil, err
	}
	// Connect returns before the session exists; wait for it.
	deadline := time.Now().Add(15 * time.Second)
	for c.State() != gozk.StateHasSession {
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.Close()
			return nil, fmt.Errorf("go-zookeeper: no session with %s", addr)
		}
		time.Sleep(time.Millisecond)
	}
	if cfg.multiServer() {
		if _, err := c.Sync("/"); err != nil {
			c.Close()
			return nil, fmt.Errorf("sync on %s: %w", addr, err)
		}
	}
	return c, nil
}
