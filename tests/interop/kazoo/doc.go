// Package kazoo runs Python's kazoo client against zkgo: the interop tests
// in this directory (kazoo over TLS, kazoo's reconfig), and kazoo's own test
// suite (Debian's python3-kazoo ships it as kazoo.tests; it needs
// python3-pytest, python3-mock and python3-objgraph, and python3-pytest-timeout
// for a per-test timeout), whose harness starts each server as
// "java ... QuorumPeerMain zoo.cfg": a java shim first on PATH
// (WriteJavaShim) runs "zkgo server zoo.cfg" instead, and the results are
// read from pytest's JUnit XML report (ParseJUnit).
//
// TestKazooSuite runs the suite against one standalone zkgo server (about
// 1.5 minutes; skipped with -short) and fails on a test that fails twice
// (once in the suite, once more on its own) and is not in its list of known
// failures, or on a known failure that passes. Environment:
//
//	ZKGO_KAZOO_CLUSTER=3     three members instead, as the harness runs
//	                         Apache ZooKeeper by default (1,3: both)
//	ZKGO_KAZOO_SERVER=apache Apache ZooKeeper 3.8 (Debian's jars, real java)
//	                         instead of zkgo: the counts and failures are
//	                         logged, not judged
//	ZKGO_KAZOO_K=EXPR        only the tests pytest's -k EXPR selects
//	ZKGO_KAZOO_TIMEOUT=SECS  the per-test timeout (default 45)
//	ZKGO_KAZOO_LOGDIR=DIR    keep pytest's output, its JUnit reports and the
//	                         servers' logs in DIR/standalone, DIR/3members
package kazoo
