// Package difftest holds differential tests: the same request scripts run
// against an in-process zkgo server and a real Apache ZooKeeper 3.8 server,
// and the normalised replies and watch notifications must be identical.
//
// Scripts live in testdata/*.txt. See testdata/README.md for the format,
// and docs/COMPATIBILITY.md for the deliberate differences. The engine
// that runs them is tests/framework/difftest; tests/difftest/reconfig
// runs its own scripts (reconfig's error paths) against a quorum of one
// of each. The TLS and x509 cases (client certificates, x509 ACLs and
// super users) are in tests/difftest/tlsdiff, against an Apache server
// with a TLS port.
//
// The tests need Apache ZooKeeper 3.8 (Debian package "zookeeper"); without
// it they print a "skipping: ..." line and pass. Set
// ZKGO_REQUIRE_APACHE_ZK=1 to make them fail instead. Run a single script
// with
//
//	go test ./tests/difftest/ -run 'TestDiff/create' -v
package difftest
