package console

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the tests leave no goroutine behind: Close ends the
// console's feed, streams and sessions.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
