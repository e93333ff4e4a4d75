package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/zkgo/zkgo/recipe"
	"github.com/zkgo/zkgo/recipe/internal/kazoolock"
	"github.com/zkgo/zkgo/zk"
)

// HolderNode is the name of the node that carries a lease's record.
const HolderNode = "lease_holder"

// DateFormat is kazoo's "%Y-%m-%dT%H:%M:%S" (UTC, no zone).
const DateFormat = "2006-01-02T15:04:05"

// Version is the record format kazoo writes and accepts.
const Version = 1

// Record is a lease's holder record.
type Record struct {
	Version int
	Holder  string
	End     time.Time // UTC, whole seconds
}

// Lease is the outcome of an attempt.
type Lease struct {
	// Obtained: the lease is this identifier's until End.
	Obtained bool
	// Path is the lease's path (for MultiNonBlocking, the one obtained,
	// or the last one tried).
	Path string
	// Holder and End are the record found (not obtained) or written
	// (obtained); Holder is "" when a record of another version blocked
	// the attempt.
	Holder string
	End    time.Time
}

// Option configures an attempt. It is recipe.Option: of the settings every
// recipe shares, leases use the ACL (recipe.WithACL); the others, and the
// options of other recipe packages, are ignored.
type Option = recipe.Option

type options struct {
	id  string
	now func() time.Time
	acl []zk.ACL
}

// WithIdentifier sets the holder identity (default: the host name, as
// kazoo's socket.gethostname()). Reuse it to renew a lease.
func WithIdentifier(id string) Option { return recipe.Extend(func(o *options) { o.id = id }) }

// WithClock sets the clock the lease is computed with (default
// time.Now; kazoo's utcnow).
func WithClock(now func() time.Time) Option {
	return recipe.Extend(func(o *options) { o.now = now })
}

// WithACL sets the ACL of the nodes created (default: open). It is
// recipe.WithACL.
func WithACL(acl []zk.ACL) Option { return recipe.WithACL(acl) }

func build(opts []Option) (options, error) {
	ro := recipe.Build(opts)
	o := options{now: time.Now, acl: ro.ACL}
	recipe.ApplyExtensions(ro, &o)
	if o.acl == nil {
		o.acl = zk.OpenACLUnsafe
	}
	if o.id == "" {
		h, err := os.Hostname()
		if err != nil {
			return o, fmt.Errorf("lease: no identifier and no host name: %w", err)
		}
		o.id = h
	}
	return o, nil
}

// NonBlocking tries once to obtain (or renew) the lease at path for
// duration (kazoo's NonBlockingLease). It waits only for the lease's lock,
// which other contenders hold briefly.
func NonBlocking(ctx context.Context, src zk.Sessions, path string, duration time.Duration, opts ...Option) (Lease, error) {
	o, err := build(opts)
	if err != nil {
		return Lease{}, err
	}
	return attempt(ctx, src.Current(), path, duration, o)
}

// MultiNonBlocking tries the leases "<path>/0" to "<path>/<count-1>" in
// turn and stops at the first obtained (kazoo's MultiNonBlockingLease).
func MultiNonBlocking(ctx context.Context, src zk.Sessions, count int, path string, duration time.Duration, opts ...Option) (Lease, error) {
	conn := src.Current()
	o, err := build(opts)
	if err != nil {
		return Lease{}, err
	}
	var l Lease
	for i := range count {
		l, err = attempt(ctx, conn, path+"/"+strconv.Itoa(i), duration, o)
		if err != nil || l.Obtained {
			return l, err
		}
	}
	return l, nil
}

// Read returns the record of the lease at path; nil if there is none.
func Read(ctx context.Context, src zk.Sessions, path string) (*Record, error) {
	data, _, err := src.Current().Get(ctx, path+"/"+HolderNode)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

func attempt(ctx context.Context, conn *zk.Conn, path string, duration time.Duration, o options) (Lease, error) {
	out := Lease{Path: path}
	if err := conn.EnsurePath(ctx, path, o.acl); err != nil {
		return out, err
	}
	lock := kazoolock.New(conn, path, o.id, o.acl)
	if err := lock.Acquire(ctx); err != nil {
		return out, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		lock.Release(rctx)
	}()
	now := o.now().UTC()
	holderPath := path + "/" + HolderNode
	data, st, err := get(ctx, conn, holderPath)
	if err != nil {
		return out, err
	}
	var ops []zk.Op
	if st != nil {
		rec, err := Decode(data)
		if err != nil {
			return out, err
		}
		if rec.Version != Version {
			return out, nil
		}
		if rec.Holder != o.id && now.Before(rec.End) {
			out.Holder, out.End = rec.Holder, rec.End
			return out, nil
		}
		ops = append(ops, zk.DeleteOp(holderPath, st.Version))
	}
	rec := Record{Version: Version, Holder: o.id, End: now.Add(duration).Truncate(time.Second)}
	ops = append(ops, zk.CreateOp(holderPath, Encode(rec), o.acl, zk.ModePersistent))
	if _, err := conn.Multi(ctx, ops...); err != nil {
		return out, err
	}
	out.Obtained, out.Holder, out.End = true, rec.Holder, rec.End
	return out, nil
}

func get(ctx context.Context, conn *zk.Conn, p string) ([]byte, *zk.Stat, error) {
	for {
		data, st, err := conn.Get(ctx, p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil, nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue
		}
		return data, st, err
	}
}

// Encode writes r as kazoo does: Python's json.dumps of
// {'version', 'holder', 'end'} (", " and ": " separators, non-ASCII
// escaped as \uXXXX).
func Encode(r Record) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"version": %d, "holder": `, r.Version)
	pyString(&b, r.Holder)
	b.WriteString(`, "end": `)
	pyString(&b, r.End.UTC().Format(DateFormat))
	b.WriteString("}")
	return []byte(b.String())
}

// pyString writes s as Python's json.dumps (ensure_ascii) writes a str.
func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (r >= 0x7f && r < 0x10000):
			fmt.Fprintf(b, `\u%04x`, r)
		case r >= 0x10000:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// Decode parses a lease record (any JSON encoding of kazoo's fields).
func Decode(data []byte) (*Record, error) {
	var raw struct {
		Version json.Number `json:"version"`
		Holder  string      `json:"holder"`
		End     string      `json:"end"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("lease: record %q: %w", data, err)
	}
	r := &Record{Holder: raw.Holder}
	v, err := raw.Version.Float64()
	if err != nil {
		return nil, fmt.Errorf("lease: record %q: version: %w", data, err)
	}
	if v != float64(int(v)) {
		r.Version = -1 // not kazoo's: never replaced
		return r, nil
	}
	r.Version = int(v)
	if r.Version != Version {
		return r, nil
	}
	r.End, err = time.Parse(DateFormat, raw.End)
	if err != nil {
		return nil, fmt.Errorf("lease: record %q: end: %w", data, err)
	}
	return r, nil
}
