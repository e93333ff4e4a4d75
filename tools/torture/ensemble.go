package torture

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkgo/zkgo/tools/torture/faultnet"
)

// ensemble is the member processes of one run, their zoo.cfg files and the
// proxies on every peer link (and on every client's link to a member).
// Its methods are called from the run's goroutines: the schedule's
// (faults) and the recovery probe's (leader); mu guards the processes.
type ensemble struct {
	binary string // a zkgo built with -tags zkgofaults
	dir    string
	n      int
	net    *faultnet.Net
	env    []string // extra environment of every member

	clientAddrs []string // member i's client address (direct)
	peerAddrs   []string // member i's quorum address (direct)
	cfgs        []string // member i's zoo.cfg
	diskCtl     []string // member i's disk-fault control file
	peerVia     []string // member i's ZKGO_FAULT_PEER_VIA value
	clientVia   []string // client k's connection string (its proxies)

	logs []*os.File // member i's log (appended across restarts)

	mu    sync.Mutex   // guards procs and exits
	procs []*exec.Cmd  // running process of member i (nil: not running)
	exits []chan error // the Wait result of procs[i]
}

// reservePort listens on a free port of 127.0.0.1 and returns the
// listener (closed by the caller just before the member binds the port:
// while it is held, no proxy can be given the same port).
func reservePort() (net.Listener, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	return l, l.Addr().(*net.TCPAddr).Port, nil
}

// newEnsemble writes n members' configuration under dir, a proxy for
// every ordered pair of members (the dialer's view of the listener) and
// one for each of the clients' links to each member.
func newEnsemble(binary, dir string, n, clients int, fn *faultnet.Net, extraCfg string) (*ensemble, error) {
	e := &ensemble{binary: binary, dir: dir, n: n, net: fn}
	var lines []string
	var reserved []net.Listener
	defer func() {
		for _, l := range reserved {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		var ports [3]int
		for k := range ports {
			l, p, err := reservePort()
			if err != nil {
				return nil, err
			}
			reserved = append(reserved, l)
			ports[k] = p
		}
		e.peerAddrs = append(e.peerAddrs, fmt.Sprintf("127.0.0.1:%d", ports[0]))
		e.clientAddrs = append(e.clientAddrs, fmt.Sprintf("127.0.0.1:%d", ports[2]))
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d;127.0.0.1:%d", i+1, ports[0], ports[1], ports[2]))
	}
	for i := 0; i < n; i++ {
		mdir := filepath.Join(dir, fmt.Sprintf("member%d", i+1))
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(mdir, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o644); err != nil {
			return nil, err
		}
		text := fmt.Sprintf("tickTime=100\ninitLimit=20\nsyncLimit=10\nmaxSessionTimeout=20000\n"+
			"4lw.commands.whitelist=*\nsnapCount=2000\nadmin.enableServer=false\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n%s\n%s\n",
			mdir, strings.TrimPrefix(e.clientAddrs[i], "127.0.0.1:"), extraCfg, strings.Join(lines, "\n"))
		cfg := filepath.Join(mdir, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			return nil, err
		}
		e.cfgs = append(e.cfgs, cfg)
		e.diskCtl = append(e.diskCtl, filepath.Join(dir, fmt.Sprintf("disk%d", i+1)))
		log, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("member%d.log", i+1)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		e.logs = append(e.logs, log)
	}
	// Member i dials member j through the proxy of link i→j.
	for i := 0; i < n; i++ {
		var via []string
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			addr, err := fn.Listen(memberName(i), memberName(j), e.peerAddrs[j])
			if err != nil {
				return nil, err
			}
			via = append(via, fmt.Sprintf("%d=%s", j+1, addr))
		}
		e.peerVia = append(e.peerVia, strings.Join(via, ","))
	}
	// Client k reaches member j through the proxy of link ck→mj.
	for k := 0; k < clients; k++ {
		var addrs []string
		for j := 0; j < n; j++ {
			a, err := fn.Listen(clientName(k), memberName(j), e.clientAddrs[j])
			if err != nil {
				return nil, err
			}
			addrs = append(addrs, a)
		}
		e.clientVia = append(e.clientVia, strings.Join(addrs, ","))
	}
	e.procs = make([]*exec.Cmd, n)
	e.exits = make([]chan error, n)
	return e, nil
}

// memberName is member i's node name in the fault network ("m1"...).
func memberName(i int) string { return "m" + strconv.Itoa(i+1) }

// start starts member i's process (which must not be running).
func (e *ensemble) start(i int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.procs[i] != nil {
		return fmt.Errorf("member %d is running", i+1)
	}
	cmd := exec.Command(e.binary, "server", "-log-level", "info", e.cfgs[i])
	cmd.Env = append(os.Environ(), e.env...)
	cmd.Env = append(cmd.Env, "ZKGO_FAULT_PEER_VIA="+e.peerVia[i], "ZKGO_FAULT_DISK="+e.diskCtl[i])
	cmd.Stdout, cmd.Stderr = e.logs[i], e.logs[i]
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(e.logs[i], "=== torture: starting member %d at %s\n", i+1, time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); close(done) }()
	e.procs[i], e.exits[i] = cmd, done
	return nil
}

// exited reports whether member i's process has exited by itself (a disk
// fault makes a member stop), reaping it if so.
func (e *ensemble) exited(i int) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.procs[i] == nil {
		return true, nil
	}
	select {
	case err := <-e.exits[i]:
		e.procs[i], e.exits[i] = nil, nil
		return true, err
	default:
		return false, nil
	}
}

// signal sends sig to member i's process, if it runs.
func (e *ensemble) signal(i int, sig syscall.Signal) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.procs[i] == nil {
		return fmt.Errorf("member %d is not running", i+1)
	}
	return e.procs[i].Process.Signal(sig)
}

// waitExit waits for member i's process to exit (after a kill, or by
// itself) and forgets it, so that it can start again on its directory.
func (e *ensemble) waitExit(ctx context.Context, i int) error {
	e.mu.Lock()
	done := e.exits[i]
	e.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	e.mu.Lock()
	e.procs[i], e.exits[i] = nil, nil
	e.mu.Unlock()
	return nil
}

// kill kills member i with SIGKILL (continuing it first if it was
// stopped) and waits for it to exit.
func (e *ensemble) kill(ctx context.Context, i int) error {
	if err := e.signal(i, syscall.SIGKILL); err != nil {
		return nil // not running
	}
	return e.waitExit(ctx, i)
}

// stopAll kills every member and closes the logs.
func (e *ensemble) stopAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < e.n; i++ {
		e.signal(i, syscall.SIGCONT)
		e.kill(ctx, i)
	}
	for _, l := range e.logs {
		l.Close()
	}
}

// setDisk writes member i's disk-fault control file ("" removes it).
func (e *ensemble) setDisk(i int, fault string) error {
	if fault == "" {
		err := os.Remove(e.diskCtl[i])
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	tmp := e.diskCtl[i] + ".tmp"
	if err := os.WriteFile(tmp, []byte(fault+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, e.diskCtl[i])
}

// fourLetter sends a four-letter word to member i's client port directly
// (not through a proxy) and returns the answer.
func (e *ensemble) fourLetter(i int, word string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", e.clientAddrs[i], timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
		if b.Len() > 1<<16 {
			break
		}
	}
	return b.String(), nil
}

// mode is member i's answer to srvr's Mode line ("leader", "follower",
// "observer", ...) or "" if it does not answer.
func (e *ensemble) mode(i int) string {
	out, err := e.fourLetter(i, "srvr", 500*time.Millisecond)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// leader returns the member that says it leads, or -1.
func (e *ensemble) leader() int {
	for i := 0; i < e.n; i++ {
		if e.mode(i) == "leader" {
			return i
		}
	}
	return -1
}

// running reports whether member i's process is running (maybe stopped).
func (e *ensemble) running(i int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.procs[i] != nil
}
