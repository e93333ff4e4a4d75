// Package reconfigdiff holds the differential tests of reconfig: request
// scripts (testdata/*.txt, the format of
// tests/difftest/testdata/README.md, run by tests/framework/difftest)
// against a quorum of one of Apache ZooKeeper 3.8 (QuorumPeerMain,
// standaloneEnabled=false, reconfigEnabled=true) and of zkgo
// (server.Options.DisableStandalone, ReconfigEnabled), both with the
// super digest of super:test. The scripts' $PEER, $ELECTION and $CLIENT
// are each server's ports of its own server.1 line; /zookeeper/config
// versions are compared by rank (version=V1 is the oldest of the run).
//
// The scripts run one after the other: a successful reconfig changes the
// configuration both servers keep for the next script, so every script
// leaves the membership as it found it (server.1 alone) and
// /zookeeper/config's ACL as it was.
//
// It needs Apache ZooKeeper 3.8 (Debian package "zookeeper"); without it
// the tests print a "skipping: ..." line and pass. Set
// ZKGO_REQUIRE_APACHE_ZK=1 to make them fail instead. Run with
//
//	go test ./tests/difftest/reconfig/ -count=1
//	go test ./tests/difftest/reconfig/ -run 'TestReconfigDiff/badlines' -v
package reconfigdiff
