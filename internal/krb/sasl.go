package krb

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Mechanism is the SASL name of the mechanism.
const Mechanism = "GSSAPI"

// ErrFinished is returned by Next after the exchange ended.
var ErrFinished = errors.New("SASL GSSAPI exchange already finished")

// Security layers of RFC 4752's negotiation. Only "none" is offered or
// chosen, as ZooKeeper does (its qop is "auth").
const layerNone = 1

// maxClockSkew is Kerberos's customary bound, as MIT's and Java's.
const maxClockSkew = 5 * time.Minute

// initiator steps
const (
	iniStart  = iota // Start not called
	iniAPRep         // AP-REQ sent, expecting the AP-REP
	iniOffer         // empty token sent, expecting the wrapped offer
	iniChosen        // choice sent, expecting the acceptor's verdict
	iniDone
	iniFailed
)

// Initiator is the client side of one SASL GSSAPI exchange.
type Initiator struct {
	creds   *Credentials
	spn     string // service/host
	step    int
	auth    types.Authenticator
	session types.EncryptionKey
	keys    wrapKeys
	// AuthzID is the authorization id sent at the end; default the
	// client's principal, as ZooKeeper's Java client sends.
	AuthzID string
}

// NewInitiator returns an exchange that authenticates creds to the service
// principal service/host (in the realm krb5.conf's domain_realm gives
// host, else the default realm): for ZooKeeper's client port "zookeeper"
// and the server's host name.
func NewInitiator(creds *Credentials, service, host string) (*Initiator, error) {
	if creds == nil {
		return nil, errors.New("no Kerberos credentials")
	}
	if service == "" || host == "" || strings.ContainsAny(service+host, "/@") {
		return nil, fmt.Errorf("bad service principal %s/%s", service, host)
	}
	return &Initiator{creds: creds, spn: service + "/" + host, AuthzID: creds.Principal}, nil
}

// ServicePrincipal is the principal the initiator asks a ticket for,
// service/host without the realm.
func (i *Initiator) ServicePrincipal() string { return i.spn }

// Start logs in if needed, gets a service ticket from the KDC (both are
// network exchanges with the KDC, cached by the Credentials) and returns
// the first token: the AP-REQ.
func (i *Initiator) Start() ([]byte, error) {
	if i.step != iniStart {
		return nil, errors.New("Start called twice")
	}
	i.step = iniFailed
	cl, err := i.creds.client()
	if err != nil {
		return nil, err
	}
	tkt, key, err := cl.GetServiceTicket(i.spn)
	if err != nil {
		return nil, fmt.Errorf("service ticket for %s: %w", i.spn, err)
	}
	auth, err := types.NewAuthenticator(cl.Credentials.Domain(), cl.Credentials.CName())
	if err != nil {
		return nil, err
	}
	auth.Cksum = gssChecksum(flagMutual | flagInteg | flagConf | flagSequence)
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, err
	}
	types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	msg, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	i.auth, i.session = auth, key
	i.keys = wrapKeys{key: key}
	i.step = iniAPRep
	return contextToken(tokAPReq, msg), nil
}

// Done reports whether the acceptor accepted: after the last Next.
func (i *Initiator) Done() bool { return i.step == iniDone }

// Next takes the acceptor's token and returns the next one to send. After
// the initiator sent its choice of security layer, the acceptor has
// nothing more to send: the transport says whether it accepted, and the
// caller passes an empty token (nil) to Next, which then returns nil and
// Done reports true. Any error ends the exchange.
func (i *Initiator) Next(token []byte) ([]byte, error) {
	var out []byte
	var err error
	switch i.step {
	case iniAPRep:
		err = i.checkAPRep(token)
		if err == nil {
			i.step = iniOffer
			return []byte{}, nil
		}
	case iniOffer:
		out, err = i.choose(token)
		if err == nil {
			i.step = iniChosen
			return out, nil
		}
	case iniChosen:
		if len(token) == 0 {
			i.step = iniDone
			return nil, nil
		}
		err = fmt.Errorf("unexpected token of %d bytes after the end of the exchange", len(token))
	case iniStart:
		return nil, errors.New("Next before Start")
	default:
		return nil, ErrFinished
	}
	i.step = iniFailed
	return nil, err
}

// checkAPRep verifies the acceptor's AP-REP: it proves the acceptor holds
// the service key.
func (i *Initiator) checkAPRep(token []byte) error {
	id, msg, err := parseContextToken(token)
	if err != nil {
		return err
	}
	switch id {
	case tokAPRep:
	case tokKRBErr:
		return fmt.Errorf("acceptor refused the AP-REQ: %s", krbErrorText(msg))
	default:
		return fmt.Errorf("expected an AP-REP, got a token of id %x", id)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(msg); err != nil {
		return err
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, i.session, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("AP-REP: %v", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return err
	}
	if part.CTime.Unix() != i.auth.CTime.Unix() || part.Cusec != i.auth.Cusec { // KerberosTime has whole seconds
		return errors.New("AP-REP does not answer this AP-REQ (time mismatch)")
	}
	if len(part.Subkey.KeyValue) > 0 {
		i.keys = wrapKeys{key: part.Subkey, acceptorSubkey: true}
	}
	return nil
}

// choose unwraps the acceptor's offer and answers with "no security
// layer" and the authorization id.
func (i *Initiator) choose(token []byte) ([]byte, error) {
	offer, err := i.keys.unwrap(token, true)
	if err != nil {
		return nil, err
	}
	if len(offer) != 4 {
		return nil, fmt.Errorf("security layer offer of %d bytes, not 4", len(offer))
	}
	if offer[0]&layerNone == 0 {
		return nil, fmt.Errorf("acceptor requires a security layer (offer %#x); only none is supported", offer[0])
	}
	resp := append([]byte{layerNone, 0, 0, 0}, i.AuthzID...)
	return i.keys.wrap(resp, uint64(i.auth.SeqNumber), false)
}

// acceptor steps
const (
	accAPReq  = iota // expecting the AP-REQ
	accEmpty         // AP-REP sent, expecting an empty token
	accChoice        // offer sent, expecting the initiator's choice
	accDone
	accFailed
)

// Acceptor is the server side of one SASL GSSAPI exchange.
type Acceptor struct {
	creds     *Credentials
	step      int
	principal string // the initiator's, once its AP-REQ is verified
	authzID   string
	keys      wrapKeys
	seq       uint64 // the acceptor's sequence number
}

// NewAcceptor returns an exchange that accepts tickets for creds's
// principal (any of its keytab's with principal "*").
func NewAcceptor(creds *Credentials) (*Acceptor, error) {
	if creds == nil || creds.kt == nil {
		return nil, errors.New("an acceptor needs keytab credentials")
	}
	return &Acceptor{creds: creds}, nil
}

// Done reports whether the exchange completed: the initiator is
// authenticated as Principal.
func (a *Acceptor) Done() bool { return a.step == accDone }

// Principal is the authenticated initiator's principal,
// "name[/instance]@REALM"; "" until the AP-REQ was verified.
func (a *Acceptor) Principal() string { return a.principal }

// AuthzID is the authorization id the initiator sent at the end ("" for
// none); ZooKeeper's Java client sends its principal.
func (a *Acceptor) AuthzID() string { return a.authzID }

// Next takes the initiator's token and returns the token to send back.
// When the exchange completes it returns nil and Done reports true. Any
// error ends the exchange.
func (a *Acceptor) Next(token []byte) ([]byte, error) {
	var out []byte
	var err error
	switch a.step {
	case accAPReq:
		var mutual bool
		mutual, out, err = a.accept(token)
		if err == nil {
			if mutual {
				a.step = accEmpty
				return out, nil
			}
			a.step = accChoice
			return a.offer()
		}
	case accEmpty:
		if len(token) == 0 {
			a.step = accChoice
			return a.offer()
		}
		err = fmt.Errorf("expected an empty token after the AP-REP, got %d bytes", len(token))
	case accChoice:
		err = a.checkChoice(token)
		if err == nil {
			a.step = accDone
			return nil, nil
		}
	default:
		return nil, ErrFinished
	}
	a.step = accFailed
	return nil, err
}

// accept verifies the AP-REQ and returns the AP-REP when the initiator
// asked for mutual authentication.
func (a *Acceptor) accept(token []byte) (mutual bool, rep []byte, err error) {
	id, msg, err := parseContextToken(token)
	if err != nil {
		return false, nil, err
	}
	if id != tokAPReq {
		return false, nil, fmt.Errorf("expected an AP-REQ, got a token of id %x", id)
	}
	var req messages.APReq
	if err := req.Unmarshal(msg); err != nil {
		return false, nil, err
	}
	c := a.creds
	sname := strings.Join(req.Ticket.SName.NameString, "/")
	if c.Principal != "*" && (sname != c.name || req.Ticket.Realm != c.realm) {
		return false, nil, fmt.Errorf("ticket is for %s@%s, not %s", sname, req.Ticket.Realm, c.Principal)
	}
	opts := []func(*service.Settings){service.DecodePAC(false), service.MaxClockSkew(maxClockSkew)}
	if c.Principal != "*" {
		opts = append(opts, service.KeytabPrincipal(c.name))
	}
	ok, _, err := service.VerifyAPREQ(&req, service.NewSettings(c.kt, opts...))
	if err != nil {
		return false, nil, fmt.Errorf("AP-REQ for %s@%s: %v", sname, req.Ticket.Realm, err)
	}
	if !ok {
		return false, nil, errors.New("AP-REQ not valid")
	}
	auth := req.Authenticator
	gssFlags, err := checksumFlags(auth.Cksum)
	if err != nil {
		return false, nil, err
	}
	session := req.Ticket.DecryptedEncPart.Key
	a.keys = wrapKeys{key: session}
	if len(auth.SubKey.KeyValue) > 0 {
		a.keys = wrapKeys{key: auth.SubKey}
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return false, nil, err
	}
	a.seq = uint64(binary.BigEndian.Uint32(b[:]) & 0x3fffffff)
	a.principal = strings.Join(auth.CName.NameString, "/") + "@" + auth.CRealm
	mutual = gssFlags&flagMutual != 0 || types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired)
	if !mutual {
		// Without an AP-REP both sides count from the initiator's
		// sequence number (RFC 4121 4.2.1; Java's Krb5Context checks
		// it: a wrong one is a "Gap token"). Java's SASL client asks
		// for no mutual authentication.
		a.seq = uint64(auth.SeqNumber) & 0xffffffff
		return false, nil, nil
	}
	msg, err = apRep(auth, session, int64(a.seq))
	if err != nil {
		return false, nil, err
	}
	return true, contextToken(tokAPRep, msg), nil
}

// offer returns the wrapped offer: no security layer, and the largest
// message the acceptor takes (ZooKeeper's Java server says 65536).
func (a *Acceptor) offer() ([]byte, error) {
	out, err := a.keys.wrap([]byte{layerNone, 0x01, 0x00, 0x00}, a.seq, true)
	if err != nil {
		a.step = accFailed
		return nil, err
	}
	return out, nil
}

// checkChoice unwraps the initiator's choice of security layer and its
// authorization id.
func (a *Acceptor) checkChoice(token []byte) error {
	p, err := a.keys.unwrap(token, false)
	if err != nil {
		return err
	}
	if len(p) < 4 {
		return fmt.Errorf("security layer choice of %d bytes, shorter than 4", len(p))
	}
	if p[0] != layerNone {
		return fmt.Errorf("initiator chose security layer %#x; only none (1) is offered", p[0])
	}
	if !utf8.Valid(p[4:]) {
		return errors.New("authorization id is not UTF-8")
	}
	a.authzID = string(p[4:])
	return nil
}
