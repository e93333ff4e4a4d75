// Package lease implements the leases of Python's kazoo
// (kazoo.recipe.lease): NonBlocking (NonBlockingLease) and
// MultiNonBlocking (MultiNonBlockingLease), with kazoo's node layout and
// record format, so Go and Python processes can contend for the same
// leases.
//
// A lease at path is the persistent node "<path>/lease_holder" whose data
// is kazoo's JSON record, written as Python's json.dumps writes it:
//
//	{"version": 1, "holder": "<identifier>", "end": "2024-05-01T12:30:00"}
//
// "end" is the lease's expiry in UTC, at whole seconds, in kazoo's date
// format "%Y-%m-%dT%H:%M:%S". Attempts are serialized by kazoo's lock on
// the lease path itself (ephemeral sequential "<hex>__lock__<seq>"
// children next to lease_holder, see kazoo.recipe.lock). Under the lock, an
// attempt is granted when there is no record, when the record's holder is
// the same identifier (a renewal), or when the record has expired; the
// record is then replaced by one ending duration from now. A record of
// another version is never replaced (kazoo leaves it to a newer client).
//
// A lease is a promise written with the contenders' clocks, not a held
// node: nothing is released when a holder dies, and clocks must roughly
// agree. MultiNonBlocking tries the leases "<path>/0" … "<path>/count-1"
// in order and takes the first it can, so that at most count holders run
// at a time.
package lease
