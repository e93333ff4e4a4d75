package replica

import (
	"errors"
	"net"
	"sync"
)

// listenPeers listens for peer connections on each of addrs (a member's
// own entry: one address, or several with multiAddress), or, with all
// (quorumListenOnAllIPs), on every interface at each of their ports. A
// member's own line may name 0.0.0.0 or [::] (the official Docker image
// does), which listens on every interface too.
func listenPeers(addrs []string, all bool) (net.Listener, error) {
	var lns []net.Listener
	seen := map[string]bool{}
	for _, a := range addrs {
		if all {
			_, port, err := net.SplitHostPort(a)
			if err != nil {
				return nil, err
			}
			a = net.JoinHostPort("", port)
		}
		if seen[a] {
			continue
		}
		seen[a] = true
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	if len(lns) == 1 {
		return lns[0], nil
	}
	return newMultiListener(lns), nil
}

// multiListener accepts on several listeners as one.
type multiListener struct {
	lns    []net.Listener
	conns  chan net.Conn
	errc   chan error
	closed chan struct{}
	once   sync.Once
}

func newMultiListener(lns []net.Listener) *multiListener {
	m := &multiListener{lns: lns, conns: make(chan net.Conn), errc: make(chan error, 1), closed: make(chan struct{})}
	for _, ln := range lns {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					if errors.Is(err, net.ErrClosed) {
						return
					}
					select {
					case m.errc <- err:
					case <-m.closed:
						return
					}
					continue
				}
				select {
				case m.conns <- c:
				case <-m.closed:
					c.Close()
					return
				}
			}
		}()
	}
	return m
}

func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case err := <-m.errc:
		return nil, err
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	m.once.Do(func() { close(m.closed) })
	var errs []error
	for _, ln := range m.lns {
		errs = append(errs, ln.Close())
	}
	return errors.Join(errs...)
}

// Addr is the first listener's address.
func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
