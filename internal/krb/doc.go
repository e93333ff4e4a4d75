// Package krb is Kerberos for zkgo: credentials from a JAAS section whose
// login module is com.sun.security.auth.module.Krb5LoginModule, as
// ZooKeeper's JVM gets them, and the SASL GSSAPI mechanism (RFC 4752) over
// the Kerberos V5 GSS-API mechanism (RFC 1964 context tokens, RFC 4121 wrap
// tokens), as two pure state machines like internal/sasl's DIGEST-MD5: an
// Initiator (the client) and an Acceptor (the server). The Kerberos
// protocol itself (AS and TGS exchanges, AP-REQ, keytabs, ticket caches,
// krb5.conf) is github.com/jcmturner/gokrb5/v8's.
//
// # Credentials
//
// FromOptions returns the Credentials of a JAAS Krb5LoginModule entry,
// given its options (useKeyTab, keyTab, principal, storeKey,
// useTicketCache, ticketCache, doNotPrompt, isInitiator). Finding that
// entry in a JAAS file is the caller's (package config: ParseJAAS,
// LoadKrb5Options), so that this package imports no other zkgo package
// but internal/boundedfile. Krb5ConfPath names the krb5.conf as Java
// would find it (-Djava.security.krb5.conf) or, without that property,
// as MIT Kerberos would (KRB5_CONFIG, then /etc/krb5.conf). An
// initiator's credentials log in to the KDC when first used (a keytab) or
// come from the ticket cache; an acceptor's are the keys of its keytab
// and never talk to the KDC.
//
// # The exchange
//
// The initiator's first token is an AP-REQ in a GSS-API initial context
// token, asking for mutual authentication; the acceptor answers with an
// AP-REP, the initiator with an empty token, the acceptor with its offer of
// security layers (wrapped: only "no security layer" is offered), the
// initiator with its choice and its authorization id (wrapped), and the
// acceptor ends with nothing to send: Done turns true. The initiator
// learns that the acceptor accepted from the transport (ZooKeeper's OpSasl
// reply without an error, a quorum packet's SUCCESS status) and is told so
// by a last Next(nil). Which tokens are sent, and that empty ones are, is
// what Java's GssKrb5Client and GssKrb5Server do, so either side talks to
// Apache ZooKeeper's.
//
//	ini, err := krb.NewInitiator(clientCreds, "zookeeper", "zk1.example.com")
//	tok, err := ini.Start()
//	for !ini.Done() {
//		reply := send(tok) // the acceptor's token; nil once it has accepted
//		tok, err = ini.Next(reply)
//	}
//
//	acc, err := krb.NewAcceptor(serverCreds)
//	for !acc.Done() {
//		out, err := acc.Next(receive())
//		send(out)
//	}
//	who := acc.Principal() // "client@EXAMPLE.COM"
//
// # Between ensemble members (quorum SASL)
//
// ZooKeeper's quorum SASL with Kerberos (quorum.auth.enableSasl=true and
// the sections QuorumServer and QuorumLearner of the JAAS file) maps to
// this package as follows:
//
//   - The accepting member loads FromOptions(entry.Options, …) of the
//     Krb5LoginModule entry of section "QuorumServer" (section from
//     quorum.auth.server.loginContext) — a keytab with storeKey=true and
//     principal zkquorum/<its host>@REALM — and runs
//     NewAcceptor(creds) for each learner connection, sending each output
//     token in a QuorumAuthPacket until Done, then checks
//     acc.Principal() (for example against the learner's host with
//     ServicePrincipalHost).
//   - The connecting member loads the entry of section "QuorumLearner"
//     (quorum.auth.learner.loginContext) alike and, for a peer at host h,
//     runs NewInitiator(creds, service, host) where service and host come
//     from SplitServicePrincipal(ExpandHost(p, h)) and p is
//     quorum.auth.kerberos.servicePrincipal (default
//     "zkquorum/localhost"); ExpandHost replaces _HOST with h, lower-cased,
//     as ZooKeeper's SecurityUtils.getServerPrincipal does.
//
// The same Credentials serve any number of concurrent exchanges.
package krb
