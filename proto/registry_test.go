package proto

import (
	"fmt"
	"reflect"
	"testing"
)

func TestNewRequest(t *testing.T) {
	tests := []struct {
		op   OpCode
		want Record // nil: no body
	}{
		{OpNotification, nil},
		{OpCreate, &CreateRequest{}},
		{OpDelete, &DeleteRequest{}},
		{OpExists, &ExistsRequest{}},
		{OpGetData, &GetDataRequest{}},
		{OpSetData, &SetDataRequest{}},
		{OpGetACL, &GetACLRequest{}},
		{OpSetACL, &SetACLRequest{}},
		{OpGetChildren, &GetChildrenRequest{}},
		{OpSync, &SyncRequest{}},
		{OpPing, nil},
		{OpGetChildren2, &GetChildren2Request{}},
		{OpCheck, &CheckVersionRequest{}},
		{OpMulti, &MultiRequest{}},
		{OpCreate2, &CreateRequest{}},
		{OpReconfig, &ReconfigRequest{}},
		{OpCheckWatches, &CheckWatchesRequest{}},
		{OpRemoveWatches, &RemoveWatchesRequest{}},
		{OpCreateContainer, &CreateRequest{}},
		{OpDeleteContainer, nil},
		{OpCreateTTL, &CreateTTLRequest{}},
		{OpMultiRead, &MultiRequest{}},
		{OpAuth, &AuthPacket{}},
		{OpSetWatches, &SetWatches{}},
		{OpSasl, &GetSASLRequest{}},
		{OpGetEphemerals, &GetEphemeralsRequest{}},
		{OpGetAllChildrenNumber, &GetAllChildrenNumberRequest{}},
		{OpSetWatches2, &SetWatches2{}},
		{OpAddWatch, &AddWatchRequest{}},
		{OpWhoAmI, nil},
		{OpCreateSession, nil},
		{OpCloseSession, nil},
		{OpError, nil},
		{OpCode(10), nil},
		{OpCode(23), nil},
		{OpCode(108), nil},
		{OpCode(-12), nil},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			got := NewRequest(tt.op)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NewRequest(%v) = %#v, want %#v", tt.op, got, tt.want)
			}
			if got != nil && got == NewRequest(tt.op) {
				t.Errorf("NewRequest(%v) returned a shared record", tt.op)
			}
		})
	}
}

func TestNewResponse(t *testing.T) {
	tests := []struct {
		op   OpCode
		want Record
	}{
		{OpNotification, &WatcherEvent{}},
		{OpCreate, &CreateResponse{}},
		{OpDelete, nil},
		{OpExists, &ExistsResponse{}},
		{OpGetData, &GetDataResponse{}},
		{OpSetData, &SetDataResponse{}},
		{OpGetACL, &GetACLResponse{}},
		{OpSetACL, &SetACLResponse{}},
		{OpGetChildren, &GetChildrenResponse{}},
		{OpSync, &SyncResponse{}},
		{OpPing, nil},
		{OpGetChildren2, &GetChildren2Response{}},
		{OpCheck, nil},
		{OpMulti, &MultiResponse{}},
		{OpCreate2, &Create2Response{}},
		{OpReconfig, &GetDataResponse{}},
		{OpCheckWatches, nil},
		{OpRemoveWatches, nil},
		{OpCreateContainer, &Create2Response{}},
		{OpDeleteContainer, nil},
		{OpCreateTTL, &Create2Response{}},
		{OpMultiRead, &MultiResponse{}},
		{OpAuth, nil},
		{OpSetWatches, nil},
		{OpSasl, &SetSASLResponse{}},
		{OpGetEphemerals, &GetEphemeralsResponse{}},
		{OpGetAllChildrenNumber, &GetAllChildrenNumberResponse{}},
		{OpSetWatches2, nil},
		{OpAddWatch, &ErrorResponse{}},
		{OpWhoAmI, &WhoAmIResponse{}},
		{OpCreateSession, nil},
		{OpCloseSession, nil},
		{OpError, nil},
		{OpCode(999), nil},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			if got := NewResponse(tt.op); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NewResponse(%v) = %#v, want %#v", tt.op, got, tt.want)
			}
		})
	}
}

// TestRegistryZeroRoundTrip round-trips the zero value of every registered
// record type.
func TestRegistryZeroRoundTrip(t *testing.T) {
	for op := OpCode(-20); op <= 120; op++ {
		for i, rec := range []Record{NewRequest(op), NewResponse(op)} {
			if rec == nil {
				continue
			}
			t.Run(fmt.Sprintf("%v/%d", op, i), func(t *testing.T) {
				got, err := decodeAll(rec, encode(rec), true)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, rec) {
					t.Errorf("got %+v want %+v", got, rec)
				}
			})
		}
	}
}
