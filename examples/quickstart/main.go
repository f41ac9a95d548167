// Command quickstart is the README's "run it": it creates a dablooms file in
// a temporary directory, adds an embedded word list with increasing ids,
// removes every fifth word, flushes, reopens the file, and counts true and
// false positives and negatives, explaining what each number means. It is
// the original dablooms' "make test", told to a reader.
//
//	go run ./examples/quickstart          # 30,000 words
//	go run ./examples/quickstart -short   # 6,000 words (CI)
//
// It exits with status 1 if any word that was added and not removed is
// reported absent (a false negative): that must never happen.
package main

import (
	"bufio"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dablooms/dablooms/scaling"
)

// words.txt holds 30,000 distinct pseudo-words made by gen_words.go.
//
//go:embed words.txt
var wordList string

type config struct {
	words    int     // how many words of the list to use
	capacity uint64  // capacity of the first filter
	rate     float64 // error-rate bound
	dir      string  // where the file goes ("" = a new temporary directory)
}

func main() {
	short := flag.Bool("short", os.Getenv("DABLOOMS_EXAMPLE_SHORT") != "", "use 6,000 words instead of 30,000 (also DABLOOMS_EXAMPLE_SHORT=1)")
	dir := flag.String("dir", "", "keep the file in this directory instead of a temporary one")
	flag.Parse()
	cfg := config{words: 30000, capacity: 10000, rate: 0.01, dir: *dir}
	if *short {
		cfg.words, cfg.capacity = 6000, 2000
	}
	if err := run(os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// errFalseNegative is returned when a word that should be present is not.
var errFalseNegative = errors.New("false negatives found: the filter lost words")

func run(w io.Writer, cfg config) error {
	words := strings.Fields(wordList)
	if cfg.words < len(words) {
		words = words[:cfg.words]
	}
	dir := cfg.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "dablooms-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	path := filepath.Join(dir, "quickstart.dbl")
	out := bufio.NewWriter(w)
	defer out.Flush()
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	p("dablooms quickstart: %d words, first filter capacity %d, error-rate bound %.2f%%", len(words), cfg.capacity, 100*cfg.rate)
	p("")
	f, err := scaling.Create(path, &scaling.Options{Capacity: cfg.capacity, ErrorRate: cfg.rate, Overwrite: true})
	if err != nil {
		return err
	}
	// 1. Add every word; its id is its line number, as a row id would be.
	//    AddBatch adds many keys at once, faster than Add in a loop (it
	//    starts the memory accesses of the next keys while it changes the
	//    counters of this one); Add and AddString take one key.
	keys, ids := make([][]byte, len(words)), make([]uint64, len(words))
	for i, word := range words {
		keys[i], ids[i] = []byte(word), uint64(i+1)
	}
	if err := f.AddBatch(keys, ids); err != nil {
		f.Close()
		return fmt.Errorf("add: %w", err)
	}
	p("added %d words with ids 1..%d", len(words), len(words))
	// 2. Remove every fifth word, passing the id it was added with: the id
	//    tells Remove which filter of the chain holds the word.
	removed := 0
	for i := 4; i < len(words); i += 5 {
		if err := f.RemoveString(words[i], uint64(i+1)); err != nil {
			f.Close()
			return fmt.Errorf("remove %q: %w", words[i], err)
		}
		removed++
	}
	p("removed every fifth word: %d words", removed)
	p("  mem_seqnum  %d  modifications completed (%d adds + %d removes)", f.MemSeqnum(), len(words), removed)
	p("  disk_seqnum %d  nothing is durable yet: the file changed since it was created", f.DiskSeqnum())
	// 3. Flush: everything becomes durable, and disk_seqnum catches up.
	if err := f.Flush(); err != nil {
		f.Close()
		return err
	}
	p("flushed:")
	p("  disk_seqnum %d  = mem_seqnum: the file on disk holds every modification", f.DiskSeqnum())
	if err := f.Close(); err != nil {
		return err
	}

	// 4. Reopen: the parameters come from the file.
	f, err = scaling.Open(path, nil)
	if err != nil {
		return err
	}
	defer f.Close()
	st := f.Stats()
	p("reopened %s:", filepath.Base(path))
	p("  condition   %s  (the file equals its last flush)", f.Condition())
	p("  mem_seqnum  %d, disk_seqnum %d: equal, so a reader knows nothing was lost", f.MemSeqnum(), f.DiskSeqnum())
	p("  file size   %d bytes (%.1f KiB) for %d filters:", st.FileSize, float64(st.FileSize)/1024, len(st.Filters))
	for _, fs := range st.Filters {
		p("    filter %d: ids %d..%d, capacity %d, %d items (%.0f%% full), k=%d, %d counters, target FPR %.4f%%",
			fs.Index, fs.FirstID, fs.LastID, fs.Capacity, fs.Count, 100*fs.Fill, fs.K, fs.Counters, 100*fs.ErrorTarget)
	}
	p("    (when the first filter was full a larger one was appended; the targets shrink so that they add up to the bound)")
	p("")

	// 5. Ask about every word, and about as many words never added.
	var tp, fn, fp, tn, fpNever int
	for i, word := range words {
		present := f.ContainsString(word)
		if i%5 == 4 { // removed
			if present {
				fp++
			} else {
				tn++
			}
		} else if present {
			tp++
		} else {
			fn++
		}
		if f.ContainsString(word + "-never-added") {
			fpNever++
		}
	}
	never := len(words) // one never-added word per word
	negatives := removed + never
	fpr := float64(fp+fpNever) / float64(negatives)
	p("answers:")
	p("  true positives  %6d  kept words reported present (should be every kept word: %d)", tp, len(words)-removed)
	p("  false negatives %6d  kept words reported absent: a Bloom filter must never do this", fn)
	p("  true negatives  %6d  removed words reported absent", tn)
	p("  false positives %6d  removed words still reported present (their counters are shared with other words)", fp)
	p("  false positives %6d  of %d words never added reported present", fpNever, never)
	p("")
	p("false-positive rate %.3f%% (%d of %d absent words), target bound %.2f%%: %s",
		100*fpr, fp+fpNever, negatives, 100*cfg.rate, verdict(fpr, cfg.rate))
	p("estimated from the fill of the filters: %.3f%%", 100*st.EstimatedFPR)
	if fn > 0 {
		out.Flush()
		return fmt.Errorf("%w: %d", errFalseNegative, fn)
	}
	p("no false negatives: every word added and not removed was found")
	return nil
}

func verdict(fpr, bound float64) string {
	if fpr <= bound {
		return "within the bound"
	}
	return "above the bound (it holds on average; small samples vary)"
}
