package discovery

import (
	"testing"

	"github.com/zkgo/zkgo/tests/framework/recipetest"
)

func TestMain(m *testing.M) { recipetest.Main(m) }
