package scaling

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dablooms/dablooms/internal/childproc"
)

// Test 4: readers never see a false negative.

const (
	readerStreams    = 4  // 2 writer processes × 2 goroutines
	writersDoneWord  = 32 // word set by the parent when every writer finished
	readerOpenedWord = 40 // word set by the reader once it has opened the file
)

func permKey(w, i int) []byte { return []byte(fmt.Sprintf("perm-%d-%08d", w, i)) }

func childReaderWriter() error {
	mk, err := childproc.MapShm(children.Env("MARK"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	gos := children.EnvInt("GOS") // goroutines; the streams are p*gos+g
	f, err := Open(children.Env("PATH"), &OpenOptions{Exclusive: children.EnvInt("EXCL") == 1, LockTimeout: time.Minute})
	if err != nil {
		return err
	}
	defer f.Close()
	p, n := children.EnvInt("PROC"), children.EnvInt("KEYS")
	errc := make(chan error, gos)
	var wg sync.WaitGroup
	for g := 0; g < gos; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p*gos + g
			for i := 0; i < n; i++ {
				id := uint64(i*readerStreams+w) * 2
				if err := f.Add(permKey(w, i), id); err != nil {
					errc <- err
					return
				}
				mk.Store(8*w, uint64(i+1)) // keys 0..i are in: published after Add returned
				if i%4 == 0 {
					// Churn: a scratch key added and removed, so counters
					// also go down while the reader looks.
					k := []byte(fmt.Sprintf("scratch-%d-%08d", w, i))
					if err := f.Add(k, id+1); err != nil {
						errc <- err
						return
					}
					// ErrAmbiguous (the key is also a false positive of
					// another filter whose id range holds id) is allowed:
					// the scratch key then simply stays.
					if err := f.Remove(k, id+1); err != nil && !errors.Is(err, ErrAmbiguous) {
						errc <- fmt.Errorf("remove scratch: %w", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

type readerReport struct {
	Checks, FalseNeg, Rounds int
	Concurrent               int // lookups made before the writers had finished
	First                    []string
	Filters                  int
	FiltersSeen              []int // chain lengths seen, in order
}

func childReader() error {
	mk, err := childproc.MapShm(children.Env("MARK"), childproc.CtlWords, false)
	if err != nil {
		return err
	}
	f, err := Open(children.Env("PATH"), &OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer f.Close()
	mk.Store(readerOpenedWord, 1)
	var rep readerReport
	rng := rand.New(rand.NewPCG(1, 2))
	checked := make([]int, readerStreams)
	check := func(w, i int) {
		rep.Checks++
		if !f.Contains(permKey(w, i)) {
			rep.FalseNeg++
			if len(rep.First) < 10 {
				rep.First = append(rep.First, fmt.Sprintf("writer %d key %d (chain of %d)", w, i, len(f.chain.Load().f)))
			}
		}
	}
	last := 0
	for {
		done := mk.Load(writersDoneWord) != 0
		for w := 0; w < readerStreams; w++ {
			hi := int(mk.Load(8 * w)) // read the marker BEFORE looking up
			for i := checked[w]; i < hi; i++ {
				check(w, i)
			}
			checked[w] = hi
			for j := 0; j < 16 && hi > 0; j++ {
				check(w, rng.IntN(hi))
			}
		}
		if n := len(f.chain.Load().f); n != last {
			rep.FiltersSeen = append(rep.FiltersSeen, n)
			last = n
		}
		rep.Rounds++
		if done {
			break
		}
		rep.Concurrent = rep.Checks
	}
	// Final pass over everything.
	for w := 0; w < readerStreams; w++ {
		for i := 0; i < int(mk.Load(8*w)); i++ {
			check(w, i)
		}
	}
	rep.Filters = len(f.chain.Load().f)
	b, err := json.Marshal(&rep)
	if err != nil {
		return err
	}
	return os.WriteFile(children.Env("REPORT"), b, 0o644)
}

// TestMPReaders: a read-only process calling Contains while two writer
// processes add (and churn scratch keys) and the chain grows never misses a
// key whose Add returned before the lookup began; nor while one exclusive
// writer process (OpenOptions.Exclusive: stores, no compare-and-swap, Removes that decide
// first) does the same from four goroutines.
func TestMPReaders(t *testing.T) {
	requireFiles(t)
	for _, excl := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "exclusive"}[excl], func(t *testing.T) { mpReaders(t, excl) })
	}
}

func mpReaders(t *testing.T, excl bool) {
	keys := 25_000
	if testing.Short() {
		keys = 6_000
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "readers.dbl")
	mk := createForChildren(t, path, &Options{Capacity: 5_000, ErrorRate: 0.01}, filepath.Join(dir, "marks"))
	report := filepath.Join(dir, "reader.json")
	start := time.Now()
	reader := children.Start(t, "reader", "reader", childproc.KV("PATH", path), childproc.KV("MARK", mk.Name()), childproc.KV("REPORT", report))
	// The writers start once the reader has opened the file: an Open racing
	// a writer's first dirty mark is TestMPOpenDuringFirstMark's matter.
	childproc.Await(t, reader, func() bool { return mk.Load(readerOpenedWord) != 0 })
	procs, gos, ex := 2, 2, 0
	if excl {
		procs, gos, ex = 1, 4, 1
	}
	var writers []*childproc.Proc
	for p := 0; p < procs; p++ {
		writers = append(writers, children.Start(t, fmt.Sprintf("writer-%d", p), "rwriter",
			childproc.KV("PATH", path), childproc.KV("MARK", mk.Name()), childproc.KV("PROC", p), childproc.KV("KEYS", keys),
			childproc.KV("GOS", gos), childproc.KV("EXCL", ex)))
	}
	childproc.WaitAll(t, nil, writers, 5*time.Minute)
	mk.Store(writersDoneWord, 1)
	childproc.WaitAll(t, nil, []*childproc.Proc{reader}, 5*time.Minute)
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep readerReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("reader: %d lookups (%d while the writers ran) in %d rounds, %d false negatives; chain lengths seen %v (final %d); %v",
		rep.Checks, rep.Concurrent, rep.Rounds, rep.FalseNeg, rep.FiltersSeen, rep.Filters, time.Since(start).Round(time.Millisecond))
	if rep.FalseNeg != 0 {
		t.Errorf("%d false negatives, first: %v", rep.FalseNeg, rep.First)
	}
	if rep.Concurrent < readerStreams*keys/2 {
		t.Errorf("only %d lookups while the writers ran", rep.Concurrent)
	}
	if len(rep.FiltersSeen) < 2 {
		t.Errorf("the reader never saw the chain grow (%v)", rep.FiltersSeen)
	}
}
