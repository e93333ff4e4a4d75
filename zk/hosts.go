package zk

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A HostProvider chooses the server a Conn connects to: WithHostProvider
// plugs one in (DNS SRV records, a service registry, ...). The default is
// a HostList of the connect string's servers. Its methods may be called
// from several goroutines at once.
type HostProvider interface {
	// Next returns the address ("host:port") to try next. The Conn calls
	// it before every connection attempt and dials the address as given,
	// so a host name is resolved again at each attempt. An error counts as
	// a failed attempt.
	Next(ctx context.Context) (string, error)
	// Connected reports that a session was established or resumed
	// through addr.
	Connected(addr string)
	// Failed reports that connecting to addr failed with err.
	Failed(addr string, err error)
	// Update replaces the servers: Connect calls it with the connect
	// string's servers (if there are any), and ensemble tracking
	// (WithEnsembleTracking) with the members' client addresses each time
	// the ensemble's dynamic configuration changes. A provider that
	// discovers the servers by other means may ignore it.
	Update(servers []string)
	// Servers returns the servers known now. The Conn tries
	// len(Servers()) addresses (at least one) before pausing as its
	// connect retry policy says, and asks these servers whether they are
	// read-write while connected to a read-only one.
	Servers() []string
}

// HostList is the default HostProvider: it hands out its servers in turn,
// in an order shuffled (unless told not to) when the list is made and each
// time Update changes it. It never resolves names itself: the Conn's
// dialer resolves them at every attempt, so a member whose name moves to
// another address is reached at the new one.
type HostList struct {
	shuffle bool

	mu      sync.Mutex // guards servers, next, current
	servers []string
	next    int    // index of the server Next returns
	current string // the server of the last Connected
}

// NewHostList returns a HostList of servers ("host:port" each), shuffled
// if shuffle is set.
func NewHostList(servers []string, shuffle bool) *HostList {
	h := &HostList{shuffle: shuffle}
	h.Update(servers)
	return h
}

var errNoHosts = errors.New("zk: the host provider has no servers")

// Next returns the next server of the list, round robin.
func (h *HostList) Next(context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.servers) == 0 {
		return "", errNoHosts
	}
	h.next %= len(h.servers)
	a := h.servers[h.next]
	h.next++
	return a, nil
}

// Connected remembers addr as the current server.
func (h *HostList) Connected(addr string) {
	h.mu.Lock()
	h.current = addr
	h.mu.Unlock()
}

// Failed does nothing: the next attempt goes to the next server anyway.
func (h *HostList) Failed(string, error) {}

// Update replaces the list with servers (duplicates and empty entries
// dropped); an empty list, or one with the same servers, changes nothing.
// The new list is shuffled (if the HostList shuffles) with the current
// server, if it is still listed, moved to the end: after a disconnection
// the others are tried first, as after any failure.
func (h *HostList) Update(servers []string) {
	var list []string
	for _, s := range servers {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if sameSet(list, h.servers) {
		return
	}
	if h.shuffle {
		rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	}
	if i := slices.Index(list, h.current); i >= 0 && h.current != "" {
		list = append(slices.Delete(list, i, i+1), h.current)
	}
	h.servers, h.next = list, 0
}

// Servers returns a copy of the list, in the order Next hands it out from
// its start.
func (h *HostList) Servers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.servers)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// WithHostProvider makes the Conn take its servers from p instead of a
// HostList of the connect string's servers (the connect string may then
// hold only a chroot, or nothing). Connect gives p the connect string's
// servers, if any, with Update; ensemble tracking (on by default) gives it
// the members read from /zookeeper/config. WithHostShuffle does not apply
// to p. A nil p changes nothing.
func WithHostProvider(p HostProvider) Option {
	return func(c *config) {
		if p != nil {
			c.provider = p
		}
	}
}

// WithEnsembleTracking controls whether the Conn follows the ensemble's
// membership, as Curator's EnsembleTracker does: after connecting it reads
// the dynamic configuration (/zookeeper/config, outside any chroot) with a
// watch, and each time it changes replaces the server list (HostProvider
// Update) with the members' client addresses. Turn it off to pin the list
// given to Connect. Default true.
func WithEnsembleTracking(track bool) Option {
	return func(c *config) { c.noTrack = !track }
}

// Servers returns the servers the Conn connects to now: the connect
// string's, or the ensemble's members once ensemble tracking has read the
// configuration (see WithEnsembleTracking), or what the HostProvider says.
func (c *Conn) Servers() []string { return c.hosts.Servers() }

// ConfigClientAddrs returns the client addresses ("host:port") of the
// members (participants and observers) listed in a dynamic configuration,
// the data of /zookeeper/config: lines
// "server.N=host:peerPort:electionPort[:role][;[clientHost:]clientPort]"
// and "version=...". A member with a wildcard client host (0.0.0.0, ::) or
// none is given its server.N host; one without a client port is left out.
// The addresses are in the order of the lines, without duplicates.
func ConfigClientAddrs(data []byte) []string {
	var addrs []string
	for _, line := range strings.Split(string(data), "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || !strings.HasPrefix(strings.TrimSpace(key), "server.") {
			continue
		}
		quorum, client, ok := strings.Cut(strings.TrimSpace(val), ";")
		if !ok {
			continue
		}
		// Multiple quorum addresses (ZooKeeper 3.6+) are separated by "|";
		// the first one's host stands for the server.
		quorum, _, _ = strings.Cut(quorum, "|")
		host := quorumHost(strings.TrimSpace(quorum))
		chost, cport := "", strings.TrimSpace(client)
		if h, p, err := net.SplitHostPort(cport); err == nil {
			chost, cport = h, p
		}
		if i := strings.IndexByte(chost, '/'); i >= 0 { // "name/ip", as InetSocketAddress prints
			if chost[:i] != "" {
				chost = chost[:i]
			} else {
				chost = chost[i+1:]
			}
		}
		if port, err := strconv.Atoi(cport); err != nil || port <= 0 || port > 65535 {
			continue
		}
		if chost == "" || isWildcard(chost) {
			chost = host
		}
		if chost == "" {
			continue
		}
		if a := net.JoinHostPort(chost, cport); !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// quorumHost returns the host of "host:peer:election[:role]" (the host
// may be a bracketed IPv6 address).
func quorumHost(s string) string {
	if strings.HasPrefix(s, "[") {
		if i := strings.IndexByte(s, ']'); i > 0 {
			return s[1:i]
		}
		return ""
	}
	h, _, _ := strings.Cut(s, ":")
	return h
}

func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// trackEnsemble runs for the life of a Conn with ensemble tracking: it
// reads /zookeeper/config with a watch and gives the members' client
// addresses to the host provider, again each time the watch fires. The
// watch is re-registered by every reconnection like any other (and fires
// at once if the configuration changed meanwhile). A server that does
// not let the session read the configuration (ACL, or no
// /zookeeper/config before ZooKeeper 3.5) stops the tracking, once, with
// a log line: the Conn keeps the list it has.
func (c *Conn) trackEnsemble() {
	defer close(c.trackDone)
	pause := 50 * time.Millisecond
	var last []string
	for {
		data, _, ch, err := c.GetConfigW(c.ctx)
		if err != nil {
			switch {
			case c.ctx.Err() != nil, errors.Is(err, ErrClosing), errors.Is(err, ErrSessionExpired):
				return
			case IsRetryable(err):
				c.cfg.logger.Debug("zk: reading the ensemble configuration", "err", err)
				t := time.NewTimer(pause)
				select {
				case <-t.C:
				case <-c.ctx.Done():
					t.Stop()
					return
				}
				pause = min(2*pause, 2*time.Second)
				continue
			default:
				c.cfg.logger.Info("zk: cannot read the ensemble configuration; not tracking the ensemble", "path", ConfigNode, "err", err, "servers", c.hosts.Servers())
				return
			}
		}
		pause = 50 * time.Millisecond
		if addrs := ConfigClientAddrs(data); len(addrs) > 0 && !sameSet(addrs, last) {
			c.hosts.Update(addrs)
			if last != nil {
				c.cfg.logger.Info("zk: ensemble membership changed", "servers", addrs)
			} else {
				c.cfg.logger.Debug("zk: ensemble members", "servers", addrs)
			}
			last = addrs
		}
		select {
		case ev := <-ch:
			if ev.Type == EventNotWatching {
				return
			}
		case <-c.ctx.Done():
			return
		}
	}
}
