package node

import (
	"fmt"
	"maps"
	"testing"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
)

// TestGroupMember: three members see each other, data changes and a
// departure, each view waiting on its change channel.
func TestGroupMember(t *testing.T) {
	recipetest.ForEach(t, func(t *testing.T, e *env) {
		ctx := recipetest.Ctx(t)
		path := e.Root + "/group"
		var gs []*GroupMember
		want := map[string][]byte{}
		for i := range 3 {
			id := fmt.Sprintf("m%d", i)
			g := NewGroupMember(e.Connect(t), path, id, []byte("d"+id))
			defer g.Close(ctx)
			if err := g.WaitJoined(ctx); err != nil {
				t.Fatal(err)
			}
			gs = append(gs, g)
			want[id] = []byte("d" + id)
		}
		same := func(a, b map[string][]byte) bool {
			return maps.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
		}
		waitView := func(g *GroupMember, want map[string][]byte) {
			t.Helper()
			for range 100 {
				got, changed := g.Members()
				if same(got, want) {
					return
				}
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatalf("view %v, want %v", got, want)
				}
			}
			t.Fatal("view not reached after 100 changes")
		}
		for _, g := range gs {
			waitView(g, want)
		}
		if err := gs[1].SetData(ctx, []byte("new")); err != nil {
			t.Fatal(err)
		}
		want["m1"] = []byte("new")
		for _, g := range gs {
			waitView(g, want)
		}
		if err := gs[2].Close(ctx); err != nil {
			t.Fatal(err)
		}
		delete(want, "m2")
		waitView(gs[0], want)
		waitView(gs[1], want)
	})
}
