package zkdata

// ZooKeeper does not store session passwords: it derives them from the
// session id (ZooKeeperServer.generatePasswd): 16 bytes from
// java.util.Random seeded with the id XOR a constant. A client resuming a
// session after an import presents that password, so the importer must
// give every session the same one.

// passwdSecret is the constant ZooKeeper mixes into the seed.
const passwdSecret int64 = 0xB3415C00

// SessionPassword returns the password Apache ZooKeeper gives session id.
func SessionPassword(id int64) []byte {
	r := newJavaRandom(id ^ passwdSecret)
	p := make([]byte, 16)
	r.nextBytes(p)
	return p
}

// javaRandom is java.util.Random: a 48-bit linear congruential generator.
type javaRandom struct{ seed uint64 }

const (
	jrMultiplier = 0x5DEECE66D
	jrAddend     = 0xB
	jrMask       = 1<<48 - 1
)

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (uint64(seed) ^ jrMultiplier) & jrMask}
}

// next returns the next bits (<= 32) pseudo-random bits as Random.next.
func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*jrMultiplier + jrAddend) & jrMask
	return int32(r.seed >> (48 - bits))
}

// nextBytes fills b as Random.nextBytes: one int per four bytes, low byte
// first.
func (r *javaRandom) nextBytes(b []byte) {
	for i := 0; i < len(b); {
		v := r.next(32)
		for n := min(len(b)-i, 4); n > 0; n-- {
			b[i] = byte(v)
			v >>= 8
			i++
		}
	}
}
