package krb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// The Kerberos V5 GSS-API mechanism's tokens (RFC 1964 section 1.1 framing
// of context tokens, RFC 4121 wrap tokens), on top of gokrb5's messages.

// Token ids of context tokens (RFC 4121 section 4.1).
var (
	tokAPReq  = [2]byte{0x01, 0x00}
	tokAPRep  = [2]byte{0x02, 0x00}
	tokKRBErr = [2]byte{0x03, 0x00}
)

// GSS-API context flags of the authenticator checksum (RFC 4121 4.1.1.1).
const (
	flagDeleg    = 1
	flagMutual   = 2
	flagReplay   = 4
	flagSequence = 8
	flagConf     = 16
	flagInteg    = 32
)

// Wrap token flags (RFC 4121 4.2.2).
const (
	wrapSentByAcceptor = 0x01
	wrapSealed         = 0x02
	wrapAcceptorSubkey = 0x04
)

// maxToken bounds the tokens this package takes (a Kerberos ticket with a
// large PAC is some kilobytes; ZooKeeper's packets are bounded anyway).
const maxToken = 64 << 10

// contextToken frames a Kerberos message as an RFC 1964 InitialContextToken
// (or a later context token, which has the same framing in RFC 4121):
// [APPLICATION 0] { mech OID, token id, message }.
func contextToken(id [2]byte, msg []byte) []byte {
	oid, _ := asn1.Marshal(gssapi.OIDKRB5.OID())
	b := make([]byte, 0, len(oid)+2+len(msg))
	b = append(b, oid...)
	b = append(b, id[:]...)
	b = append(b, msg...)
	return asn1tools.AddASNAppTag(b, 0)
}

// parseContextToken returns the token id and the message of a context
// token, checking that the mechanism is Kerberos V5.
func parseContextToken(tok []byte) (id [2]byte, msg []byte, err error) {
	if len(tok) > maxToken {
		return id, nil, fmt.Errorf("GSS-API token of %d bytes (at most %d)", len(tok), maxToken)
	}
	var oid asn1.ObjectIdentifier
	rest, err := asn1.UnmarshalWithParams(tok, &oid, "application,explicit,tag:0")
	if err != nil {
		return id, nil, fmt.Errorf("not a GSS-API context token: %v", err)
	}
	if !oid.Equal(gssapi.OIDKRB5.OID()) {
		return id, nil, fmt.Errorf("GSS-API token of mechanism %s, not Kerberos V5", oid)
	}
	if len(rest) < 2 {
		return id, nil, errors.New("GSS-API token without a token id")
	}
	copy(id[:], rest)
	return id, rest[2:], nil
}

// krbErrorText describes a KRB-ERROR context token.
func krbErrorText(msg []byte) string {
	var ke messages.KRBError
	if err := ke.Unmarshal(msg); err != nil {
		return "unparsable KRB-ERROR: " + err.Error()
	}
	return ke.Error()
}

// gssChecksum is the authenticator checksum of type 0x8003 (RFC 4121
// 4.1.1): no channel bindings, flags.
func gssChecksum(flags uint32) types.Checksum {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[0:4], 16)
	binary.LittleEndian.PutUint32(b[20:24], flags)
	return types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: b}
}

// checksumFlags returns the context flags of an authenticator's checksum.
func checksumFlags(c types.Checksum) (uint32, error) {
	if c.CksumType != chksumtype.GSSAPI {
		return 0, fmt.Errorf("authenticator checksum of type %d, not the GSS-API's 0x8003", c.CksumType)
	}
	if len(c.Checksum) < 24 || binary.LittleEndian.Uint32(c.Checksum[0:4]) != 16 {
		return 0, errors.New("malformed GSS-API authenticator checksum")
	}
	for _, b := range c.Checksum[4:20] {
		if b != 0 {
			// Channel bindings were asked for: neither ZooKeeper nor
			// zkgo binds the channel, so they cannot match.
			return 0, errors.New("the initiator asked for channel bindings")
		}
	}
	return binary.LittleEndian.Uint32(c.Checksum[20:24]), nil
}

// encAPRepPart is RFC 4120's EncAPRepPart without a subkey, for
// marshalling (gokrb5 only parses it).
type encAPRepPart struct {
	CTime          time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec          int       `asn1:"explicit,tag:1"`
	SequenceNumber int64     `asn1:"explicit,tag:3"`
}

// apRep builds the AP-REP of mutual authentication: the authenticator's
// time and the acceptor's initial sequence number, encrypted in the
// session key.
func apRep(auth types.Authenticator, sessionKey types.EncryptionKey, seq int64) ([]byte, error) {
	part, err := asn1.Marshal(encAPRepPart{CTime: auth.CTime, Cusec: auth.Cusec, SequenceNumber: seq})
	if err != nil {
		return nil, err
	}
	part = asn1tools.AddASNAppTag(part, asnAppTag.EncAPRepPart)
	ed, err := crypto.GetEncryptedData(part, sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, err
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: ed})
	if err != nil {
		return nil, err
	}
	return asn1tools.AddASNAppTag(rep, asnAppTag.APREP), nil
}

// wrapKeys are the keys of a context's wrap tokens (RFC 4121 2): the
// acceptor's subkey if it sent one, else the initiator's subkey, else the
// ticket's session key.
type wrapKeys struct {
	key            types.EncryptionKey
	acceptorSubkey bool
}

func (k wrapKeys) flags(fromAcceptor bool) byte {
	var f byte
	if fromAcceptor {
		f |= wrapSentByAcceptor
	}
	if k.acceptorSubkey {
		f |= wrapAcceptorSubkey
	}
	return f
}

// wrap returns a wrap token without confidentiality (RFC 4752 only uses
// those) carrying payload.
func (k wrapKeys) wrap(payload []byte, seq uint64, fromAcceptor bool) ([]byte, error) {
	et, err := crypto.GetEtype(k.key.KeyType)
	if err != nil {
		return nil, err
	}
	usage := uint32(keyusage.GSSAPI_INITIATOR_SEAL)
	if fromAcceptor {
		usage = keyusage.GSSAPI_ACCEPTOR_SEAL
	}
	wt := gssapi.WrapToken{
		Flags:     k.flags(fromAcceptor),
		EC:        uint16(et.GetHMACBitLength() / 8),
		SndSeqNum: seq,
		Payload:   payload,
	}
	if err := wt.SetCheckSum(k.key, usage); err != nil {
		return nil, err
	}
	return wt.Marshal()
}

// unwrap checks a wrap token from the peer and returns its payload.
func (k wrapKeys) unwrap(tok []byte, fromAcceptor bool) ([]byte, error) {
	if len(tok) > maxToken {
		return nil, fmt.Errorf("wrap token of %d bytes", len(tok))
	}
	if len(tok) < gssapi.HdrLen {
		return nil, fmt.Errorf("wrap token of %d bytes, shorter than its header", len(tok))
	}
	if tok[0] != 0x05 || tok[1] != 0x04 {
		return nil, fmt.Errorf("token id %x, not a wrap token (0504)", tok[:2])
	}
	if tok[2]&wrapSealed != 0 {
		return nil, errors.New("sealed wrap token: confidentiality is not used by SASL GSSAPI's negotiation")
	}
	if (tok[2]&wrapAcceptorSubkey != 0) != k.acceptorSubkey {
		return nil, errors.New("wrap token's AcceptorSubkey flag does not match the context")
	}
	// Undo the right rotation (RRC) of the data after the header
	// (RFC 4121 4.2.5); senders of unsealed tokens mostly use none.
	b := append([]byte(nil), tok...)
	body := b[gssapi.HdrLen:]
	if rrc := int(binary.BigEndian.Uint16(b[6:8])); rrc != 0 && len(body) > 0 {
		rrc %= len(body)
		rotated := append(append([]byte(nil), body[rrc:]...), body[:rrc]...)
		copy(body, rotated)
	}
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(b, fromAcceptor); err != nil {
		return nil, err
	}
	usage := uint32(keyusage.GSSAPI_INITIATOR_SEAL)
	if fromAcceptor {
		usage = keyusage.GSSAPI_ACCEPTOR_SEAL
	}
	if ok, err := wt.Verify(k.key, usage); !ok {
		return nil, fmt.Errorf("wrap token: %v", err)
	}
	return wt.Payload, nil
}
