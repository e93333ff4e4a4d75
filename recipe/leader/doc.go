// Package leader implements leader election on ZooKeeper with the node
// layout of Apache Curator's and ZooKeeper's recipes, so Go and Java
// processes can take part in the same election:
//
//   - Latch (Curator's LeaderLatch): "<path>/_c_<uuid>-latch-<seq>", data = id.
//     Start joins; the participant with the lowest sequence number leads
//     until it closes its latch or loses its session.
//   - Selector (Curator's LeaderSelector): a fair queue over a Curator
//     InterProcessMutex ("<path>/_c_<uuid>-lock-<seq>", data = id); each
//     participant, in turn, runs a function while it leads.
//   - Election (ZooKeeper's LeaderElectionSupport): "<root>/n_<seq>",
//     data = host name, with that recipe's event stream.
//
// Every participant watches only the node just ahead of it, so a leader's
// departure wakes one process. Leadership is a recipe.Grant: its Token is a
// fencing token and its Done channel closes when leadership is lost (under
// the default Strict policy already when the connection is suspended).
//
// Event channels (Events) are unbounded and deliver every transition in
// order; they exist only once Events is called, and a caller that asks for
// them must receive until they are closed.
package leader
