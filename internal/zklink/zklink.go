// Package zklink hands the module's recipes what package zk keeps
// unexported: the recipes use zk's public API, and these few calls are
// not part of it.
package zklink

// CreateProtectedListed is zk's createProtected with its list: a
// protected create followed on the same connection, without waiting for
// its reply, by a GetChildren2 of the parent, so that a contender sees
// the queue it joined in the create's round trip. Set by package zk when
// it is initialized; its dynamic type is
//
//	func(c *zk.Conn, ctx context.Context, path string, data []byte,
//		acl []zk.ACL, mode zk.CreateMode) (string, *zk.Stat, []string, error)
//
// children is nil when the list did not come with the create.
var CreateProtectedListed any
