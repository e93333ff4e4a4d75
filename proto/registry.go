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
	if o := Op(op); o != nil && o.Request != nil && o.Kind != KindInternal {
		return o.Request()
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
	if o := Op(op); o != nil && o.Response != nil {
		return o.Response()
	}
	return nil
}
