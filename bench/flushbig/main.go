// Command flushbig measures Flush after a number of changes to a large
// store (issue 29: after 100k changes at 50M keys, against the previous
// format): it loads n keys with AddBatch on an exclusive handle, flushes,
// reopens the file with a shared handle, and times one Flush after each
// round of single Adds. docs/PERFORMANCE.md ("Page checksums") has its
// figures.
//
//	cd bench && go run ./flushbig -n 50000000 -changes 100000 -rounds 5 -dir /var/tmp
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/dablooms/dablooms/scaling"
)

func key(i uint64) []byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], i)
	binary.LittleEndian.PutUint64(b[8:], i*0x9e3779b97f4a7c15)
	return b[:]
}

func main() {
	n := flag.Uint64("n", 50_000_000, "keys")
	changes := flag.Int("changes", 100_000, "changes before each flush")
	rounds := flag.Int("rounds", 5, "rounds")
	dir := flag.String("dir", os.TempDir(), "directory (on the disk to measure, not tmpfs)")
	flag.Parse()
	fmt.Println(run(*n, *changes, *rounds, *dir))
}

// run loads n keys into a file in dir and returns the Flush times after
// each of rounds rounds of changes Adds, as a line of text.
func run(n uint64, changes, rounds int, dir string) string {
	path := filepath.Join(dir, "flushbig.dbl")
	os.Remove(path)
	defer os.Remove(path)
	f, err := scaling.Create(path, &scaling.Options{Capacity: n + n/10, ErrorRate: 0.01, Exclusive: true})
	if err != nil {
		panic(err)
	}
	start := time.Now()
	const batch = 4096
	keys := make([][]byte, batch)
	ids := make([]uint64, batch)
	for i := uint64(0); i < n; i += batch {
		m := min(batch, n-i)
		for j := range m {
			keys[j], ids[j] = key(i+j), i+j
		}
		if err := f.AddBatch(keys[:m], ids[:m]); err != nil {
			panic(err)
		}
	}
	if err := f.Flush(); err != nil {
		panic(err)
	}
	load := time.Since(start)
	f.Close()
	g, err := scaling.Open(path, nil)
	if err != nil {
		panic(err)
	}
	defer g.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var ts []time.Duration
	for r := range rounds {
		for j := range changes {
			i := n + uint64(r*changes+j)
			if err := g.Add(key(i), rng.Uint64N(n)); err != nil {
				panic(err)
			}
		}
		t0 := time.Now()
		if err := g.Flush(); err != nil {
			panic(err)
		}
		ts = append(ts, time.Since(t0))
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	st, _ := os.Stat(path)
	return fmt.Sprintf("n=%d file=%d MiB load=%v flush after %d changes: median %v (min %v, max %v)", n, st.Size()>>20, load.Round(time.Millisecond), changes, ts[len(ts)/2].Round(time.Microsecond), ts[0].Round(time.Microsecond), ts[len(ts)-1].Round(time.Microsecond))
}
