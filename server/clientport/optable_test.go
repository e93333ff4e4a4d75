package clientport

import (
	"reflect"
	"testing"

	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// Every client opcode of proto's table has its handler here: reads a read
// handler, writes a reply builder making the table's response record, so
// that an opcode added to the table without one fails this test instead
// of a request at run time. (The tree's apply handlers are checked by
// tree.TestEveryLoggedOpApplies.)
func TestEveryOpHasAHandler(t *testing.T) {
	for _, o := range proto.Ops() {
		_, isRead := readHandlers[o.Code]
		reply, isWrite := writeReplies[o.Code]
		if isRead != (o.Kind == proto.KindRead) {
			t.Errorf("%s: read handler %v, kind %v", o.Name, isRead, o.Kind)
		}
		if isWrite != (o.Kind == proto.KindWrite) {
			t.Errorf("%s: write reply %v, kind %v", o.Name, isWrite, o.Kind)
		}
		if isWrite && o.Response != nil {
			got := reply(&tree.Result{})
			if reflect.TypeOf(got) != reflect.TypeOf(o.Response()) {
				t.Errorf("%s: reply body %T, table says %T", o.Name, got, o.Response())
			}
		}
		if isWrite && !tree.Applies(o.Code) {
			t.Errorf("%s: a write the tree does not apply", o.Name)
		}
	}
	for op := range readHandlers {
		if proto.Op(op) == nil {
			t.Errorf("read handler for %v, which is not in the table", op)
		}
	}
	for op := range writeReplies {
		if proto.Op(op) == nil {
			t.Errorf("write reply for %v, which is not in the table", op)
		}
	}
}
