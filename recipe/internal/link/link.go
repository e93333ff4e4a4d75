// Package link hands package recipe/recipeutil what package recipe keeps
// unexported, without an import cycle: recipeutil imports recipe (for
// Grant and Policy), so recipe cannot import recipeutil, and Grant's
// fields are recipe's own.
package link

// Hold is recipe's hold, set by package recipe when it is initialized
// (before any package that imports recipe). Its dynamic type is
//
//	func(ctx context.Context, conn *zk.Conn, path string, czxid int64,
//		policy recipe.Policy, onData func([]byte)) (*recipe.Grant, error)
var Hold any

// HoldWatched is recipe's holdWatched: Hold for a node its caller already
// read with a watch (data, and the watch's channel ev), so that taking
// the grant costs no round trip. Its dynamic type is
//
//	func(ctx context.Context, conn *zk.Conn, path string, czxid int64,
//		policy recipe.Policy, onData func([]byte), data []byte,
//		ev <-chan zk.Event) (*recipe.Grant, error)
var HoldWatched any
