package node

import (
	"context"

	"github.com/zkgo/zkgo/recipe/internal/children"
	"github.com/zkgo/zkgo/zk"
)

// GroupMember is Curator's GroupMember: membership of the group at path
// as the ephemeral node path/<id> holding the member's data (kept by a
// PersistentNode), and a view of all the group's members.
type GroupMember struct {
	node *PersistentNode
	view *children.Watcher
}

// NewGroupMember joins the group at path as id with data and starts
// following the group's members.
func NewGroupMember(src zk.Sessions, path, id string, data []byte, opts ...Option) *GroupMember {
	return &GroupMember{
		node: New(src, path+"/"+id, zk.ModeEphemeral, data, opts...),
		view: children.Start(src, path),
	}
}

// WaitJoined waits until this member's node has been created.
func (g *GroupMember) WaitJoined(ctx context.Context) error {
	if _, err := g.node.WaitCreated(ctx); err != nil {
		return err
	}
	return g.view.WaitReady(ctx)
}

// SetData changes this member's data (PersistentNode.SetData).
func (g *GroupMember) SetData(ctx context.Context, data []byte) error {
	return g.node.SetData(ctx, data)
}

// Members returns the group's members (id → data) as last read, and a
// channel closed when that view next changes. The map is the caller's.
func (g *GroupMember) Members() (map[string][]byte, <-chan struct{}) {
	_, data, changed := g.view.View()
	return data, changed
}

// Close leaves the group: the member's node is deleted and the view stops.
func (g *GroupMember) Close(ctx context.Context) error {
	g.view.Close()
	return g.node.Close(ctx)
}
