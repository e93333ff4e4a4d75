// Package deploy tests zkgo the way operators deploy Apache ZooKeeper:
// members as real processes on machines of their own, configured by the
// zoo.cfg files ZooKeeper's documentation, its official Docker image,
// Helm charts and Kubernetes StatefulSets use, reaching each other by
// host names, IPv4 and IPv6 addresses, through proxies and NAT. Where
// Apache ZooKeeper 3.8 can run the same script, it runs too, and the
// tests check that both behave alike.
//
// Each "machine" is a Linux network namespace the test creates (and
// removes): its own interfaces and addresses (10.x.y.n and fd7a:x:y::n on
// a bridge in a hub namespace), its own ports 2181/2888/3888, and, for
// its processes, its own /etc/hosts and /etc/resolv.conf (a mount
// namespace per process, the files bind-mounted), so that a name can
// resolve late, change address, or not resolve at all. The test reaches
// the members from the hub namespace. Nothing is left in the host's own
// network: traffic stays inside the namespaces.
//
// The tests need root, iproute2 and unshare (util-linux); without them
// they skip with a message. Apache ZooKeeper's side needs Debian's
// zookeeper package and Java; without them only zkgo's side runs.
// ZKGO_DEPLOY_BIN=path runs another zkgo binary (an earlier build, to
// show what a test catches).
package deploy
