// Package tlsdiff holds differential tests of client TLS, x509
// authentication and the ACL and watch CVE cases: the same requests, over
// TLS with several client certificates (distinct subjects, one with
// characters RFC 2253 escapes and attributes without an RFC 2253 keyword,
// one from an untrusted CA, none at all), against an in-process zkgo
// server and a real Apache ZooKeeper 3.8, both configured alike: a TLS
// client port with ssl.clientAuth=want and PEM stores, the x509
// authentication provider, an x509 super user
// (X509AuthenticationProvider.superUser) and a digest super user.
//
// Each case (cases_test.go) runs once per server under its own root and
// writes a transcript, one normalised line per step (error codes, data,
// ACL lists, whoAmI identities, watch notifications, the class of a
// refused connection); the transcripts must be identical, except for
// steps marked as deliberate differences (docs/COMPATIBILITY.md).
//
// The package has its own Apache JVM (Netty with TLS), separate from
// difftest's. Without Apache ZooKeeper 3.8 and libnetty-java the tests
// print a "skipping: ..." line and pass; ZKGO_REQUIRE_APACHE_ZK=1 makes
// them fail instead.
//
//	go test ./tests/difftest/tlsdiff/ -run 'TestTLSDiff/x509_acl$' -v
package tlsdiff
