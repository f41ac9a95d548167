// Command bigload times a bulk load of a large store and the operations
// a user runs on it afterwards (issue 32, "A billion keys"): it creates a
// store of capacity n (ErrorRate 0.01, default options), opens it
// exclusive, adds n 16-byte keys with AddBatch in batches of -batch keys
// (default scaling.BulkBatch(n): a 64th of n, at least 4096; ids
// increasing; each batch swept in block order, docs/PERFORMANCE.md "Swept
// batches"), flushes and closes it; then opens
// it again and times Contains of present and absent keys, recover.Verify (quick and full),
// dabloomsctl inspect, recover.Backup and recover.Compact. It prints a
// table, with the page faults the load took.
//
//	cd bench && go run ./bigload -n 1e8 -dir /var/tmp
//
// Put -dir on the disk to measure (not tmpfs: the store at 1e9 keys is 7.4
// GB). -limit stops the load after that long and reports the rate so far
// (the rest of the table is skipped); -skip leaves out steps by name.
// -huge and -populate create the store with scaling.Options.HugePages and
// Populate (the lookups' shared handle maps the file as any Open does).
// -memory loads a store held in ordinary memory (scaling.NewMemory) and
// times the load and the lookups alone: the load's rate with no page
// cache, no write-back and no file, a floor for any design that builds a
// filter aside.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// key is the i-th key: 16 bytes, distinct for every i.
func key(i uint64, b *[16]byte) []byte {
	binary.LittleEndian.PutUint64(b[:], i)
	binary.LittleEndian.PutUint64(b[8:], i*0x9e3779b97f4a7c15)
	return b[:]
}

func main() {
	nf := flag.String("n", "1e7", "keys (and the store's capacity); 1e8 and 100000000 both work")
	dir := flag.String("dir", os.TempDir(), "directory for the store (on the disk to measure)")
	sample := flag.Int("sample", 1_000_000, "lookups of present and of absent keys")
	limit := flag.Duration("limit", 0, "give up the load after this long and report its rate (0: no limit)")
	skip := flag.String("skip", "", "comma-separated steps to leave out: verify,inspect,backup,compact")
	ctl := flag.String("dabloomsctl", "", "dabloomsctl binary for inspect (default: built from ../cmd/dabloomsctl)")
	huge := flag.Bool("huge", false, "create the store with Options.HugePages")
	populate := flag.Bool("populate", false, "create the store with Options.Populate")
	batch := flag.Int("batch", 0, "keys per AddBatch call (0: scaling.BulkBatch(n), a 64th of n, at least 4096)")
	memory := flag.Bool("memory", false, "load a store in memory (scaling.NewMemory): the load and lookups only")
	flag.Parse()
	n, err := parseCount(*nf)
	if err == nil {
		err = run(os.Stdout, config{n: n, dir: *dir, sample: *sample, limit: *limit, skip: *skip, ctl: *ctl, batch: *batch,
			huge: *huge, populate: *populate, memory: *memory})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigload:", err)
		os.Exit(1)
	}
}

// parseCount reads 1e9, 1000000000 or 1_000_000_000.
func parseCount(s string) (uint64, error) {
	s = strings.ReplaceAll(s, "_", "")
	if v, err := strconv.ParseUint(s, 10, 64); err == nil && v > 0 {
		return v, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 1 || v > 1e12 || v != float64(uint64(v)) {
		return 0, fmt.Errorf("-n %q: want a whole number of keys, such as 1e8", s)
	}
	return uint64(v), nil
}

type config struct {
	n      uint64
	dir    string
	sample int
	limit  time.Duration
	skip   string
	ctl    string
	// Options.HugePages and Populate of the store.
	huge, populate bool
	memory         bool              // scaling.NewMemory: no file
	batch          int               // keys per AddBatch (0: scaling.BulkBatch(n))
	check          func(path string) // the tests: called after Create
}

func (c *config) skipped(step string) bool {
	for _, s := range strings.Split(c.skip, ",") {
		if s == step {
			return true
		}
	}
	return false
}

// row is one line of the table: a step, its total time and how many
// operations (keys, lookups) it covered, 0 for a step done once.
type row struct {
	step  string
	total time.Duration
	ops   uint64
	note  string
}

func (r row) String() string {
	per := ""
	if r.ops > 0 {
		per = fmt.Sprintf("%.0f ns", float64(r.total.Nanoseconds())/float64(r.ops))
	}
	return fmt.Sprintf("| %s | %s | %s | %s |", r.step, fmtDur(r.total), per, r.note)
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.0f µs", float64(d.Nanoseconds())/1000)
}

// faults is the process's page faults so far: minor, major.
func faults() (int64, int64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt, ru.Majflt
}

// errLimit: the load ran past -limit.
var errLimit = errors.New("load stopped at the time limit")

func run(w io.Writer, c config) error {
	work, err := os.MkdirTemp(c.dir, "bigload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	path := filepath.Join(work, "big.dbl")
	var rows []row
	add := func(r row) {
		rows = append(rows, r)
		fmt.Fprintln(os.Stderr, r) // progress, for long runs
	}

	t0 := time.Now()
	o := &scaling.Options{Capacity: c.n, ErrorRate: 0.01, Exclusive: true, HugePages: c.huge, Populate: c.populate}
	var f *scaling.Filter
	if c.memory {
		f, err = scaling.NewMemory(o)
	} else {
		f, err = scaling.Create(path, o)
	}
	if err != nil {
		return err
	}
	add(row{step: "Create (exclusive)", total: time.Since(t0)})
	if c.check != nil {
		c.check(path)
	}
	min0, maj0 := faults()
	u0, s0 := cpuTimes()
	batch := uint64(max(c.batch, 0))
	if batch == 0 {
		batch = uint64(scaling.BulkBatch(c.n))
	}
	keys := make([][]byte, batch)
	bufs := make([][16]byte, batch)
	ids := make([]uint64, batch)
	t0 = time.Now()
	var done uint64
	for done < c.n {
		m := min(batch, c.n-done)
		for j := range m {
			keys[j], ids[j] = key(done+j, &bufs[j]), done+j
		}
		if err := f.AddBatch(keys[:m], ids[:m]); err != nil {
			f.Close()
			return err
		}
		done += m
		if c.limit > 0 && time.Since(t0) > c.limit {
			break
		}
	}
	load := time.Since(t0)
	min1, maj1 := faults()
	u1, s1 := cpuTimes()
	add(row{step: fmt.Sprintf("load (AddBatch of %d)", batch), total: load, ops: done,
		note: fmt.Sprintf("%.2f M keys/s; user %.1f s, sys %.1f s; %d minor, %d major faults",
			float64(done)/load.Seconds()/1e6, (u1 - u0).Seconds(), (s1 - s0).Seconds(), min1-min0, maj1-maj0)})
	if c.memory {
		err := lookups(f, config{n: done, sample: c.sample}, add)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		printTable(w, c, path, done, rows)
		return err
	}
	t0 = time.Now()
	if err := f.Flush(); err != nil {
		f.Close()
		return err
	}
	add(row{step: "Flush", total: time.Since(t0)})
	t0 = time.Now()
	if err := f.Close(); err != nil {
		return err
	}
	add(row{step: "Close", total: time.Since(t0)})
	if done < c.n {
		printTable(w, c, path, done, rows)
		return fmt.Errorf("%w (%v): %d of %d keys", errLimit, c.limit, done, c.n)
	}

	t0 = time.Now()
	g, err := scaling.Open(path, nil)
	if err != nil {
		return err
	}
	add(row{step: "Open (shared)", total: time.Since(t0)})
	if err := lookups(g, c, add); err != nil {
		g.Close()
		return err
	}
	if err := g.Close(); err != nil {
		return err
	}
	if !c.skipped("verify") {
		for _, quick := range []bool{true, false} {
			t0 = time.Now()
			rep, err := recover.VerifyWithOptions(path, &recover.VerifyOptions{Quick: quick})
			if err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			name := "recover.Verify"
			if quick {
				name += " (Quick)"
			}
			add(row{step: name, total: time.Since(t0), note: rep.State.String()})
		}
	}
	if !c.skipped("inspect") {
		if err := inspect(c, path, work, add); err != nil {
			return err
		}
	}
	if !c.skipped("backup") {
		t0 = time.Now()
		bk := filepath.Join(work, "backup.dbl")
		rep, err := recover.Backup(context.Background(), path, bk, nil)
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		add(row{step: "recover.Backup", total: time.Since(t0), note: fmt.Sprintf("%d MiB", rep.Bytes>>20)})
		os.Remove(bk)
	}
	if !c.skipped("compact") {
		src := func(first, last uint64, add func([]byte, uint64) error) error {
			var b [16]byte
			for i := max(first, 0); i < c.n && i <= last; i++ {
				if err := add(key(i, &b), i); err != nil {
					return err
				}
			}
			return nil
		}
		t0 = time.Now()
		rep, err := recover.Compact(path, src, &recover.CompactOptions{Capacity: c.n})
		if err != nil {
			return fmt.Errorf("compact: %w", err)
		}
		add(row{step: "recover.Compact (Capacity n)", total: time.Since(t0), ops: c.n,
			note: fmt.Sprintf("%d keys", rep.Keys)})
	}
	printTable(w, c, path, done, rows)
	return nil
}

func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// lookups times Contains over sample present keys (spread over the ids)
// and sample absent ones, and checks every present key is found.
func lookups(g *scaling.Filter, c config, add func(row)) error {
	s := uint64(min(uint64(c.sample), c.n))
	if s == 0 {
		return nil
	}
	var b [16]byte
	step := c.n / s
	t0 := time.Now()
	for i := range s {
		if !g.Contains(key(i*step, &b)) {
			return fmt.Errorf("key %d was added and is not found", i*step)
		}
	}
	add(row{step: "Contains, present", total: time.Since(t0), ops: s})
	fp := 0
	t0 = time.Now()
	for i := range s {
		if g.Contains(key(c.n+i, &b)) {
			fp++
		}
	}
	add(row{step: "Contains, absent", total: time.Since(t0), ops: s,
		note: fmt.Sprintf("%.3f %% false positives", 100*float64(fp)/float64(s))})
	return nil
}

// inspect times `dabloomsctl inspect` (built from the library unless
// given).
func inspect(c config, path, work string, add func(row)) error {
	ctl := c.ctl
	if ctl == "" {
		ctl = filepath.Join(work, "dabloomsctl")
		build := exec.Command("go", "build", "-o", ctl, "./cmd/dabloomsctl")
		build.Dir = ".." // the library's module (run from bench/)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building dabloomsctl: %w", err)
		}
	}
	t0 := time.Now()
	out, err := exec.Command(ctl, "inspect", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("dabloomsctl inspect: %v: %s", err, out)
	}
	add(row{step: "dabloomsctl inspect", total: time.Since(t0)})
	return nil
}

func printTable(w io.Writer, c config, path string, done uint64, rows []row) {
	size := int64(0)
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	where := fmt.Sprintf("file %d MiB in %s, HugePages %v, Populate %v", size>>20, c.dir, c.huge, c.populate)
	if c.memory {
		where = "in memory (scaling.NewMemory)"
	}
	fmt.Fprintf(w, "%d keys (capacity %d), %s\n\n", done, c.n, where)
	fmt.Fprintln(w, "| step | total | per key / op | note |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
}
