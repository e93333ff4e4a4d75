package deploy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Every script runs a 3-member ensemble on three machines, once per
// implementation (zkgo, and Apache ZooKeeper 3.8 when installed), and
// checks the same things of both: exactly one leader with the two others
// following, and a write through one member read through another.

// serverLine is a server.N line naming host, IPv6 literals bracketed.
func serverLine(id int64, host string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("server.%d=%s:2888:3888;2181", id, host)
}

// eachImpl runs script once per implementation, as a subtest with a
// context of its own.
func eachImpl(t *testing.T, timeout time.Duration, script func(ctx context.Context, t *testing.T, im impl)) {
	for _, im := range impls(t) {
		t.Run(string(im), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			script(ctx, t, im)
		})
	}
}

// threeMachines makes the network and three machines, 1..3.
func threeMachines(t *testing.T, second bool) (*network, []*machine) {
	n := newNetwork(t, second)
	return n, []*machine{n.addMachine(1), n.addMachine(2), n.addMachine(3)}
}

// configure makes one member of im per machine, server ids from first,
// member i with the zoo.cfg body config(i) and the JVM flags flags.
func configure(t testing.TB, im impl, ms []*machine, first int64, config func(i int) string, flags ...string) ensemble {
	var e ensemble
	for i, m := range ms {
		mb := newMember(t, im, m, first+int64(i))
		mb.jvmFlags = flags
		mb.writeConfig(config(i))
		e = append(e, mb)
	}
	return e
}

// lines is server lines first, first+1, … naming hosts.
func lines(first int64, hosts ...string) string {
	var out []string
	for i, h := range hosts {
		out = append(out, serverLine(first+int64(i), h))
	}
	return strings.Join(out, "\n")
}

// formAndReplicate starts e, waits for a leader and checks a write
// through one follower is read on the other.
func formAndReplicate(ctx context.Context, t *testing.T, e ensemble) {
	t.Helper()
	for _, m := range e {
		m.start()
	}
	lead := e.waitLeader(ctx, t)
	var others []*member
	for _, m := range e {
		if m != lead {
			others = append(others, m)
		}
	}
	writeThenRead(ctx, t, others[0], others[1], "/"+string(e[0].impl))
	writeThenRead(ctx, t, lead, others[0], "/"+string(e[0].impl)+"-2")
}

// The official Docker image's compose idiom: each member lists itself as
// 0.0.0.0 and the others by host name (zoo1, zoo2, zoo3).
func TestDockerComposeIdiom(t *testing.T) {
	eachImpl(t, 2*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		n, ms := threeMachines(t, false)
		for i, m := range ms {
			n.setName(fmt.Sprintf("zoo%d", i+1), m.ip4)
		}
		formAndReplicate(ctx, t, configure(t, im, ms, 1, func(i int) string {
			hosts := []string{"zoo1", "zoo2", "zoo3"}
			hosts[i] = "0.0.0.0"
			return lines(1, hosts...)
		}))
	})
}

// Server ids from 0, as ZooKeeper's own test configurations number them,
// each member named by its IP address.
func TestServerIDsFromZero(t *testing.T) {
	eachImpl(t, 2*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		_, ms := threeMachines(t, false)
		formAndReplicate(ctx, t, configure(t, im, ms, 0, func(int) string {
			return lines(0, ms[0].ip4, ms[1].ip4, ms[2].ip4)
		}))
	})
}

// Members that name each other differently: by IPv4 address, by host
// name, by IPv6 literal, mixed in each file. Server 3 is an IPv6 host
// (its name resolves to its IPv6 address, and it lists itself so).
func TestMixedNamesAndAddresses(t *testing.T) {
	eachImpl(t, 2*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		n, ms := threeMachines(t, false)
		n.setName("zk1.example.net", ms[0].ip4)
		n.setName("zk2.example.net", ms[1].ip4)
		n.setName("zk3.example.net", ms[2].ip6)
		views := [][]string{
			{ms[0].ip4, "zk2.example.net", ms[2].ip6},
			{"zk1.example.net", "zk2.example.net", "zk3.example.net"},
			{ms[0].ip4, ms[1].ip4, ms[2].ip6},
		}
		formAndReplicate(ctx, t, configure(t, im, ms, 1, func(i int) string { return lines(1, views[i]...) }))
	})
}

// IPv6 only: every server line is an IPv6 literal.
func TestIPv6Only(t *testing.T) {
	eachImpl(t, 2*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		_, ms := threeMachines(t, false)
		formAndReplicate(ctx, t, configure(t, im, ms, 1, func(int) string {
			return lines(1, ms[0].ip6, ms[1].ip6, ms[2].ip6)
		}))
	})
}

// Members behind NAT: every member (itself included) is listed at an
// address of the hub that forwards to it — an address no member can
// listen on — so each needs quorumListenOnAllIPs=true, as with
// ZooKeeper: it listens on every interface at its line's ports (20000+j
// peer, 21000+j election), which the hub forwards to it.
func TestBehindNATWithQuorumListenOnAllIPs(t *testing.T) {
	eachImpl(t, 2*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		n, ms := threeMachines(t, false)
		var servers []string
		for i, m := range ms {
			peer, elect := 20001+i, 21001+i
			n.proxy(fmt.Sprintf("%s:%d", n.hubAddr(), peer), fmt.Sprintf("%s:%d", m.ip4, peer))
			n.proxy(fmt.Sprintf("%s:%d", n.hubAddr(), elect), fmt.Sprintf("%s:%d", m.ip4, elect))
			servers = append(servers, fmt.Sprintf("server.%d=%s:%d:%d;2181", i+1, n.hubAddr(), peer, elect))
		}
		formAndReplicate(ctx, t, configure(t, im, ms, 1, func(int) string {
			return "quorumListenOnAllIPs=true\n" + strings.Join(servers, "\n")
		}))
	})
}

// Members reach each other through proxies: each member's zoo.cfg lists
// the others at addresses of its own (a proxy per pair, on the hub), so
// no two files agree on any address but their own.
func TestMembersBehindProxies(t *testing.T) {
	eachImpl(t, 2*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		n, ms := threeMachines(t, false)
		formAndReplicate(ctx, t, configure(t, im, ms, 1, func(i int) string {
			var servers []string
			for j, o := range ms {
				if j == i {
					servers = append(servers, serverLine(int64(j+1), o.ip4))
					continue
				}
				peer, elect := 22000+10*i+j, 23000+10*i+j // member i's way to member j
				n.proxy(fmt.Sprintf("%s:%d", n.hubAddr(), peer), o.ip4+":2888")
				n.proxy(fmt.Sprintf("%s:%d", n.hubAddr(), elect), o.ip4+":3888")
				servers = append(servers, fmt.Sprintf("server.%d=%s:%d:%d;2181", j+1, n.hubAddr(), peer, elect))
			}
			return strings.Join(servers, "\n")
		}))
	})
}

// multiAddress: each member has two networks; its line names the second
// network's address first, and that network is down (its bridge is). The
// members dial each address in turn and form over the first network.
// ZooKeeper 3.8 reads the switch as a system property when it parses the
// server lines (zoo.cfg's key is not enough there; zkgo takes either).
func TestMultiAddressFirstDown(t *testing.T) {
	eachImpl(t, 2*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		n, ms := threeMachines(t, true)
		n.ip("-n", n.hub, "link", "set", "br1", "down")
		var servers []string
		for i, m := range ms {
			servers = append(servers, fmt.Sprintf("server.%d=%s:2888:3888|%s:2888:3888;2181", i+1, m.ip4b, m.ip4))
		}
		formAndReplicate(ctx, t, configure(t, im, ms, 1, func(int) string { return strings.Join(servers, "\n") },
			"-Dzookeeper.multiAddress.enabled=true"))
	})
}

// The Kubernetes StatefulSet idiom: members are named by the FQDNs of a
// headless service (zk-0.zk-hs.default.svc.cluster.local …), myid is the
// ordinal plus one, and a name resolves only once its pod runs. Then a
// pod is rescheduled: it comes back on another address under the same
// name and data, and the ensemble takes it back.
func TestKubernetesStatefulSet(t *testing.T) {
	eachImpl(t, 3*time.Minute, func(ctx context.Context, t *testing.T, im impl) {
		n, ms := threeMachines(t, false)
		fqdn := func(i int) string { return fmt.Sprintf("zk-%d.zk-hs.default.svc.cluster.local", i) }
		e := configure(t, im, ms, 1, func(int) string { return lines(1, fqdn(0), fqdn(1), fqdn(2)) })
		// Pods start one after the other (OrderedReady); each name
		// resolves from when its pod starts.
		for i, mb := range e {
			n.setName(fqdn(i), mb.m.ip4)
			mb.start()
			if i == 0 {
				time.Sleep(time.Second) // the first pod alone for a while, as it waits for its readiness
			}
		}
		lead := e.waitLeader(ctx, t)
		writeThenRead(ctx, t, lead, e[(indexOf(e, lead)+1)%3], "/before")
		// A follower's pod is rescheduled: killed, its name gone, back
		// on a new address with its data.
		moved := e[(indexOf(e, lead)+1)%3]
		moved.kill()
		n.setName(fqdn(indexOf(e, moved)), "")
		moved.m.renumber(moved.m.idx + 100)
		n.setName(fqdn(indexOf(e, moved)), moved.m.ip4)
		moved.start()
		e.waitLeader(ctx, t)
		writeThenRead(ctx, t, moved, e[(indexOf(e, moved)+1)%3], "/after-move")
	})
}

func indexOf(e ensemble, m *member) int {
	for i, x := range e {
		if x == m {
			return i
		}
	}
	return -1
}
