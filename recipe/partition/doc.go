// Package partition implements kazoo's SetPartitioner
// (kazoo.recipe.partitioner): the members of a party divide a set of
// items among themselves so that each item belongs to one member at a
// time, and divide it again when members come and go. Go and Python
// (kazoo) workers on the same path take part in the same party and agree
// on the split.
//
// The layout is kazoo's: under path, "party" holds one ephemeral node per
// member, "<32 hex digits>-<identifier>" with the identifier as data
// (kazoo's ShallowParty), and "locks" holds one kazoo lock per item,
// "locks/<item>" (see kazoo.recipe.lock), which a member holds while the
// item is in its partition. Identifiers must be unique in the party.
//
// A SetPartitioner goes through kazoo's states:
//
//   - Allocating: waiting until the party has not changed for the time
//     boundary (WithTimeBoundary, default 30 s), then computing this
//     member's partition and taking the items' locks, each attempt bounded
//     by the maximum reaction time (WithMaxReactionTime, default 1 s) so
//     that a party change during allocation starts it over.
//   - Acquired: every lock of the partition is held; Partitions lists the
//     items.
//   - Release: the party changed (or the connection was suspended): call
//     ReleaseSet as soon as possible, which gives the locks back and
//     allocates again.
//   - Failure: the session was lost, or Finish was called; the
//     partitioner is finished, and a new one is needed.
//
// The default partition function (Default) is kazoo's: the items and the
// member identifiers are sorted, and the member at index i of n gets the
// items at i, i+n, i+2n, …. Go sorts strings by bytes, which for UTF-8 is
// Python's code point order, so Go and Python members agree as long as
// the Python members' set holds the same strings (kazoo also accepts
// other objects, which sort differently and lock under str(item)).
package partition
