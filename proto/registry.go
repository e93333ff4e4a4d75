package proto

// NewRequest returns a fresh zero request body record for a request of type
// op (the body that follows the RequestHeader), or nil when the request has
// no body or op is not a client request.
//
// Requests without a body: OpPing, OpCloseSession, OpWhoAmI.
// Not client requests (nil): OpNotification, OpError, OpCreateSession (the
// handshake is a bare ConnectRequest, not a header-framed request),
// OpDeleteContainer (generated inside the server; ZooKeeper encodes its body
// as raw path bytes, not as a record), and every unknown code.
//
// OpCreate, OpCreate2 and OpCreateContainer share CreateRequest; OpMulti and
// OpMultiRead share MultiRequest (see MultiRequest.IsRead); OpSasl carries a
// GetSASLRequest, as sent by ZooKeeper clients.
func NewRequest(op OpCode) Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return new(CreateRequest)
	case OpCreateTTL:
		return new(CreateTTLRequest)
	case OpDelete:
		return new(DeleteRequest)
	case OpExists:
		return new(ExistsRequest)
	case OpGetData:
		return new(GetDataRequest)
	case OpSetData:
		return new(SetDataRequest)
	case OpGetACL:
		return new(GetACLRequest)
	case OpSetACL:
		return new(SetACLRequest)
	case OpGetChildren:
		return new(GetChildrenRequest)
	case OpGetChildren2:
		return new(GetChildren2Request)
	case OpSync:
		return new(SyncRequest)
	case OpCheck:
		return new(CheckVersionRequest)
	case OpMulti, OpMultiRead:
		return new(MultiRequest)
	case OpReconfig:
		return new(ReconfigRequest)
	case OpCheckWatches:
		return new(CheckWatchesRequest)
	case OpRemoveWatches:
		return new(RemoveWatchesRequest)
	case OpAuth:
		return new(AuthPacket)
	case OpSetWatches:
		return new(SetWatches)
	case OpSasl:
		return new(GetSASLRequest)
	case OpGetEphemerals:
		return new(GetEphemeralsRequest)
	case OpGetAllChildrenNumber:
		return new(GetAllChildrenNumberRequest)
	case OpSetWatches2:
		return new(SetWatches2)
	case OpAddWatch:
		return new(AddWatchRequest)
	}
	return nil
}

// NewResponse returns a fresh zero response body record for a successful
// reply to a request of type op (the body that follows the ReplyHeader), or
// nil when such a reply has no body or op is not a client request. When the
// reply header's Err is not ErrOk, clients must not decode a body: ZooKeeper
// sends none for most failures and clients ignore any it sends.
//
// Replies without a body: OpDelete, OpDeleteContainer, OpPing, OpCheck,
// OpCheckWatches, OpRemoveWatches, OpAuth, OpSetWatches, OpSetWatches2,
// OpCloseSession. Nil as well: OpCreateSession (the handshake reply is a bare
// ConnectResponse), OpError and unknown codes.
//
// Following ZooKeeper 3.8's server: OpCreate2, OpCreateContainer and
// OpCreateTTL reply with Create2Response (a 3.8 client that created a
// container with the plain create API reads only the path and ignores the
// stat); OpReconfig replies with GetDataResponse (the new configuration);
// OpAddWatch replies with ErrorResponse{ErrOk}; OpMulti and OpMultiRead reply
// with MultiResponse; OpSasl with SetSASLResponse. OpNotification maps to
// WatcherEvent, the body of notifications (xid XidNotification).
func NewResponse(op OpCode) Record {
	switch op {
	case OpNotification:
		return new(WatcherEvent)
	case OpCreate:
		return new(CreateResponse)
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		return new(Create2Response)
	case OpExists:
		return new(ExistsResponse)
	case OpGetData, OpReconfig:
		return new(GetDataResponse)
	case OpSetData:
		return new(SetDataResponse)
	case OpGetACL:
		return new(GetACLResponse)
	case OpSetACL:
		return new(SetACLResponse)
	case OpGetChildren:
		return new(GetChildrenResponse)
	case OpGetChildren2:
		return new(GetChildren2Response)
	case OpSync:
		return new(SyncResponse)
	case OpMulti, OpMultiRead:
		return new(MultiResponse)
	case OpSasl:
		return new(SetSASLResponse)
	case OpGetEphemerals:
		return new(GetEphemeralsResponse)
	case OpGetAllChildrenNumber:
		return new(GetAllChildrenNumberResponse)
	case OpAddWatch:
		return new(ErrorResponse)
	case OpWhoAmI:
		return new(WhoAmIResponse)
	}
	return nil
}
