package recipe_test

import (
	"testing"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/zk"
)

type lockSettings struct{ data string }
type cacheSettings struct{ depth int }

func TestOptionsSharedAndExtended(t *testing.T) {
	acl := zk.WorldACL(zk.PermRead)
	opts := []recipe.Option{
		recipe.WithACL(acl),
		recipe.Extend(func(s *lockSettings) { s.data = "a" }),
		nil,
		recipe.WithPolicy(recipe.Session),
		recipe.Extend(func(s *cacheSettings) { s.depth = 3 }),
		recipe.Extend(func(s *lockSettings) { s.data += "b" }),
		recipe.WithRetry(zk.NTimes{N: 2}),
	}
	o := recipe.Build(opts)
	if len(o.ACL) != 1 || o.ACL[0] != acl[0] || o.Policy != recipe.Session || o.Retry != (zk.NTimes{N: 2}) {
		t.Fatalf("common settings: %+v", o)
	}
	var l lockSettings
	recipe.ApplyExtensions(o, &l)
	if l.data != "ab" {
		t.Fatalf("lock settings %q, want the two in order", l.data)
	}
	var c cacheSettings
	recipe.ApplyExtensions(o, &c)
	if c.depth != 3 {
		t.Fatalf("cache settings %+v", c)
	}
	if d := recipe.Build(nil); d.ACL != nil || d.Policy != recipe.Strict || d.Retry != nil {
		t.Fatalf("defaults: %+v", d)
	}
}
