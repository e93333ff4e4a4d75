//go:build linux

package clientport

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
)

// idlePoller watches parked connections (connpark.go): connections with no
// request for Options.IdleAfter, whose reader and writer goroutines have
// ended and whose input buffer went back to the pool. One goroutine waits
// in epoll_wait on all of them; when one becomes readable (a request, a
// ping, the client closing), resume starts a reader for it again.
//
// The sockets stay registered with Go's own poller too (an fd may be in
// several epoll sets); this one is level-triggered and one-shot: a
// connection is reported once per park, and a socket that is already
// readable when it parks is reported at once.
type idlePoller struct {
	epfd   int
	wakeR  int // read end of the pipe that stops run
	wakeW  int
	resume func(c *Conn) // called from run for each connection that woke
	log    *slog.Logger

	mu     sync.Mutex       // guards parked, nextID, closed and every Conn's parkID, parkRegistered
	parked map[uint64]*Conn // by Conn.parkID
	nextID uint64
	closed bool

	stopOnce sync.Once
}

// wakeID is the event id of the stop pipe; connections' ids start at 1.
const wakeID = 0

func newIdlePoller(resume func(c *Conn), log *slog.Logger) (*idlePoller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	var pipe [2]int
	if err := syscall.Pipe2(pipe[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("pipe2: %w", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	setEventID(&ev, wakeID)
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, pipe[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(pipe[0])
		syscall.Close(pipe[1])
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	return &idlePoller{
		epfd: epfd, wakeR: pipe[0], wakeW: pipe[1],
		resume: resume, log: log,
		parked: make(map[uint64]*Conn),
	}, nil
}

func setEventID(ev *syscall.EpollEvent, id uint64) {
	ev.Fd = int32(uint32(id))
	ev.Pad = int32(uint32(id >> 32))
}

func eventID(ev *syscall.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// park registers c (its reader has ended) to be resumed when its socket
// becomes readable. It returns false if c cannot be parked (the socket is
// closed, or the poller stopped); the caller then goes on reading. Once
// it returned true the connection may be resumed at any moment, on
// another goroutine: the caller must not touch its reader state.
//
// The registration is made under mu, which run also holds to close the
// epoll fd: a park racing with stop never reaches a closed (or reused)
// descriptor.
func (p *idlePoller) park(c *Conn, rc syscall.RawConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if c.parkID == 0 {
		p.nextID++
		c.parkID = p.nextID
	}
	id, op := c.parkID, syscall.EPOLL_CTL_MOD
	if !c.parkRegistered {
		op = syscall.EPOLL_CTL_ADD
	}
	c.parkRegistered = true
	var ctlErr error
	err := rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT}
		setEventID(&ev, id)
		ctlErr = syscall.EpollCtl(p.epfd, op, int(fd), &ev)
		switch {
		case op == syscall.EPOLL_CTL_MOD && errors.Is(ctlErr, syscall.ENOENT):
			ctlErr = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
		case op == syscall.EPOLL_CTL_ADD && errors.Is(ctlErr, syscall.EEXIST):
			ctlErr = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
		}
	})
	if err == nil {
		err = ctlErr
	}
	if err != nil {
		return false
	}
	// (An event cannot be handled before this: run takes mu to look
	// the id up.)
	p.parked[id] = c
	return true
}

// forget drops c if it is parked (it is closing).
func (p *idlePoller) forget(c *Conn) {
	p.mu.Lock()
	if c.parkID != 0 {
		delete(p.parked, c.parkID)
	}
	p.mu.Unlock()
}

// count returns the number of parked connections.
func (p *idlePoller) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked)
}

// run reports readable connections to resume until stop.
func (p *idlePoller) run() {
	defer func() {
		p.mu.Lock()
		p.closed = true
		syscall.Close(p.epfd)
		syscall.Close(p.wakeR)
		p.mu.Unlock()
	}()
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(p.epfd, events, -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			// Not expected; parked connections would never wake,
			// so close them (their clients reconnect).
			p.log.Error("idle connection poller failed; closing parked connections", "err", err)
			p.stopWake()
			p.mu.Lock()
			p.closed = true
			conns := make([]*Conn, 0, len(p.parked))
			for _, c := range p.parked {
				conns = append(conns, c)
			}
			clear(p.parked)
			p.mu.Unlock()
			for _, c := range conns {
				c.close("idle connection poller failed")
			}
			return
		}
		for i := range n {
			id := eventID(&events[i])
			if id == wakeID {
				return
			}
			p.mu.Lock()
			c := p.parked[id]
			delete(p.parked, id)
			p.mu.Unlock()
			if c != nil {
				p.resume(c)
			}
		}
	}
}

// stop ends run; connections still parked are closed by the server.
func (p *idlePoller) stop() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.stopWake()
}

// stopWake wakes run to return, once.
func (p *idlePoller) stopWake() {
	p.stopOnce.Do(func() {
		syscall.Write(p.wakeW, []byte{1})
		syscall.Close(p.wakeW)
	})
}
