package node

import (
	"testing"

	"github.com/zkgo/zkgo/internal/recipetest"
)

// TTL nodes need extended types on both servers.
func TestMain(m *testing.M) { recipetest.MainExtended(m) }
