// Package link hands package recipe/recipeutil what package recipe keeps
// unexported, without an import cycle: recipeutil imports recipe (for
// Grant and Policy), so recipe cannot import recipeutil, and Grant's
// fields are recipe's own.
package link

import "github.com/zkgo/zkgo/zk"

// Hold is recipe's hold, set by package recipe when it is initialized
// (before any package that imports recipe). Its dynamic type is
//
//	func(ctx context.Context, conn *zk.Conn, path string, czxid int64,
//		policy recipe.Policy, onData func([]byte)) (*recipe.Grant, error)
var Hold any

// HoldRead is recipe's holdRead: Hold for a node whose read with a watch
// its caller started already (early delivers it, once), so that taking
// the grant costs no round trip: if the read is not back yet, the grant
// starts at once and its monitor takes the read when it comes. Its
// dynamic type is
//
//	func(ctx context.Context, conn *zk.Conn, path string, czxid int64,
//		policy recipe.Policy, onData func([]byte),
//		early <-chan link.Read) (*recipe.Grant, error)
var HoldRead any

// Read is a node's data as read with a watch (zk.Conn.GetW).
type Read struct {
	Data []byte
	Ev   <-chan zk.Event
	Err  error
}
