package node

import (
	"testing"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
)

// TTL nodes need extended types on both servers.
func TestMain(m *testing.M) { recipetest.MainExtended(m) }
