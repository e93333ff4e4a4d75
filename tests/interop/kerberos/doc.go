// Package kerberos holds the tests of SASL GSSAPI (Kerberos) on the client
// port against a real MIT KDC (tests/framework/testkdc): the Go client (zk) to
// zkgo and to Apache ZooKeeper 3.8, the ZooKeeper Java client and Apache
// Curator to both, and kazoo's GSSAPI path. It has no code of its own.
package kerberos
