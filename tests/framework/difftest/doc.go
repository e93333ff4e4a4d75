// Package difftest is the engine of the differential tests: it parses
// request scripts and runs each against two servers at once — Apache
// ZooKeeper 3.8, the reference, and zkgo — over raw connections
// (tests/framework/rawzk), then compares the normalised replies and watch
// notifications step by step (Compare).
//
// The script format and the normalisation are described in
// tests/difftest/testdata/README.md. The test packages that use it each
// start their own pair of servers in TestMain (one Apache JVM per
// package): tests/difftest (a standalone server) and
// tests/difftest/reconfig (a quorum of one, for reconfig).
package difftest
