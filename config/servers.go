package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// server.N entries and the dynamic configuration file.

// parseDynamic reads a dynamic configuration file: server.N lines only. The
// version comes from the file name's hexadecimal suffix
// (zoo.cfg.dynamic.100000000); ZooKeeper refuses a version= line inside.
func (c *Config) parseDynamic(text, name string) error {
	raw, err := readProperties(text, name)
	if err != nil {
		return err
	}
	p := &parser{c: c, name: name}
	var servers []property
	for _, pr := range dedup(raw, name, &p.warnings) {
		pr.key, pr.value = strings.TrimSpace(pr.key), strings.TrimSpace(pr.value)
		switch {
		case strings.HasPrefix(pr.key, "server."):
			servers = append(servers, pr)
		case pr.key == "version":
			return p.errorf(pr, "a dynamic configuration file must not contain the version; it is the suffix of the file name")
		case strings.HasPrefix(pr.key, "group") || strings.HasPrefix(pr.key, "weight"):
			return p.errorf(pr, "hierarchical quorums (group.N and weight.N) are not supported")
		default:
			return p.errorf(pr, "unrecognised parameter in a dynamic configuration file")
		}
	}
	c.Servers = nil
	if err := p.addServers(servers, c); err != nil {
		return err
	}
	c.Version = 0
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		if v, err := strconv.ParseInt(name[i+1:], 16, 64); err == nil {
			c.Version = v
		}
	}
	return nil
}

func (p *parser) addServers(props []property, c *Config) error {
	seen := make(map[int64]int)
	for _, pr := range props {
		id, err := strconv.ParseInt(strings.TrimPrefix(pr.key, "server."), 10, 64)
		if err != nil {
			return p.errorf(pr, "server id %q is not a number", strings.TrimPrefix(pr.key, "server."))
		}
		if line, ok := seen[id]; ok {
			return p.errorf(pr, "server id %d is also defined on line %d", id, line)
		}
		seen[id] = pr.line
		s, err := parseServer(id, pr.value, c.MultiAddressEnabled)
		if err != nil {
			return p.errorf(pr, "%v", err)
		}
		c.Servers = append(c.Servers, s)
	}
	sort.Slice(c.Servers, func(i, j int) bool { return c.Servers[i].ID < c.Servers[j].ID })
	return nil
}

const serverFormat = "want host:peerPort:electionPort[:participant|:observer][;[clientAddress:]clientPort]"

// parseServer parses the value of a server.N entry (QuorumServer).
func parseServer(id int64, value string, multiAddress bool) (Server, error) {
	s := Server{ID: id}
	parts := javaSplit(value, ";")
	if len(parts) == 0 || strings.TrimSpace(parts[0]) == "" {
		return s, fmt.Errorf("%q: no address; %s", value, serverFormat)
	}
	if len(parts) > 2 {
		return s, fmt.Errorf("%q: more than one ';'; %s", value, serverFormat)
	}
	if len(parts) == 2 {
		cp, err := hostAndPort(parts[1])
		if err != nil {
			return s, err
		}
		if len(cp) == 0 || len(cp) > 2 {
			return s, fmt.Errorf("%q: bad client address %q; %s", value, parts[1], serverFormat)
		}
		if len(cp) == 2 {
			s.ClientAddr = strings.TrimSpace(cp[0])
			if !validHost(s.ClientAddr) {
				return s, fmt.Errorf("%q: bad client address %q", value, cp[0])
			}
		}
		if s.ClientPort, err = parsePort(cp[len(cp)-1]); err != nil {
			return s, fmt.Errorf("client port: %v", err)
		}
	}
	addrs := javaSplit(parts[0], "|")
	if len(addrs) == 0 {
		return s, fmt.Errorf("%q: no address; %s", value, serverFormat)
	}
	if len(addrs) > 1 && !multiAddress {
		return s, fmt.Errorf("several addresses given but the multiple address feature is disabled (set multiAddress.enabled=true)")
	}
	roleSet := false
	for _, a := range addrs {
		sp, err := hostAndPort(a)
		if err != nil {
			return s, err
		}
		if len(sp) < 3 || len(sp) > 4 {
			return s, fmt.Errorf("%q: %s", value, serverFormat)
		}
		// A host is never blank nor padded: " h" would not resolve,
		// and written back to a dynamic file it would not read back.
		host := strings.TrimSpace(sp[0])
		if host == "" {
			return s, fmt.Errorf("%q: empty host", value)
		}
		if !validHost(host) {
			return s, fmt.Errorf("%q: bad host %q", value, sp[0])
		}
		var addr Address
		addr.Host = host
		if addr.PeerPort, err = parsePort(sp[1]); err != nil {
			return s, fmt.Errorf("peer port: %v", err)
		}
		if addr.ElectionPort, err = parsePort(sp[2]); err != nil {
			return s, fmt.Errorf("election port: %v", err)
		}
		if addr.PeerPort == addr.ElectionPort {
			return s, fmt.Errorf("peer and election port must be different")
		}
		if len(sp) == 4 {
			var role Role
			switch strings.ToLower(strings.TrimSpace(sp[3])) {
			case "participant":
				role = Participant
			case "observer":
				role = Observer
			default:
				return s, fmt.Errorf("unrecognised peer type %q", sp[3])
			}
			if roleSet && role != s.Role {
				return s, fmt.Errorf("multiple addresses must have the same role")
			}
			s.Role, roleSet = role, true
		}
		s.Addrs = append(s.Addrs, addr)
	}
	s.Host, s.PeerPort, s.ElectionPort = s.Addrs[0].Host, s.Addrs[0].PeerPort, s.Addrs[0].ElectionPort
	return s, nil
}

// validHost reports whether a host, trimmed, has no brackets, spaces or
// backslashes left: no address has them, and a dynamic file written with
// them would not read back (a backslash is an escape in a properties file).
func validHost(h string) bool {
	return !strings.ContainsAny(h, "[] \t\r\n\f\v\\")
}

// hostAndPort splits "host:port[:...]" at ':', with IPv6 literals in
// brackets (ConfigUtils.getHostAndPort), after trimming spaces.
func hostAndPort(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") {
		return javaSplit(s, ":"), nil
	}
	i := strings.IndexByte(s, ']')
	switch {
	case i < 0:
		return nil, fmt.Errorf("%q starts with '[' but has no matching ']'", s)
	case i+1 == len(s):
		return []string{s[1:i]}, nil
	case s[i+1] != ':' || i+2 == len(s):
		return nil, fmt.Errorf("%q has no port after ']:'", s)
	}
	return append([]string{s[1:i]}, javaSplit(s[i+2:], ":")...), nil
}

// javaSplit is Java's String.split with a literal separator and no limit:
// trailing empty strings are dropped, but a string without the separator
// (including "") is returned whole.
func javaSplit(s, sep string) []string {
	if !strings.Contains(s, sep) {
		return []string{s}
	}
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

func parsePort(s string) (int, error) {
	n, ok := javaParseInt(strings.TrimSpace(s))
	if !ok {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < 0 || n > 65535 {
		return 0, fmt.Errorf("%d is out of range", n)
	}
	return int(n), nil
}
