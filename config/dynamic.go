package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DynamicText returns the ensemble's membership in the text ZooKeeper keeps
// in /zookeeper/config (QuorumMaj.toString): one
// "server.N=host:peerPort:electionPort:participant|observer[;clientAddr:clientPort]"
// line per member in id order, then "version=<hex>". The client part is
// written only when the server.N entry has one (";port" alone gives
// 0.0.0.0), as ZooKeeper omits a client address that came from clientPort.
// Several quorum addresses (multiAddress) are joined with '|', sorted by
// host as ZooKeeper does. Curator's EnsembleTracker rewrites its connection
// string from these lines.
func (c *Config) DynamicText() string { return ServersText(c.Servers, c.Version) }

// ServersText is DynamicText for a membership given as its servers and
// version.
func ServersText(list []Server, version int64) string {
	servers := append([]Server(nil), list...)
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	var b strings.Builder
	for _, s := range servers {
		b.WriteString("server." + strconv.FormatInt(s.ID, 10) + "=")
		addrs := append([]Address(nil), s.Addrs...)
		if len(addrs) == 0 {
			addrs = []Address{{Host: s.Host, PeerPort: s.PeerPort, ElectionPort: s.ElectionPort}}
		}
		sort.SliceStable(addrs, func(i, j int) bool { return addrs[i].Host < addrs[j].Host })
		for i, a := range addrs {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(delimitedHost(a.Host) + ":" + strconv.Itoa(a.PeerPort) + ":" + strconv.Itoa(a.ElectionPort))
		}
		if s.Role == Observer {
			b.WriteString(":observer")
		} else {
			b.WriteString(":participant")
		}
		if s.ClientPort != 0 {
			host := s.ClientAddr
			if host == "" {
				host = "0.0.0.0"
			}
			b.WriteString(";" + delimitedHost(host) + ":" + strconv.Itoa(s.ClientPort))
		}
		b.WriteByte('\n')
	}
	b.WriteString("version=" + strconv.FormatInt(version, 16))
	return b.String()
}

// ParseServerLine parses one dynamic-configuration line,
// "server.N=host:peerPort:electionPort[:role][;[clientAddr:]clientPort]",
// as the reconfig operation receives them.
func ParseServerLine(line string) (Server, error) { return ParseServerLineMulti(line, false) }

// ParseServerLineMulti is ParseServerLine that reads several '|'-separated
// addresses when multiAddress is set (multiAddress.enabled): a reconfig's
// lines are read so; a running ensemble's own membership text always (its
// zoo.cfg allowed them when it was read).
func ParseServerLineMulti(line string, multiAddress bool) (Server, error) {
	s, err := ParseReconfigLine(line, multiAddress)
	if err == nil && !ValidServerID(s.ID) {
		err = fmt.Errorf("%q: want server.N=host:peerPort:electionPort[:role][;[clientAddr:]clientPort] with N in 0..254", line)
	}
	return s, err
}

// ParseReconfigLine is ParseServerLineMulti that takes any server id, as
// ZooKeeper reads a reconfig's lines (any long): the reconfig refuses an
// id zkgo cannot have (ValidServerID) only after the checks ZooKeeper
// makes first, so that it answers what ZooKeeper answers until then.
func ParseReconfigLine(line string, multiAddress bool) (Server, error) {
	k, v, ok := strings.Cut(line, "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	id, err := strconv.ParseInt(strings.TrimPrefix(k, "server."), 10, 64)
	if !ok || !strings.HasPrefix(k, "server.") || err != nil {
		return Server{}, fmt.Errorf("%q: want server.N=host:peerPort:electionPort[:role][;[clientAddr:]clientPort]", line)
	}
	return parseServer(id, v, multiAddress)
}

// ValidServerID reports whether id is a server id zkgo takes: 0..254 (its
// raft ids carry the server id in one byte).
func ValidServerID(id int64) bool { return id >= 0 && id <= 254 }

// delimitedHost brackets an IPv6 literal, as ZooKeeper's
// NetUtils.formatInetAddr does, and any other host with a colon (an
// IPv4-mapped address such as ::ffff:10.0.0.1, which Java turns into an
// Inet4Address and writes bare, or a bracketed name): without brackets
// the line would not read back.
func delimitedHost(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}
