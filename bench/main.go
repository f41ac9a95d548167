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
	// presentQueries and removes cap the contains-present and remove
	// phases (0 = n): the original's chain makes its lookups slow at 10M.
	presentQueries int
	removes        int
	cSrc           string // source of the C original ("" = search upwards for shared/reference)
	cc             string // C compiler for the C original ("" = $CC, else cc, gcc, clang)
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
	fs.IntVar(&o.presentQueries, "present-queries", 0, "number of present keys queried, a shuffled sample (0 = n)")
	fs.IntVar(&o.removes, "removes", 0, "number of keys removed, the first ones in add order (0 = n)")
	fs.StringVar(&o.cSrc, "c-src", "", "directory of the unmodified C dablooms 0.9.1 source for c-original (default: the first shared/reference/dablooms-0.9.1-src found upwards from the working directory)")
	fs.StringVar(&o.cc, "cc", "", "C compiler for c-original (default: $CC, else cc, gcc or clang on PATH)")
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
	if o.presentQueries == 0 {
		o.presentQueries = o.n
	}
	if o.presentQueries < 1 || o.presentQueries > o.n {
		return o, errors.New("-present-queries must be between 1 and -n")
	}
	if o.removes == 0 {
		o.removes = o.n
	}
	if o.removes < 1 || o.removes > o.n {
		return o, errors.New("-removes must be between 1 and -n")
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
	keys.presentQ, keys.presentOrder = keys.presentQ[:o.presentQueries], keys.presentOrder[:o.presentQueries]

	rep := report{
		Machine: currentMachine(),
		Config: config{
			N: o.n, Queries: o.queries, PresentQueries: o.presentQueries, Removes: o.removes,
			Reps: o.reps, Parallel: o.parallel, Seed: o.seed, Dir: dir, TargetFPR: 0.01,
		},
	}

	// Systems that run whole repetitions elsewhere (the C original, in a
	// subprocess) are started once; one that cannot be built is skipped
	// with a message, the rest of the run goes on.
	runners := map[string]repRunner{}
	defer func() {
		for _, rr := range runners {
			rr.close()
		}
	}()
	var kept []spec
	for _, sp := range specs {
		if sp.newRunner == nil {
			kept = append(kept, sp)
			continue
		}
		progress("%s: building", sp.id)
		rr, err := sp.newRunner(o, keys, progress)
		if err != nil {
			msg := fmt.Sprintf("%s skipped: %v", sp.id, err)
			progress("%s", msg)
			rep.Skipped = append(rep.Skipped, msg)
			continue
		}
		runners[sp.id] = rr
		kept = append(kept, sp)
	}
	specs = kept

	modes := []int{1}
	if o.parallel >= 2 {
		modes = append(modes, o.parallel)
	}
	for _, g := range modes {
		// Interleaved run by run (A rep 1, B rep 1, A rep 2, ...), so that
		// a burst of load on a shared machine spreads over the systems
		// instead of landing on one row.
		var inMode []spec
		for _, sp := range specs {
			if g == 1 || !sp.singleOnly {
				inMode = append(inMode, sp)
			}
		}
		samples := make([][]sample, len(inMode))
		for r := 0; r < o.reps; r++ {
			for i, sp := range inMode {
				progress("%-14s goroutines=%d rep %d/%d", sp.id, g, r+1, o.reps)
				cfg := buildConfig{n: o.n, removes: o.removes, dir: dir, rep: r, sbfHint: o.sbfHint, layout: o.layout}
				var smp sample
				if rr := runners[sp.id]; rr != nil {
					smp = rr.runRep(cfg)
				} else {
					smp = runOne(sp, cfg, keys, g)
				}
				samples[i] = append(samples[i], smp)
				runtime.GC()
			}
		}
		for i, sp := range inMode {
			rep.Rows = append(rep.Rows, summarize(sp, g, o, samples[i]))
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
	presentQ [][]byte // the present keys in shuffled order (contains present), cut to -present-queries
	absentQ  [][]byte // "absent-%012d", shuffled (contains absent)
	// presentOrder[j] and absentOrder[j] are the key indexes of presentQ[j]
	// and absentQ[j] (handed to the C original so that it queries the same
	// keys in the same order).
	presentOrder, absentOrder []uint32
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
	iota := func(count int) []uint32 {
		out := make([]uint32, count)
		for i := range out {
			out[i] = uint32(i)
		}
		return out
	}
	ks := &keySet{present: gen("key-", n), presentOrder: iota(n), absentOrder: iota(queries)}
	absent := gen("absent-", queries)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	rng.Shuffle(n, func(i, j int) { ks.presentOrder[i], ks.presentOrder[j] = ks.presentOrder[j], ks.presentOrder[i] })
	rng.Shuffle(queries, func(i, j int) { ks.absentOrder[i], ks.absentOrder[j] = ks.absentOrder[j], ks.absentOrder[i] })
	ks.presentQ = make([][]byte, n)
	for j, i := range ks.presentOrder {
		ks.presentQ[j] = ks.present[i]
	}
	ks.absentQ = make([][]byte, queries)
	for j, i := range ks.absentOrder {
		ks.absentQ[j] = absent[i]
	}
	return ks
}

// sample is one repetition of one system in one mode. Timings are ns/op,
// wall clock (…Ns) and thread CPU time (…CPU: the CPU time of the threads
// that ran the phase, summed, / ops); NaN means "not measured" (n/a, no
// remove, or no thread clock on this OS).
type sample struct {
	addNs, presentNs, absentNs, removeNs     float64
	addCPU, presentCPU, absentCPU, removeCPU float64
	falsePos, falseNeg                       int
	addFail, removeFail                      int
	bytes                                    int64
	filters                                  int // sub-filters after the adds; 0 = not reported
	errs                                     []string
	aborted                                  bool // build failed or a panic cut the run short
}

// runOne builds a fresh instance and runs add, contains present, contains
// absent and (if supported) remove with g goroutines (g == 1: a plain loop).
// A phase that the system cannot do concurrently is run single-threaded and
// untimed when later phases need its effect (adds), or skipped (removes).
func runOne(sp spec, cfg buildConfig, ks *keySet, g int) (smp sample) {
	nan := math.NaN()
	smp = sample{addNs: nan, presentNs: nan, absentNs: nan, removeNs: nan,
		addCPU: nan, presentCPU: nan, absentCPU: nan, removeCPU: nan}
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

	if bs, ok := s.(batcher); ok {
		runBatched(&smp, bs, ks, cfg.removes, noteErr)
		smp.bytes = s.bytes()
		if fc, ok := s.(filterCounter); ok {
			smp.filters = fc.filters()
		}
		return smp
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
		var t timing
		t, smp.addFail = timeStrided(g, len(ks.present), add)
		smp.addNs, smp.addCPU = t.wall, t.cpu
	} else {
		_, smp.addFail = timeStrided(1, len(ks.present), add)
	}

	if p, ok := s.(preparer); ok {
		if err := p.prepare(); err != nil {
			noteErr("prepare", err)
			smp.aborted = true
			return smp
		}
	}

	// contains: present keys count misses (false negatives), absent keys
	// count hits (false positives).
	readers := g
	if !sp.concurrentRead {
		readers = 1
	}
	var t timing
	t, smp.falseNeg = timeChunked(readers, ks.presentQ, func(k []byte) bool { return !s.contains(k) })
	if readers == g {
		smp.presentNs, smp.presentCPU = t.wall, t.cpu
	}
	t, smp.falsePos = timeChunked(readers, ks.absentQ, func(k []byte) bool { return s.contains(k) })
	if readers == g {
		smp.absentNs, smp.absentCPU = t.wall, t.cpu
	}

	smp.bytes = s.bytes()
	if fc, ok := s.(filterCounter); ok {
		smp.filters = fc.filters()
	}

	// remove the first cfg.removes keys in add order, same ids as the adds.
	if rm, ok := s.(remover); ok && sp.canRemove && (g == 1 || sp.concurrentWrite) {
		removes := cfg.removes
		if removes <= 0 || removes > len(ks.present) {
			removes = len(ks.present)
		}
		t, smp.removeFail = timeStrided(g, removes, func(i int) bool {
			if err := rm.remove(ks.present[i], uint64(i)); err != nil {
				noteErr("remove", err)
				return false
			}
			return true
		})
		smp.removeNs, smp.removeCPU = t.wall, t.cpu
	}
	return smp
}

// runBatched runs the phases of runOne through a batcher, on one thread.
func runBatched(smp *sample, bs batcher, ks *keySet, removes int, noteErr func(string, error)) {
	ids := make([]uint64, len(ks.present))
	for i := range ids {
		ids[i] = uint64(i)
	}
	var t timing
	t, smp.addFail = timeBatched(len(ks.present), func(lo, hi int) int {
		if err := bs.addBatch(ks.present[lo:hi], ids[lo:hi]); err != nil {
			noteErr("add", err)
			return hi - lo
		}
		return 0
	})
	smp.addNs, smp.addCPU = t.wall, t.cpu
	out := make([]bool, batchSize)
	count := func(keys [][]byte, want bool) func(lo, hi int) int {
		return func(lo, hi int) int {
			bs.containsBatch(keys[lo:hi], out[:hi-lo])
			n := 0
			for _, v := range out[:hi-lo] {
				if v != want {
					n++
				}
			}
			return n
		}
	}
	t, smp.falseNeg = timeBatched(len(ks.presentQ), count(ks.presentQ, true))
	smp.presentNs, smp.presentCPU = t.wall, t.cpu
	t, smp.falsePos = timeBatched(len(ks.absentQ), count(ks.absentQ, false))
	smp.absentNs, smp.absentCPU = t.wall, t.cpu
	if removes <= 0 || removes > len(ks.present) {
		removes = len(ks.present)
	}
	t, smp.removeFail = timeBatched(removes, func(lo, hi int) int {
		if err := bs.removeBatch(ks.present[lo:hi], ids[lo:hi]); err != nil {
			noteErr("remove", err)
			return hi - lo
		}
		return 0
	})
	smp.removeNs, smp.removeCPU = t.wall, t.cpu
}

// timeBatched runs op over [0, n) in batches of batchSize on this thread
// and returns the time per key and the sum of what op returned.
func timeBatched(n int, op func(lo, hi int) int) (t timing, failures int) {
	runtime.GC()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := threadCPU()
	start := time.Now()
	for lo := 0; lo < n; lo += batchSize {
		failures += op(lo, min(lo+batchSize, n))
	}
	wall := time.Since(start)
	return perOp(wall, cpuSince(c0), n), failures
}

// timing is one phase's cost per op: wall clock, and the thread CPU time of
// the threads that ran it (summed over goroutines; NaN where the OS has no
// per-thread clock).
type timing struct{ wall, cpu float64 }

// timeStrided runs op(i) for every i < n on g goroutines, goroutine j taking
// i = j, j+g, j+2g, ... so that ids handed to add/remove stay nearly
// increasing in time. It returns the ns per op and the number of ops that
// returned false.
func timeStrided(g, n int, op func(i int) bool) (t timing, failures int) {
	runtime.GC()
	if g <= 1 {
		runtime.LockOSThread() // the thread clock then belongs to this loop alone
		defer runtime.UnlockOSThread()
		c0 := threadCPU()
		start := time.Now()
		for i := 0; i < n; i++ {
			if !op(i) {
				failures++
			}
		}
		wall := time.Since(start)
		return perOp(wall, cpuSince(c0), n), failures
	}
	counts := make([]int, g)
	elapsed, cpu := runGoroutines(g, func(j int) {
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
	return perOp(elapsed, cpu, n), failures
}

// perOp divides a phase's wall and CPU time (ns; cpu < 0 = not measured)
// by its op count.
func perOp(wall time.Duration, cpu int64, n int) timing {
	t := timing{wall: float64(wall.Nanoseconds()) / float64(n), cpu: math.NaN()}
	if cpu >= 0 {
		t.cpu = float64(cpu) / float64(n)
	}
	return t
}

// timeChunked runs pred over keys on g goroutines, each taking one
// contiguous chunk of the (already shuffled) slice. It returns the
// ns per op and how many keys pred was true for.
func timeChunked(g int, keys [][]byte, pred func([]byte) bool) (t timing, hits int) {
	runtime.GC()
	if g <= 1 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0 := threadCPU()
		start := time.Now()
		for _, k := range keys {
			if pred(k) {
				hits++
			}
		}
		wall := time.Since(start)
		return perOp(wall, cpuSince(c0), len(keys)), hits
	}
	counts := make([]int, g)
	elapsed, cpu := runGoroutines(g, func(j int) {
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
	return perOp(elapsed, cpu, len(keys)), hits
}

// runGoroutines starts g goroutines, each locked to its own thread,
// releases them together and returns the time from the release until the
// last one finished, and the thread CPU time the workers used, summed (-1
// if the OS has no per-thread clock). A panic in a worker is re-raised in
// the caller so that runOne can record it.
func runGoroutines(g int, work func(j int)) (time.Duration, int64) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	var panicMu sync.Mutex
	var panicked any
	cpu := make([]int64, g)
	ready.Add(g)
	done.Add(g)
	for j := 0; j < g; j++ {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
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
			c0 := threadCPU()
			work(j)
			cpu[j] = cpuSince(c0)
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
	var sum int64
	for _, c := range cpu {
		if c < 0 {
			return elapsed, -1
		}
		sum += c
	}
	return elapsed, sum
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
	N              int     `json:"n"`
	Queries        int     `json:"queries"`
	PresentQueries int     `json:"present_queries"`
	Removes        int     `json:"removes"`
	Reps           int     `json:"reps"`
	Parallel       int     `json:"parallel"`
	Seed           uint64  `json:"seed"`
	Dir            string  `json:"dir"`
	TargetFPR      float64 `json:"target_fpr"`
}

// report is the -json output.
type report struct {
	Machine machine `json:"machine"`
	Config  config  `json:"config"`
	Rows    []row   `json:"rows"`
	// Skipped names the systems that could not be run at all, and why
	// (the C original without its source or a C compiler).
	Skipped []string `json:"skipped,omitempty"`
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
	// The same four as thread CPU time per op (the phase's threads, summed).
	AddCPU             *float64 `json:"add_cpu_ns_per_op"`
	ContainsPresentCPU *float64 `json:"contains_present_cpu_ns_per_op"`
	ContainsAbsentCPU  *float64 `json:"contains_absent_cpu_ns_per_op"`
	RemoveCPU          *float64 `json:"remove_cpu_ns_per_op"`
	RemoveSupported    bool     `json:"remove_supported"`
	FPR                float64  `json:"fpr"`             // median over reps of false positives / absent queries
	FalsePositives     int      `json:"false_positives"` // median over reps
	AbsentQueries      int      `json:"absent_queries"`
	FalseNegatives     int      `json:"false_negatives"` // worst (max) over reps
	PresentQueries     int      `json:"present_queries"`
	Removes            int      `json:"removes"`
	Bytes              int64    `json:"bytes"` // median over reps
	BytesPerKey        float64  `json:"bytes_per_key"`
	AddFailures        int      `json:"add_failures"`      // worst over reps
	RemoveFailures     int      `json:"remove_failures"`   // worst over reps
	Filters            int      `json:"filters,omitempty"` // sub-filters after the adds (median), where the system tells
	Reps               int      `json:"reps"`
	Aborted            bool     `json:"aborted"` // some repetition could not build the system or panicked: numbers are incomplete
	Errors             []string `json:"errors,omitempty"`
}

func summarize(sp spec, g int, o options, samples []sample) row {
	r := row{
		System: sp.id, Goroutines: g, RemoveSupported: sp.canRemove,
		AbsentQueries: o.queries, PresentQueries: o.presentQueries, Removes: o.removes, Reps: len(samples),
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
	r.AddCPU = field(func(s sample) float64 { return s.addCPU })
	r.ContainsPresentCPU = field(func(s sample) float64 { return s.presentCPU })
	r.ContainsAbsentCPU = field(func(s sample) float64 { return s.absentCPU })
	r.RemoveCPU = field(func(s sample) float64 { return s.removeCPU })

	var fps, bytes, filters []float64
	for _, s := range samples {
		fps = append(fps, float64(s.falsePos))
		bytes = append(bytes, float64(s.bytes))
		filters = append(filters, float64(s.filters))
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
	r.Filters = int(math.Round(median(filters)))
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

// cpuSince is the thread CPU time in ns since c0 (a threadCPU reading),
// or -1 if either reading failed.
func cpuSince(c0 int64) int64 {
	if c0 < 0 {
		return -1
	}
	c1 := threadCPU()
	if c1 < 0 {
		return -1
	}
	return c1 - c0
}
