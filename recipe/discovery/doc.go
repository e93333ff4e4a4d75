// Package discovery is curator-x-discovery's service discovery: instance
// id of service name is the node <base>/<name>/<id> holding the
// instance's JSON exactly as Curator's JsonInstanceSerializer writes it
// (name, id, address, port, sslPort, payload, registrationTimeUTC,
// serviceType, uriSpec), so Go and Java processes find each other's
// services.
//
//	d := discovery.New(redialer, "/services")
//	err := d.Register(ctx, discovery.NewInstance("api", "10.0.0.1", 8080))
//	p, err := d.NewProvider(ctx, "api", discovery.WithStrategy(discovery.RoundRobin()))
//	in, err := p.Instance()
//
// Register keeps an instance registered with a recipe/node PersistentNode
// (ephemeral for Dynamic, ephemeral-sequential for DynamicSequential,
// persistent for Static); Permanent instances are written once and left by
// Close. A Provider (Curator's ServiceProvider over a ServiceCache)
// follows the service's instances with a children watch and a data watch
// per instance, picks one with a Strategy (RoundRobin, Random, Sticky) and
// skips instances reported down (WithDownInstancePolicy, Curator's
// DownInstancePolicy).
//
// # Connection problems
//
//   - Suspended: registrations are left as they are; a Provider keeps
//     offering the last list it read (which may be stale).
//   - Reconnected: watches fire for what changed meanwhile; a Provider
//     reads the list again, and a registration whose node was deleted
//     meanwhile is written again.
//   - Lost (session expiry): Dynamic instances are gone from ZooKeeper.
//     With a *zk.Redialer they are registered again, and Providers read
//     the list again, on the next session; with a *zk.Conn registrations
//     stop (their PersistentNode's Err is zk.ErrSessionExpired) and a
//     Provider keeps its last list.
package discovery
