package partition

import (
	"testing"

	"github.com/zkgo/zkgo/internal/recipetest"
)

func TestMain(m *testing.M) { recipetest.Main(m) }
