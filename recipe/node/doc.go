// Package node keeps nodes in ZooKeeper across connection problems, as
// Apache Curator's "nodes" recipes do:
//
//   - PersistentNode (Curator's PersistentNode): an ephemeral,
//     ephemeral-sequential, persistent, persistent-sequential, container or
//     TTL node, optionally with Curator's protected name
//     (parent/_c_<uuid>-<name>[seq], WithProtection), that is created again
//     whenever it goes away, holding the latest data given to SetData.
//   - TTLNode (Curator's PersistentTtlNode): a container node kept by a
//     PersistentNode, with a child "touch" created with a TTL and touched
//     every TTL/2; when nobody touches it any more the server removes the
//     child and then the container.
//   - GroupMember (Curator's GroupMember): membership of a group (an
//     ephemeral PersistentNode <group>/<id> holding the member's data),
//     with a view of all members.
//
// Missing parents are created as containers (Curator's
// creatingParentContainersIfNeeded).
//
// # Connection problems
//
// A node is kept through a Sessions: a *zk.Conn, or a *zk.Redialer, which
// starts a new session after each expiry.
//
//   - Suspended: nothing is done; the node is left as it is (an ephemeral
//     node lives as long as the session). Path keeps returning the last
//     path. SetData waits for the reconnection (or its context; the data is
//     still written later).
//   - Reconnected (the same session): the node's data watch, re-registered
//     by the Conn, reports what happened meanwhile; a node deleted while
//     disconnected is created again, and data set meanwhile is written.
//     An ephemeral-sequential node keeps its path.
//   - Lost (session expiry): the session's ephemeral nodes are gone. With
//     a *zk.Redialer the node is created again on the next session, with
//     the current data; a sequential or protected node gets a new path.
//     With a *zk.Conn there is no next session: Done closes and Err
//     returns zk.ErrSessionExpired.
//
// A node whose plain (not sequential, not protected) path is taken by
// someone else is taken over: its data is overwritten with ours. Close
// deletes the node with a guaranteed delete (zk.Conn.DeleteGuaranteed);
// a TTLNode's Close leaves its nodes to expire.
//
// GroupMember's view watches the group's children and reads each
// member's data after every change notification (a children watch set
// before the read, so no change is missed between two reads). It is
// self-contained; it may later be rebuilt on the general path cache of
// recipe/cache.
package node
