package zkdata

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"github.com/zkgo/zkgo/jute"
	"github.com/zkgo/zkgo/proto"
	"github.com/zkgo/zkgo/tree"
)

// The image becomes a zkgo tree through zkgo's own snapshot format (the
// header comment of tree/snapshot.go): WriteZkgoSnapshot writes the image
// as that byte stream and Tree reads it back with tree.ReadSnapshot, which
// checks every invariant the tree relies on. Nothing of the tree's insides
// is set from here.

// systemNodes are the nodes zkgo's tree (and a fresh ZooKeeper DataTree)
// always has, with the ACL and stat a fresh DataTree gives them. An image
// from a snapshot that lacks one (3.4 snapshots have no /zookeeper/config)
// gets it when it becomes a tree.
var systemNodes = []struct {
	path     string
	acl      []proto.ACL
	aversion int32
}{
	{tree.ZookeeperPath, openACL, 0},
	{tree.QuotaPath, openACL, 0},
	{tree.ConfigPath, []proto.ACL{{Perms: proto.PermRead, ID: proto.Id{Scheme: "world", ID: "anyone"}}}, -1},
}

// withSystemNodes returns the image itself if it has every system node,
// else a copy that shares the unchanged nodes and has them added.
func (im *Image) withSystemNodes() *Image {
	missing := false
	for _, s := range systemNodes {
		if im.nodes[s.path] == nil {
			missing = true
		}
	}
	if !missing || im.nodes[""] == nil {
		return im
	}
	cp := *im
	cp.nodes = make(map[string]*znode, len(im.nodes)+3)
	for p, n := range im.nodes {
		cp.nodes[p] = n
	}
	cp.acls = newACLCache()
	for id, l := range im.acls.byID {
		cp.acls.add(id, l)
	}
	for _, s := range systemNodes {
		if cp.nodes[s.path] != nil {
			continue
		}
		pp, name, _ := parentOf(s.path)
		parent := *cp.nodes[pp] // a copy: the original is shared
		parent.kids = make(map[string]struct{}, len(parent.kids)+1)
		for k := range cp.nodes[pp].kids {
			parent.kids[k] = struct{}{}
		}
		parent.kids[name] = struct{}{}
		cp.nodes[pp] = &parent
		cp.nodes[s.path] = &znode{data: []byte{}, acl: cp.acls.intern(s.acl), st: proto.Stat{Aversion: s.aversion}}
	}
	return &cp
}

// Tree returns the image as a zkgo tree: every node with its data, ACL and
// persisted stat (so sequential suffixes, versions and the container and
// TTL markers carry on), every session with the password ZooKeeper gives
// it, and the last zxid. System nodes the image lacks are added as a fresh
// tree has them. opts bounds what the tree accepts (pass the server's
// jute.maxbuffer). An image the tree cannot hold (a path zkgo refuses,
// data over opts.MaxBuffer) gives an error wrapping ErrUnsupported and
// tree.ErrBadSnapshot.
func (im *Image) Tree(opts tree.ReadOptions) (*tree.Tree, error) {
	var buf bytes.Buffer
	if err := im.WriteZkgoSnapshot(&buf); err != nil {
		return nil, err
	}
	t, err := tree.ReadSnapshot(&buf, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return t, nil
}

// WriteZkgoSnapshot writes the image in zkgo's snapshot format (version 1,
// documented in tree/snapshot.go), system nodes added as Tree adds them.
// The server's data-directory seeding can store it as is.
func (im *Image) WriteZkgoSnapshot(w io.Writer) error {
	im = im.withSystemNodes()
	if im.nodes[""] == nil {
		return fmt.Errorf("%w: no root", ErrUnsupported)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		crc  uint32
		werr error
		enc  jute.Encoder
	)
	emit := func(b []byte) {
		if werr != nil {
			return
		}
		crc = crc32.Update(crc, castagnoli, b)
		_, werr = bw.Write(b)
	}
	count := 0
	im.Walk(func(Node) error { count++; return nil })
	enc = *jute.NewEncoder([]byte("ZKGOSNAP"))
	enc.WriteInt(1)
	enc.WriteLong(im.lastZxid)
	enc.WriteInt(int32(count))
	enc.WriteInt(int32(len(im.sessions)))
	emit(enc.Bytes())

	record := func(kind byte, body func(e *jute.Encoder)) {
		enc = *jute.NewEncoder(append(enc.Bytes()[:0], kind, 0, 0, 0, 0))
		body(&enc)
		enc.PutIntAt(1, int32(enc.Len()-5))
		emit(enc.Bytes())
	}
	index := make(map[int64]int32) // ACL id → zkgo ACL index
	err := im.Walk(func(n Node) error {
		zn := im.nodes[zkPath(n.Path)]
		idx, ok := index[zn.acl]
		if !ok {
			idx = int32(len(index))
			index[zn.acl] = idx
			record('A', func(e *jute.Encoder) {
				e.WriteVectorLen(len(n.ACL))
				for i := range n.ACL {
					n.ACL[i].Encode(e)
				}
			})
		}
		record('N', func(e *jute.Encoder) {
			e.WriteString(n.Path)
			e.WriteBuffer(n.Data)
			e.WriteInt(idx)
			n.Stat.Encode(e)
		})
		return werr
	})
	if err != nil {
		return err
	}
	for _, s := range im.Sessions() {
		record('S', func(e *jute.Encoder) {
			e.WriteLong(s.ID)
			e.WriteInt(s.Timeout)
			e.WriteBuffer(s.Passwd)
		})
	}
	var tr [4]byte
	binary.BigEndian.PutUint32(tr[:], crc)
	if werr == nil {
		_, werr = bw.Write(tr[:])
	}
	if werr != nil {
		return werr
	}
	return bw.Flush()
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FromTree returns an image of a zkgo tree: every node with its data, ACL
// and raw stat, every session (id and timeout), the last zxid. It only
// reads t (see tree.Tree for who may read it when).
func FromTree(t *tree.Tree) *Image {
	im := newImage()
	im.lastZxid = t.LastZxid()
	t.Walk(func(p string, n *tree.Node) {
		zp := zkPath(p)
		zn := &znode{data: n.Data(), acl: im.acls.intern(n.ACL()), st: n.RawStat()}
		zn.st.DataLength, zn.st.NumChildren = 0, 0
		if zp != "" {
			pp, name, _ := parentOf(zp)
			if parent := im.nodes[pp]; parent != nil {
				if parent.kids == nil {
					parent.kids = make(map[string]struct{})
				}
				parent.kids[name] = struct{}{}
			}
		}
		im.put(zp, zn)
	})
	for _, s := range t.Sessions() {
		im.sessions[s.ID] = s.Timeout
	}
	im.quotas = make(map[string]struct{})
	for p := range im.nodes {
		if strings.HasPrefix(p, tree.QuotaPath+"/") && strings.HasSuffix(p, "/"+quotaLimitNode) {
			im.quotas[p[len(tree.QuotaPath):len(p)-len(quotaLimitNode)-1]] = struct{}{}
		}
	}
	return im
}
