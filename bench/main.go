// Command bench compares this project's scaling counting Bloom filter with
// other Go filter libraries. Every system is built in one process from the
// same pre-generated keys, and one table per concurrency mode is printed
// (or one JSON object with -json). See README.md.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// options are the command-line flags.
type options struct {
	n        int
	queries  int
	reps     int
	systems  string
	json     bool
	dir      string
	parallel int
	seed     uint64
	sbfHint  int
	layout   string
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.n, "n", 1_000_000, "number of keys added to each system (present keys)")
	fs.IntVar(&o.queries, "queries", 0, "number of absent keys queried (0 = n)")
	fs.IntVar(&o.reps, "reps", 3, "repetitions per system and mode; the report gives medians")
	fs.StringVar(&o.systems, "systems", "all", "comma-separated systems to run: "+specIDs())
	fs.BoolVar(&o.json, "json", false, "print one JSON object with all rows instead of tables")
	fs.StringVar(&o.dir, "dir", "", "directory for the file-backed store (default: a new temporary directory, removed at exit)")
	fs.IntVar(&o.parallel, "parallel", runtime.GOMAXPROCS(0), "goroutines for the parallel table (< 2 skips it)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed for the query shuffle")
	fs.IntVar(&o.sbfHint, "sbf-hint", 0, "initial capacity of BoomFilters' ScalableBloomFilter (0 = n)")
	fs.StringVar(&o.layout, "layout", "", "counter layout of this project's rows: blocked512, blocked1024 or classic (default: the library's)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() != 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.n < 1 {
		return o, errors.New("-n must be at least 1")
	}
	if o.queries == 0 {
		o.queries = o.n
	}
	if o.queries < 1 {
		return o, errors.New("-queries must be at least 1")
	}
	if o.reps < 1 {
		return o, errors.New("-reps must be at least 1")
	}
	if _, ok := layouts[o.layout]; !ok {
		return o, fmt.Errorf("-layout %q: want blocked512, blocked1024 or classic", o.layout)
	}
	return o, nil
}

func specIDs() string {
	var ids []string
	for _, sp := range allSpecs() {
		ids = append(ids, sp.id)
	}
	return strings.Join(ids, ",")
}

// run is the whole program; main_test calls it directly.
func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	specs, err := selectSpecs(o.systems)
	if err != nil {
		return err
	}

	dir := o.dir
	if dir == "" {
		dir, err = os.MkdirTemp("", "dablooms-bench-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	progress := func(format string, a ...any) {
		if stderr != nil {
			fmt.Fprintf(stderr, format+"\n", a...)
		}
	}

	progress("generating %d present and %d absent keys", o.n, o.queries)
	keys := makeKeys(o.n, o.queries, o.seed)

	rep := report{
		Machine: currentMachine(),
		Config: config{
			N: o.n, Queries: o.queries, Reps: o.reps, Parallel: o.parallel,
			Seed: o.seed, Dir: dir, TargetFPR: 0.01,
		},
	}

	modes := []int{1}
	if o.parallel >= 2 {
		modes = append(modes, o.parallel)
	}
	for _, g := range modes {
		for _, sp := range specs {
			var samples []sample
			for r := 0; r < o.reps; r++ {
				progress("%-14s goroutines=%d rep %d/%d", sp.id, g, r+1, o.reps)
				cfg := buildConfig{n: o.n, dir: dir, rep: r, sbfHint: o.sbfHint, layout: o.layout}
				samples = append(samples, runOne(sp, cfg, keys, g))
				runtime.GC()
			}
			rep.Rows = append(rep.Rows, summarize(sp, g, o, samples))
		}
	}

	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeTables(stdout, rep, specs)
}

// keySet holds every key, generated before anything is timed.
type keySet struct {
	present  [][]byte // "key-%012d"; index i is added with id i
	presentQ [][]byte // the present keys in shuffled order (contains present)
	absentQ  [][]byte // "absent-%012d", shuffled (contains absent)
}

func makeKeys(n, queries int, seed uint64) *keySet {
	gen := func(prefix string, count int) [][]byte {
		width := len(prefix) + 12
		buf := make([]byte, 0, count*width)
		out := make([][]byte, count)
		for i := 0; i < count; i++ {
			start := len(buf)
			buf = fmt.Appendf(buf, "%s%012d", prefix, i)
			out[i] = buf[start:len(buf):len(buf)] // full slice: no append can spill into a neighbour
		}
		return out
	}
	ks := &keySet{present: gen("key-", n), absentQ: gen("absent-", queries)}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	ks.presentQ = slices.Clone(ks.present)
	rng.Shuffle(len(ks.presentQ), func(i, j int) { ks.presentQ[i], ks.presentQ[j] = ks.presentQ[j], ks.presentQ[i] })
	rng.Shuffle(len(ks.absentQ), func(i, j int) { ks.absentQ[i], ks.absentQ[j] = ks.absentQ[j], ks.absentQ[i] })
	return ks
}

// sample is one repetition of one system in one mode. Timings are ns/op;
// NaN means "not measured" (n/a, or no remove).
type sample struct {
	addNs, presentNs, absentNs, removeNs float64
	falsePos, falseNeg                   int
	addFail, removeFail                  int
	bytes                                int64
	errs                                 []string
	aborted                              bool // build failed or a panic cut the run short
}

// runOne builds a fresh instance and runs add, contains present, contains
// absent and (if supported) remove with g goroutines (g == 1: a plain loop).
// A phase that the system cannot do concurrently is run single-threaded and
// untimed when later phases need its effect (adds), or skipped (removes).
func runOne(sp spec, cfg buildConfig, ks *keySet, g int) (smp sample) {
	nan := math.NaN()
	smp = sample{addNs: nan, presentNs: nan, absentNs: nan, removeNs: nan}
	defer func() {
		if r := recover(); r != nil {
			smp.errs = append(smp.errs, fmt.Sprintf("panic: %v", r))
			smp.aborted = true
		}
	}()

	s, err := sp.new(cfg)
	if err != nil {
		smp.errs = append(smp.errs, "build: "+err.Error())
		smp.aborted = true
		return smp
	}
	defer func() {
		if err := s.close(); err != nil {
			smp.errs = append(smp.errs, "close: "+err.Error())
		}
	}()

	var errMu sync.Mutex
	noteErr := func(phase string, err error) {
		errMu.Lock()
		defer errMu.Unlock()
		msg := phase + ": " + err.Error()
		if !slices.Contains(smp.errs, msg) && len(smp.errs) < 8 {
			smp.errs = append(smp.errs, msg)
		}
	}

	// add, ids = key index.
	add := func(i int) bool {
		if err := s.add(ks.present[i], uint64(i)); err != nil {
			noteErr("add", err)
			return false
		}
		return true
	}
	if g == 1 || sp.concurrentWrite {
		var fails int
		smp.addNs, fails = timeStrided(g, len(ks.present), add)
		smp.addFail = fails
	} else {
		_, smp.addFail = timeStrided(1, len(ks.present), add)
	}

	// contains: present keys count misses (false negatives), absent keys
	// count hits (false positives).
	readers := g
	if !sp.concurrentRead {
		readers = 1
	}
	var ns float64
	ns, smp.falseNeg = timeChunked(readers, ks.presentQ, func(k []byte) bool { return !s.contains(k) })
	if readers == g {
		smp.presentNs = ns
	}
	ns, smp.falsePos = timeChunked(readers, ks.absentQ, func(k []byte) bool { return s.contains(k) })
	if readers == g {
		smp.absentNs = ns
	}

	smp.bytes = s.bytes()

	// remove every present key, same ids as the adds.
	if rm, ok := s.(remover); ok && sp.canRemove && (g == 1 || sp.concurrentWrite) {
		smp.removeNs, smp.removeFail = timeStrided(g, len(ks.present), func(i int) bool {
			if err := rm.remove(ks.present[i], uint64(i)); err != nil {
				noteErr("remove", err)
				return false
			}
			return true
		})
	}
	return smp
}

// timeStrided runs op(i) for every i < n on g goroutines, goroutine j taking
// i = j, j+g, j+2g, ... so that ids handed to add/remove stay nearly
// increasing in time. It returns the wall-clock ns per op and the number of
// ops that returned false.
func timeStrided(g, n int, op func(i int) bool) (nsPerOp float64, failures int) {
	runtime.GC()
	if g <= 1 {
		start := time.Now()
		for i := 0; i < n; i++ {
			if !op(i) {
				failures++
			}
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n), failures
	}
	counts := make([]int, g)
	elapsed := runGoroutines(g, func(j int) {
		f := 0
		for i := j; i < n; i += g {
			if !op(i) {
				f++
			}
		}
		counts[j] = f
	})
	for _, c := range counts {
		failures += c
	}
	return float64(elapsed.Nanoseconds()) / float64(n), failures
}

// timeChunked runs pred over keys on g goroutines, each taking one
// contiguous chunk of the (already shuffled) slice. It returns the
// wall-clock ns per op and how many keys pred was true for.
func timeChunked(g int, keys [][]byte, pred func([]byte) bool) (nsPerOp float64, hits int) {
	runtime.GC()
	if g <= 1 {
		start := time.Now()
		for _, k := range keys {
			if pred(k) {
				hits++
			}
		}
		return float64(time.Since(start).Nanoseconds()) / float64(len(keys)), hits
	}
	counts := make([]int, g)
	elapsed := runGoroutines(g, func(j int) {
		lo, hi := j*len(keys)/g, (j+1)*len(keys)/g
		h := 0
		for _, k := range keys[lo:hi] {
			if pred(k) {
				h++
			}
		}
		counts[j] = h
	})
	for _, c := range counts {
		hits += c
	}
	return float64(elapsed.Nanoseconds()) / float64(len(keys)), hits
}

// runGoroutines starts g goroutines, releases them together and returns the
// time from the release until the last one finished. A panic in a worker is
// re-raised in the caller so that runOne can record it.
func runGoroutines(g int, work func(j int)) time.Duration {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	var panicMu sync.Mutex
	var panicked any
	ready.Add(g)
	done.Add(g)
	for j := 0; j < g; j++ {
		go func() {
			defer done.Done()
			defer func() {
				if r := recover(); r != nil {
					panicMu.Lock()
					if panicked == nil {
						panicked = r
					}
					panicMu.Unlock()
				}
			}()
			ready.Done()
			<-start
			work(j)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	elapsed := time.Since(t0)
	if panicked != nil {
		panic(panicked)
	}
	return elapsed
}

// machine describes where the numbers were taken.
type machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	CPUModel   string `json:"cpu_model,omitempty"`
}

func currentMachine() machine {
	return machine{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), CPUModel: cpuModel(),
	}
}

// cpuModel reads the first "model name" of /proc/cpuinfo (Linux only).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// config echoes the run's parameters in the JSON output.
type config struct {
	N         int     `json:"n"`
	Queries   int     `json:"queries"`
	Reps      int     `json:"reps"`
	Parallel  int     `json:"parallel"`
	Seed      uint64  `json:"seed"`
	Dir       string  `json:"dir"`
	TargetFPR float64 `json:"target_fpr"`
}

// report is the -json output.
type report struct {
	Machine machine `json:"machine"`
	Config  config  `json:"config"`
	Rows    []row   `json:"rows"`
}

// row is one system in one mode, aggregated over the repetitions.
// Timings are medians in ns/op; null means the cell is "n/a" (not safe for
// concurrent use) or "—" (the system has no remove; see RemoveSupported).
type row struct {
	System            string   `json:"system"`
	Goroutines        int      `json:"goroutines"`
	AddNs             *float64 `json:"add_ns_per_op"`
	ContainsPresentNs *float64 `json:"contains_present_ns_per_op"`
	ContainsAbsentNs  *float64 `json:"contains_absent_ns_per_op"`
	RemoveNs          *float64 `json:"remove_ns_per_op"`
	RemoveSupported   bool     `json:"remove_supported"`
	FPR               float64  `json:"fpr"`             // median over reps of false positives / absent queries
	FalsePositives    int      `json:"false_positives"` // median over reps
	AbsentQueries     int      `json:"absent_queries"`
	FalseNegatives    int      `json:"false_negatives"` // worst (max) over reps
	PresentQueries    int      `json:"present_queries"`
	Bytes             int64    `json:"bytes"` // median over reps
	BytesPerKey       float64  `json:"bytes_per_key"`
	AddFailures       int      `json:"add_failures"`    // worst over reps
	RemoveFailures    int      `json:"remove_failures"` // worst over reps
	Reps              int      `json:"reps"`
	Aborted           bool     `json:"aborted"` // some repetition could not build the system or panicked: numbers are incomplete
	Errors            []string `json:"errors,omitempty"`
}

func summarize(sp spec, g int, o options, samples []sample) row {
	r := row{
		System: sp.id, Goroutines: g, RemoveSupported: sp.canRemove,
		AbsentQueries: o.queries, PresentQueries: o.n, Reps: len(samples),
	}
	field := func(get func(sample) float64) *float64 {
		var v []float64
		for _, s := range samples {
			if x := get(s); !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			return nil
		}
		m := median(v)
		return &m
	}
	r.AddNs = field(func(s sample) float64 { return s.addNs })
	r.ContainsPresentNs = field(func(s sample) float64 { return s.presentNs })
	r.ContainsAbsentNs = field(func(s sample) float64 { return s.absentNs })
	r.RemoveNs = field(func(s sample) float64 { return s.removeNs })

	var fps, bytes []float64
	for _, s := range samples {
		fps = append(fps, float64(s.falsePos))
		bytes = append(bytes, float64(s.bytes))
		r.FalseNegatives = max(r.FalseNegatives, s.falseNeg)
		r.AddFailures = max(r.AddFailures, s.addFail)
		r.RemoveFailures = max(r.RemoveFailures, s.removeFail)
		r.Aborted = r.Aborted || s.aborted
		for _, e := range s.errs {
			if !slices.Contains(r.Errors, e) {
				r.Errors = append(r.Errors, e)
			}
		}
	}
	r.FalsePositives = int(math.Round(median(fps)))
	r.FPR = median(fps) / float64(o.queries)
	r.Bytes = int64(math.Round(median(bytes)))
	r.BytesPerKey = float64(r.Bytes) / float64(o.n)
	return r
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
