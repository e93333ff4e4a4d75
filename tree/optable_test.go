package tree

import (
	"testing"

	"github.com/zkgo/zkgo/proto"
)

// Every opcode that proto's table marks as logged has an apply handler,
// and nothing else has one: an opcode added to the table without its
// handler fails here, not when a member applies it.
func TestEveryLoggedOpApplies(t *testing.T) {
	for _, o := range proto.Ops() {
		if got := Applies(o.Code); got != o.Logged() {
			t.Errorf("%s (%d): Applies = %v, but the table says logged = %v", o.Name, o.Code, got, o.Logged())
		}
	}
	for op := range applyHandlers {
		if o := proto.Op(op); o == nil || !o.Logged() {
			t.Errorf("apply handler for %v, which the table does not mark as logged", op)
		}
	}
}
