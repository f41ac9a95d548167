package legacy

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/murmur3"
)

// TestHashVectors checks every row of vectors_murmur.tsv: hash words, h1, h2 and the counter
// indices of filters 0 and 1 at capacity 100000, error 0.05.
func TestHashVectors(t *testing.T) {
	f0, err := Layout(100000, 0.05, 0)
	if err != nil {
		t.Fatal(err)
	}
	f1, err := Layout(100000, 0.05, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f0.K != 6 || f1.K != 7 {
		t.Fatalf("k = %d, %d; want 6, 7", f0.K, f1.K)
	}
	rows := readTSV(t, "vectors_murmur.tsv", 8)
	if len(rows) < 50 {
		t.Fatalf("only %d rows", len(rows))
	}
	for _, r := range rows {
		k, err := strconv.Unquote(r[0])
		if err != nil {
			t.Fatalf("key %s: %v", r[0], err)
		}
		h, h2 := murmur3.SeedSum128(Seed, Seed, []byte(k))
		got := []string{
			strconv.Itoa(len(k)),
			fmt.Sprintf("%016x", h), fmt.Sprintf("%016x", h2),
			fmt.Sprintf("%08x", uint32(h)), fmt.Sprintf("%08x", uint32(h>>32)),
			"f0:" + indices(h, f0), "f1:" + indices(h, f1),
		}
		if Hash([]byte(k)) != h {
			t.Errorf("%s: Hash differs from SeedSum128", r[0])
		}
		for c, g := range got {
			if g != r[1+c] {
				t.Errorf("%s: column %d is %s, want %s", r[0], 2+c, g, r[1+c])
			}
		}
	}
}

func indices(h uint64, l FilterLayout) string {
	s := make([]string, l.K)
	for j := range s {
		s[j] = strconv.FormatUint(uint64(Index(h, j, l.CountsPerFunc)), 10)
	}
	return strings.Join(s, ",")
}

// TestIndexWraps checks the 32-bit arithmetic of the original, where h1 + j*h2 and the global
// index both wrap.
func TestIndexWraps(t *testing.T) {
	for _, c := range []struct {
		h    uint64
		j    int
		cpf  uint32
		want uint32
	}{
		{0xffffffff_ffffffff, 0, 10, 0xffffffff % 10},
		{0xffffffff_ffffffff, 1, 10, 0xfffffffe%10 + 10}, // h1+h2 wraps
		{0x00000001_00000005, 3, 1 << 31, 8 + 1<<31},     // 3*2^31 wraps to 2^31
		{0x00000000_00000007, 5, 1 << 30, 7 + 1<<30},     // 5*2^30 wraps to 2^30
	} {
		if got := Index(c.h, c.j, c.cpf); got != c.want {
			t.Errorf("Index(%#x, %d, %d) = %d, want %d", c.h, c.j, c.cpf, got, c.want)
		}
	}
}
