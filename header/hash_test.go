package header

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// digestHashKey is the reference for HashKey: cespare/xxhash's seeded
// Digest. HashKey must give the same value for every key and seed.
func digestHashKey(seed uint64, key []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(seed)
	d.Write(key)
	return d.Sum64()
}

// hashTestBytes is a deterministic test input: byte i is i*7+3.
func hashTestBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}

// TestHashKeyVectors pins XXH64 values computed with the reference C
// implementation (libxxhash 0.8.1, XXH64(buf, len, seed)), on prefixes of
// hashTestBytes(300), at every boundary of the algorithm (4, 8, 32 bytes).
// Both HashKey and the Digest must give them.
func TestHashKeyVectors(t *testing.T) {
	const s = 0x9e3779b97f4a7c15
	buf := hashTestBytes(300)
	for _, v := range []struct {
		n    int
		seed uint64
		want uint64
	}{
		{0, 0, 0xef46db3751d8e999}, {0, s, 0xc4349fc93c010000},
		{1, 0, 0x1f25c8d0bc1f4bb6}, {1, s, 0x79826bcd749d267a},
		{3, 0, 0x31d2363f52e564c9}, {3, s, 0x78efd77575e26575},
		{4, 0, 0x9bb64b7d66ee9fda}, {4, s, 0x6f0a6c97d68bf353},
		{7, 0, 0x9a7b149959ce60d8}, {7, s, 0xd97ede93c9d66a0d},
		{8, 0, 0xdab99d95c6f90092}, {8, s, 0xa2f1e28437a78a1b},
		{15, 0, 0x1b47cb8243cc8e32}, {15, s, 0xe2ec50a544faec61},
		{16, 0, 0x434850232b787be2}, {16, s, 0x93351859a7286376},
		{17, 0, 0x1efa7025f1b97a7a}, {17, s, 0x81d900d244223adc},
		{31, 0, 0xa2aa5f33cc4a6119}, {31, s, 0x755437271d1d0a84},
		{32, 0, 0x23c3c17ef790fd97}, {32, s, 0xbf624b932c090428},
		{33, 0, 0x50a7cfc7ba588784}, {33, s, 0x7aceaf1e9d34ea35},
		{63, 0, 0x5e3e54b431c7493c}, {63, s, 0x2c8ddce5c85d0d9d},
		{64, 0, 0x0eb64b3ef6eeb01f}, {64, s, 0x4af341f14e3a6fc9},
		{65, 0, 0xa383b724b2bd12f1}, {65, s, 0x8e9e580645400102},
		{100, 0, 0xa61f8d4c170fe531}, {100, s, 0xf6d8f65c625abb4f},
		{255, 0, 0x39ae55a29989206f}, {255, s, 0x8310ff6a20cadfad},
	} {
		key := buf[:v.n]
		if got := digestHashKey(v.seed, key); got != v.want {
			t.Errorf("digestHashKey(%#x, %d bytes) = %#x, want %#x", v.seed, v.n, got, v.want)
		}
		if got := HashKey(v.seed, key); got != v.want {
			t.Errorf("HashKey(%#x, %d bytes) = %#x, want %#x", v.seed, v.n, got, v.want)
		}
	}
	for _, v := range []struct {
		key  string
		seed uint64
		want uint64
	}{
		{"abc", 0, 0x44bc2cf5ad770999},
		{"key-000000123456", 123, 0xc658de574dbb2b1b},
	} {
		if got := digestHashKey(v.seed, []byte(v.key)); got != v.want {
			t.Errorf("digestHashKey(%d, %q) = %#x, want %#x", v.seed, v.key, got, v.want)
		}
		if got := HashKey(v.seed, []byte(v.key)); got != v.want {
			t.Errorf("HashKey(%d, %q) = %#x, want %#x", v.seed, v.key, got, v.want)
		}
	}
}

// TestHashKeyMatchesDigest compares HashKey with digestHashKey (the
// cespare/xxhash Digest) for every length 0..300, random contents, random
// seeds plus the edge seeds, and keys at every offset within a word (a
// subslice that does not start on an 8-byte boundary).
func TestHashKeyMatchesDigest(t *testing.T) {
	r := rand.New(rand.NewPCG(0x5eed, 0xfa57))
	buf := make([]byte, 300+8)
	seeds := []uint64{0, 1, xxPrime1, ^uint64(0), 0x97c29b3a}
	for n := 0; n <= 300; n++ {
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
		for off := 0; off < 8; off++ {
			key := buf[off : off+n]
			for j := 0; j < 8; j++ {
				seed := r.Uint64()
				if j < len(seeds) {
					seed = seeds[j]
				}
				if got, want := HashKey(seed, key), digestHashKey(seed, key); got != want {
					t.Fatalf("len %d offset %d seed %#x: HashKey %#x, Digest %#x", n, off, seed, got, want)
				}
			}
		}
	}
}

// TestHashKeyMatchesDigestRandom compares the two on random lengths (up to 4 KiB,
// many 32-byte stripes) and seeds.
func TestHashKeyMatchesDigestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for range rounds {
		n := r.IntN(len(buf) + 1)
		if r.IntN(2) == 0 {
			n = r.IntN(129)
		}
		off := r.IntN(len(buf) - n + 1)
		key := buf[off : off+n]
		seed := r.Uint64()
		if got, want := HashKey(seed, key), digestHashKey(seed, key); got != want {
			t.Fatalf("len %d seed %#x: HashKey %#x, Digest %#x", n, seed, got, want)
		}
	}
}

func TestHashKeyAllocs(t *testing.T) {
	key := []byte("key-000000123456")
	if a := testing.AllocsPerRun(100, func() { hashSink += HashKey(1, key) }); a != 0 {
		t.Errorf("HashKey allocates %v times per call", a)
	}
}

// FuzzHashKey: HashKey equals digestHashKey (the cespare/xxhash Digest)
// for any key and seed.
func FuzzHashKey(f *testing.F) {
	f.Add(uint64(0), []byte{})
	f.Add(uint64(0x97c29b3a), []byte("key-000000123456"))
	f.Add(^uint64(0), hashTestBytes(31))
	f.Add(uint64(1), hashTestBytes(32))
	f.Add(xxPrime1, hashTestBytes(100))
	f.Fuzz(func(t *testing.T, seed uint64, key []byte) {
		if got, want := HashKey(seed, key), digestHashKey(seed, key); got != want {
			t.Fatalf("len %d seed %#x: HashKey %#x, Digest %#x", len(key), seed, got, want)
		}
	})
}

// BenchmarkHashKeyLen compares the Digest with HashKey on keys
// of typical lengths. Each calls its function directly, as
// BenchmarkHashKey does: a call through a func value would add its own cost.
func BenchmarkHashKeyLen(b *testing.B) {
	for _, n := range []int{8, 16, 32, 64} {
		key := hashTestBytes(n)
		b.Run(fmt.Sprintf("digest/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var s uint64
			for i := 0; i < b.N; i++ {
				s += digestHashKey(uint64(i), key)
			}
			hashSink = s
		})
		b.Run(fmt.Sprintf("fast/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var s uint64
			for i := 0; i < b.N; i++ {
				s += HashKey(uint64(i), key)
			}
			hashSink = s
		})
	}
}

var hashSink uint64
