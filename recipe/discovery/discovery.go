package discovery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/zkgo/zkgo/recipe/node"
	"github.com/zkgo/zkgo/zk"
)

// Errors.
var (
	// ErrNotRegistered: Update or Unregister of an instance this Discovery
	// did not register.
	ErrNotRegistered = errors.New("discovery: instance not registered here")
	// ErrNoInstances: a Provider has no instance to offer (none registered,
	// or all down).
	ErrNoInstances = errors.New("discovery: no instances")
)

// Discovery registers and finds service instances under a base path
// (Curator's ServiceDiscovery): instance id of service name is the node
// base/name/id holding the instance's JSON. Its methods may be called from
// any goroutine.
type Discovery struct {
	src  zk.Sessions
	base string

	// mu guards registered.
	mu         sync.Mutex
	registered map[string]*registration // by name + "/" + id
}

type registration struct {
	inst *Instance
	node *node.PersistentNode // nil for Permanent instances
	path string               // for Permanent instances
}

// New returns a Discovery under base. src is a *zk.Conn or a *zk.Redialer
// (registrations of Dynamic instances then survive session expiry).
func New(src zk.Sessions, base string) *Discovery {
	return &Discovery{src: src, base: base, registered: map[string]*registration{}}
}

// NewInstance returns an instance of service name with a random id,
// address and port, registered now, of type Dynamic.
func NewInstance(name, address string, port int) *Instance {
	var b [16]byte
	rand.Read(b[:])
	return &Instance{Name: name, ID: hex.EncodeToString(b[:]), Address: address, Port: Int(port),
		RegistrationTimeUTC: time.Now().UnixMilli(), ServiceType: Dynamic}
}

func (d *Discovery) instancePath(name, id string) string { return d.base + "/" + name + "/" + id }

// Register writes the instance and keeps it registered: Dynamic and
// DynamicSequential instances are ephemeral PersistentNodes (created again
// after a deletion or, with a *zk.Redialer, a session expiry); Static
// instances are persistent PersistentNodes; Permanent instances are
// written once. It returns once the node exists. Registering an id again
// replaces the earlier registration's data.
func (d *Discovery) Register(ctx context.Context, in *Instance) error {
	data, err := in.Encode()
	if err != nil {
		return err
	}
	key := in.Name + "/" + in.ID
	d.mu.Lock()
	old := d.registered[key]
	d.mu.Unlock()
	if old != nil {
		return d.Update(ctx, in)
	}
	path := d.instancePath(in.Name, in.ID)
	r := &registration{inst: in, path: path}
	switch in.ServiceType {
	case Permanent:
		c := d.src.Current()
		_, err := c.CreateAll(ctx, path, data, zk.OpenACLUnsafe, zk.ModePersistent, zk.AsContainers())
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = c.Set(ctx, path, data, zk.AnyVersion)
		}
		if err != nil {
			return err
		}
	default:
		mode := zk.ModeEphemeral
		switch in.ServiceType {
		case Static:
			mode = zk.ModePersistent
		case DynamicSequential:
			mode = zk.ModeEphemeralSequential
		}
		r.node = node.New(d.src, path, mode, data)
		if _, err := r.node.WaitCreated(ctx); err != nil {
			r.node.Close(context.WithoutCancel(ctx))
			return err
		}
	}
	d.mu.Lock()
	d.registered[key] = r
	d.mu.Unlock()
	return nil
}

// Update writes the new data of a registered instance (same name and id)
// and waits until the node holds it.
func (d *Discovery) Update(ctx context.Context, in *Instance) error {
	data, err := in.Encode()
	if err != nil {
		return err
	}
	d.mu.Lock()
	r := d.registered[in.Name+"/"+in.ID]
	if r != nil {
		r.inst = in
	}
	d.mu.Unlock()
	if r == nil {
		return ErrNotRegistered
	}
	if r.node == nil {
		_, err := d.src.Current().Set(ctx, r.path, data, zk.AnyVersion)
		return err
	}
	return r.node.SetData(ctx, data)
}

// Unregister stops keeping the instance and deletes its node (a guaranteed
// delete). A Permanent instance is deleted too.
func (d *Discovery) Unregister(ctx context.Context, in *Instance) error {
	key := in.Name + "/" + in.ID
	d.mu.Lock()
	r := d.registered[key]
	delete(d.registered, key)
	d.mu.Unlock()
	if r == nil {
		return ErrNotRegistered
	}
	if r.node == nil {
		err := d.src.DeleteGuaranteed(ctx, r.path, zk.AnyVersion)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
		return err
	}
	return r.node.Close(ctx)
}

// Close unregisters every instance registered here except the Permanent
// ones.
func (d *Discovery) Close(ctx context.Context) error {
	d.mu.Lock()
	var regs []*registration
	for k, r := range d.registered {
		if r.node != nil {
			regs = append(regs, r)
			delete(d.registered, k)
		}
	}
	d.mu.Unlock()
	var errs []error
	for _, r := range regs {
		errs = append(errs, r.node.Close(ctx))
	}
	return errors.Join(errs...)
}

// Names returns the names of the services that have a node under base.
func (d *Discovery) Names(ctx context.Context) ([]string, error) {
	names, _, err := d.src.Current().Children(ctx, d.base)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	sort.Strings(names)
	return names, err
}

// Instances returns the instances of service name, sorted by id. Nodes that
// vanish while being read are skipped, and so are nodes whose data is not
// an instance.
func (d *Discovery) Instances(ctx context.Context, name string) ([]*Instance, error) {
	c := d.src.Current()
	ids, _, err := c.Children(ctx, d.base+"/"+name)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(ids)
	var out []*Instance
	for _, id := range ids {
		data, _, err := c.Get(ctx, d.instancePath(name, id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if in, err := Decode(data); err == nil {
			out = append(out, in)
		}
	}
	return out, nil
}

// Instance returns the instance at base/name/id, or an error wrapping
// zk.ErrNoNode.
func (d *Discovery) Instance(ctx context.Context, name, id string) (*Instance, error) {
	data, _, err := d.src.Current().Get(ctx, d.instancePath(name, id))
	if err != nil {
		return nil, err
	}
	return Decode(data)
}
