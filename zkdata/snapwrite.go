package zkdata

import (
	"compress/gzip"
	"fmt"
	"io"
	"slices"

	"github.com/zkgo/zkgo/tree"
)

// WriteOptions say how WriteSnapshot writes.
type WriteOptions struct {
	// Compression is "" (a plain snapshot, ZooKeeper's default), "gz" or
	// "snappy", as zookeeper.snapshot.compression.method; the file name
	// must carry the same suffix (SnapshotName).
	Compression string
	// NoDigest leaves out the 3.6+ digest section (ZooKeeper 3.4 and 3.5
	// read snapshots with it too: they stop at the first seal).
	NoDigest bool
}

// WriteSnapshot writes the whole state of t as an Apache ZooKeeper 3.8
// snapshot to w (see Image.WriteSnapshot). The file must be called
// SnapshotName(t.LastZxid(), opts.Compression) in the version-2 directory.
// It only reads t.
func WriteSnapshot(w io.Writer, t *tree.Tree, opts WriteOptions) error {
	return FromTree(t).WriteSnapshot(w, opts)
}

// WriteSnapshot writes the image as an Apache ZooKeeper 3.8 snapshot:
// header, sessions (by id), the ACL cache (the lists nodes use, by id), the
// nodes from the root down (siblings by name; ZooKeeper itself writes them
// in hash order, which readers do not depend on), the Adler-32 seal, then,
// unless opts.NoDigest, the tree digest at the last zxid (digest version 2)
// and a second seal. ZooKeeper compares that digest with the tree it
// loads and logs any mismatch. The snapshot is not fuzzy: its name's zxid
// is the image's last zxid, and it needs no log after it.
func (im *Image) WriteSnapshot(w io.Writer, opts WriteOptions) error {
	var (
		out    io.Writer = w
		closer io.Closer
	)
	switch opts.Compression {
	case "":
	case "gz":
		zw := gzip.NewWriter(w)
		out, closer = zw, zw
	case "snappy":
		xw := newXerialWriter(w)
		out, closer = xw, xw
	default:
		return fmt.Errorf("zkdata: unknown compression %q (want \"\", \"gz\" or \"snappy\")", opts.Compression)
	}
	cw := newCheckedWriter(out)

	cw.int32(snapMagic)
	cw.int32(fileVersion)
	cw.int64(-1) // dbid, as FileSnap writes it

	sessions := im.Sessions()
	cw.int32(int32(len(sessions)))
	for _, s := range sessions {
		cw.int64(s.ID)
		cw.int32(s.Timeout)
	}

	used := make(map[int64]bool)
	im.Walk(func(n Node) error {
		used[im.nodes[zkPath(n.Path)].acl] = true
		return nil
	})
	ids := make([]int64, 0, len(used))
	for id := range used {
		if id != openACLID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	cw.int32(int32(len(ids)))
	for _, id := range ids {
		list := im.acls.list(id)
		cw.int64(id)
		cw.int32(int32(len(list)))
		for _, a := range list {
			cw.int32(int32(a.Perms))
			cw.str(a.ID.Scheme)
			cw.str(a.ID.ID)
		}
	}

	im.Walk(func(n Node) error {
		zp := zkPath(n.Path)
		zn := im.nodes[zp]
		cw.str(zp)
		cw.buffer(zn.data)
		cw.int64(zn.acl)
		st := &zn.st
		cw.int64(st.Czxid)
		cw.int64(st.Mzxid)
		cw.int64(st.Ctime)
		cw.int64(st.Mtime)
		cw.int32(st.Version)
		cw.int32(st.Cversion)
		cw.int32(st.Aversion)
		cw.int64(st.EphemeralOwner)
		cw.int64(st.Pzxid)
		return cw.err
	})
	cw.str("/")
	cw.seal()
	if !opts.NoDigest {
		cw.int64(im.lastZxid)
		cw.int32(digestVersion)
		cw.int64(int64(im.reachableDigest()))
		cw.seal()
	}
	if cw.err != nil {
		return cw.err
	}
	if err := cw.bw.Flush(); err != nil {
		return err
	}
	if closer != nil {
		return closer.Close()
	}
	return nil
}

// reachableDigest is the digest of the nodes WriteSnapshot writes.
func (im *Image) reachableDigest() uint64 {
	var sum uint64
	im.Walk(func(n Node) error {
		zp := zkPath(n.Path)
		sum += digestOf(zp, im.nodes[zp])
		return nil
	})
	return sum
}
