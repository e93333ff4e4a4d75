package storage

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3/raftpb"
)

// TestPrefillWritesOnlyZerosOverZeros fills a sparse file laid out by
// hand (records in a few blocks, holes elsewhere, a size that is not
// block-aligned) and checks that the content is unchanged and that zeros
// were written over exactly the holes.
func TestPrefillWritesOnlyZerosOverZeros(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoPrefill: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const c = prefillChunk
	const size = 4*c + 5000
	content := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	path := filepath.Join(t.TempDir(), "seg")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil { // all holes
		t.Fatal(err)
	}
	dataBlocks := 0
	put := func(off, n int) { // n bytes of data inside one block
		for i := off; i < off+n; i++ {
			content[i] = byte(rng.IntN(255) + 1)
		}
		if _, err := f.WriteAt(content[off:off+n], int64(off)); err != nil {
			t.Fatal(err)
		}
		dataBlocks++
	}
	put(0, 1000)      // the first block, as in a segment's head
	put(2*c+9000, 10) // the middle of chunk 2
	put(3*c+c-1, 1)   // the last byte of chunk 3
	put(4*c+100, 100) // the first block of the partial last chunk
	f.Close()
	p := newPrefiller(s)
	if err := p.fill(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, content) {
		t.Fatal("fill changed the file's content")
	}
	// Every block but the four with data was a hole (the last one is
	// partial: the file ends inside it).
	want := size - dataBlocks*fillBlock
	if got := s.PrefilledBytes(); got != uint64(want) {
		t.Fatalf("prefilled %d bytes, want %d", got, want)
	}
}

// TestPrefillDuringSaves appends entries (many of them all zeros, which a
// prefiller that confused records with free space would notice least)
// while the prefiller fills the tail and the pipeline's segments, across
// many segment cuts, and checks that every entry reads back after a
// reopen.
func TestPrefillDuringSaves(t *testing.T) {
	old, oldPace, oldRescan := wal.SegmentSizeBytes, prefillPace, prefillRescan
	SetWALSegmentSize(512 << 10)
	prefillPace, prefillRescan = 0, 0
	t.Cleanup(func() { SetWALSegmentSize(old); prefillPace, prefillRescan = oldPace, oldRescan })

	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var all []raftpb.Entry
	next := uint64(1)
	for round := 0; round < 400; round++ {
		ents := make([]raftpb.Entry, 1+rng.IntN(20))
		for i := range ents {
			data := make([]byte, rng.IntN(3000))
			if rng.IntN(2) == 0 {
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
			}
			ents[i] = raftpb.Entry{Term: 1, Index: next, Data: data}
			next++
		}
		if err := s.Save(raftpb.HardState{Term: 1, Vote: 1, Commit: next - 1}, ents); err != nil {
			t.Fatal(err)
		}
		all = append(all, ents...)
	}
	filled := s.PrefilledBytes()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if filled == 0 {
		t.Fatal("the prefiller wrote nothing")
	}
	t.Logf("%d entries, %d bytes prefilled", len(all), filled)

	s, err = Open(dir, Options{NoPrefill: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.RaftStorage().Entries(1, next, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		t.Fatalf("%d entries after reopening, want %d", len(got), len(all))
	}
	for i := range all {
		if got[i].Index != all[i].Index || !bytes.Equal(got[i].Data, all[i].Data) {
			t.Fatalf("entry %d differs after reopening", all[i].Index)
		}
	}
}
