package scaling

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"
)

func BenchmarkZZ(b *testing.B) {
	n := 1_000_000
	f, err := Create(filepath.Join(b.TempDir(), "p.dbl"), &Options{Capacity: uint64(n), ErrorRate: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	keys := make([][]byte, n)
	abs := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%012d", i))
		abs[i] = []byte(fmt.Sprintf("absent-%012d", i))
	}
	b.Run("add", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f.Add(keys[i%n], uint64(i))
		}
	})
	rand.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	b.Run("present", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f.Contains(keys[i%n])
		}
	})
	b.Run("absent", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f.Contains(abs[i%n])
		}
	})
	b.Logf("%+v", len(f.Stats().Filters))
}
