package main

import (
	"bufio"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// c-original: the unmodified C dablooms 0.9.1 (bitly), in its own
// configuration (new_scaling_bloom(1000000, 0.01, file): capacity 1M, error
// 1 %, equal-size filters, tightening 0.5), the system ours-original
// configures this project like.
//
// Its source is never copied into this repository: at run time the tool
// finds it (-c-src, else shared/reference/dablooms-0.9.1-src in the working
// directory or one of its parents, i.e. ../shared beside the repository),
// compiles it with the harness coriginal/harness.c into a temporary
// directory (cc -O2, like the re-measured figures in
// ../shared/reference/dablooms-0.9.1.md) and starts it once as a
// subprocess. The subprocess generates the same keys (key-%012d,
// absent-%012d, contiguous, in index order) and reads the Go side's
// shuffled query order from a file, so both query the same keys in the same
// order with the same ids. Each repetition is one request on its stdin: it
// runs add, contains present, contains absent and remove on a fresh file in
// the run's -dir, timing each phase in C (CLOCK_MONOTONIC and
// CLOCK_THREAD_CPUTIME_ID around a plain C loop), and answers with one JSON
// line. The Go driver interleaves these requests with the other systems'
// repetitions.
//
// The original is not thread-safe (check uses a per-filter scratch buffer),
// so it has no row in the parallel table.

//go:embed coriginal/harness.c
var cHarnessSource []byte

var cOriginalSpec = spec{
	id:         "c-original",
	desc:       "the C original, unmodified dablooms 0.9.1 built with cc -O2 from -c-src, new_scaling_bloom(1000000, 0.01, file); subprocess, timed in C",
	newRunner:  newCOriginal,
	singleOnly: true,
	canRemove:  true,
}

// cSourceDir is where the C original's source is looked for below each
// parent of the working directory.
const cSourceDir = "shared/reference/dablooms-0.9.1-src"

// findCSource returns the C original's source directory: flag if set,
// else the first parent of the working directory holding cSourceDir.
func findCSource(flag string) (string, error) {
	check := func(dir string) error {
		for _, f := range []string{"dablooms.c", "dablooms.h", "murmur.c", "murmur.h"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return err
			}
		}
		return nil
	}
	if flag != "" {
		if err := check(flag); err != nil {
			return "", fmt.Errorf("no C dablooms source in -c-src %s: %v", flag, err)
		}
		return filepath.Abs(flag)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, cSourceDir)
		if check(cand) == nil {
			return cand, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("C dablooms source not found (looked for %s in %s and its parents; pass -c-src)", cSourceDir, wd)
}

// findCC returns the C compiler: flag, else $CC, else cc, gcc or clang.
func findCC(flag string) (string, error) {
	cands := []string{"cc", "gcc", "clang"}
	if env := os.Getenv("CC"); env != "" {
		cands = []string{env}
	}
	if flag != "" {
		cands = []string{flag}
	}
	for _, c := range cands {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no C compiler found (tried %s; pass -cc or set CC)", strings.Join(cands, ", "))
}

// buildCHarness compiles the harness and the original into buildDir and
// returns the executable's path.
func buildCHarness(cc, src, buildDir string) (string, error) {
	harness := filepath.Join(buildDir, "harness.c")
	if err := os.WriteFile(harness, cHarnessSource, 0o644); err != nil {
		return "", err
	}
	exe := filepath.Join(buildDir, "dablooms-c-harness")
	cmd := exec.Command(cc, "-O2", "-I"+src, "-o", exe, harness,
		filepath.Join(src, "dablooms.c"), filepath.Join(src, "murmur.c"), "-lm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return exe, nil
}

type cOriginal struct {
	buildDir string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   *bufio.Reader
	stderr   *lockedBuffer
	// ops per phase: adds, present and absent lookups, removes
	n, presentQueries, queries, removes int
	dead                                error // set once the subprocess failed: later reps report it
}

func newCOriginal(o options, ks *keySet, progress func(string, ...any)) (repRunner, error) {
	src, err := findCSource(o.cSrc)
	if err != nil {
		return nil, err
	}
	cc, err := findCC(o.cc)
	if err != nil {
		return nil, err
	}
	if uint64(len(ks.present)) > math.MaxUint32 || uint64(len(ks.absentOrder)) > math.MaxUint32 {
		return nil, errors.New("too many keys for the harness's uint32 order file")
	}
	buildDir, err := os.MkdirTemp("", "dablooms-c-*")
	if err != nil {
		return nil, err
	}
	c := &cOriginal{buildDir: buildDir, stderr: &lockedBuffer{},
		n: len(ks.present), presentQueries: len(ks.presentQ), queries: len(ks.absentQ), removes: o.removes}
	fail := func(err error) (repRunner, error) {
		c.close()
		return nil, err
	}
	progress("c-original: %s -O2 from %s", cc, src)
	exe, err := buildCHarness(cc, src, buildDir)
	if err != nil {
		return fail(err)
	}

	// The query order, as little-endian uint32 key indexes.
	order := make([]byte, 0, 4*(len(ks.presentOrder)+len(ks.absentOrder)))
	for _, v := range ks.presentOrder {
		order = binary.LittleEndian.AppendUint32(order, v)
	}
	for _, v := range ks.absentOrder {
		order = binary.LittleEndian.AppendUint32(order, v)
	}
	orderFile := filepath.Join(buildDir, "order.bin")
	if err := os.WriteFile(orderFile, order, 0o644); err != nil {
		return fail(err)
	}

	c.cmd = exec.Command(exe, fmt.Sprint(len(ks.present)), fmt.Sprint(len(ks.absentQ)),
		fmt.Sprint(len(ks.presentQ)), fmt.Sprint(o.removes), orderFile)
	c.cmd.Stderr = c.stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return fail(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	c.stdout = bufio.NewReader(stdout)
	if err := c.cmd.Start(); err != nil {
		return fail(err)
	}
	var ready struct {
		Ready    bool     `json:"ready"`
		Version  string   `json:"version"`
		PresentQ []string `json:"present_q"` // its first and last present and absent queries
		AbsentQ  []string `json:"absent_q"`
	}
	if err := c.readLine(&ready); err != nil || !ready.Ready {
		return fail(fmt.Errorf("harness did not start: %v %s", err, c.stderr.String()))
	}
	if ready.Version != "0.9.1" {
		return fail(fmt.Errorf("harness reports dablooms version %q, want 0.9.1", ready.Version))
	}
	wantP := []string{string(ks.presentQ[0]), string(ks.presentQ[len(ks.presentQ)-1])}
	wantA := []string{string(ks.absentQ[0]), string(ks.absentQ[len(ks.absentQ)-1])}
	if !slices.Equal(ready.PresentQ, wantP) || !slices.Equal(ready.AbsentQ, wantA) {
		return fail(fmt.Errorf("harness queries %q and %q, the Go side %q and %q", ready.PresentQ, ready.AbsentQ, wantP, wantA))
	}
	return c, nil
}

func (c *cOriginal) readLine(v any) error {
	line, err := c.stdout.ReadBytes('\n')
	if err != nil {
		return err
	}
	return json.Unmarshal(line, v)
}

// cResult is one repetition as the harness reports it (phase totals in
// ns; a CPU total of -1 means the thread clock could not be read).
type cResult struct {
	Error       string `json:"error"`
	AddWall     int64  `json:"add_wall_ns"`
	AddCPU      int64  `json:"add_cpu_ns"`
	PresentWall int64  `json:"present_wall_ns"`
	PresentCPU  int64  `json:"present_cpu_ns"`
	AbsentWall  int64  `json:"absent_wall_ns"`
	AbsentCPU   int64  `json:"absent_cpu_ns"`
	RemoveWall  int64  `json:"remove_wall_ns"`
	RemoveCPU   int64  `json:"remove_cpu_ns"`
	FalseNeg    int    `json:"false_neg"`
	FalsePos    int    `json:"false_pos"`
	AddFail     int    `json:"add_fail"`
	RemoveFail  int    `json:"remove_fail"`
	Bytes       int64  `json:"bytes"`
	Filters     int    `json:"filters"`
}

func (c *cOriginal) runRep(cfg buildConfig) sample {
	nan := math.NaN()
	smp := sample{addNs: nan, presentNs: nan, absentNs: nan, removeNs: nan,
		addCPU: nan, presentCPU: nan, absentCPU: nan, removeCPU: nan}
	abort := func(err error) sample {
		if c.dead == nil {
			c.dead = err
		}
		smp.errs = append(smp.errs, c.dead.Error())
		smp.aborted = true
		return smp
	}
	if c.dead != nil {
		return abort(c.dead)
	}
	path := filepath.Join(cfg.dir, fmt.Sprintf("c-original-%d.dablooms", cfg.rep))
	if strings.ContainsAny(path, "\r\n") {
		return abort(errors.New("c-original: the file path contains a line break"))
	}
	_ = os.Remove(path)
	errBefore := c.stderr.Len()
	var r cResult
	if _, err := fmt.Fprintln(c.stdin, path); err != nil {
		return abort(fmt.Errorf("c-original harness: %v %s", err, c.stderr.String()))
	}
	if err := c.readLine(&r); err != nil {
		return abort(fmt.Errorf("c-original harness: %v %s", err, c.stderr.String()))
	}
	if r.Error != "" {
		smp.errs = append(smp.errs, "c-original: "+r.Error)
		smp.aborted = true
		return smp
	}
	per := func(total int64, ops int) float64 {
		if total < 0 {
			return nan
		}
		return float64(total) / float64(ops)
	}
	smp.addNs, smp.addCPU = per(r.AddWall, c.n), per(r.AddCPU, c.n)
	smp.presentNs, smp.presentCPU = per(r.PresentWall, c.presentQueries), per(r.PresentCPU, c.presentQueries)
	smp.absentNs, smp.absentCPU = per(r.AbsentWall, c.queries), per(r.AbsentCPU, c.queries)
	smp.removeNs, smp.removeCPU = per(r.RemoveWall, c.removes), per(r.RemoveCPU, c.removes)
	smp.falseNeg, smp.falsePos = r.FalseNeg, r.FalsePos
	smp.addFail, smp.removeFail = r.AddFail, r.RemoveFail
	smp.bytes, smp.filters = r.Bytes, r.Filters
	// The library reports counter overflow and underflow on stderr
	// ("4 bit int Overflow", "Decrementing zero"); show what it printed.
	if msg := strings.TrimSpace(c.stderr.String()[errBefore:]); msg != "" {
		lines := strings.Split(msg, "\n")
		note := fmt.Sprintf("C library printed %d line(s) on stderr, first: %s", len(lines), lines[0])
		smp.errs = append(smp.errs, note)
	}
	return smp
}

func (c *cOriginal) close() error {
	var err error
	if c.cmd != nil && c.cmd.Process != nil {
		c.stdin.Close() // EOF: the harness exits
		err = c.cmd.Wait()
	}
	if c.buildDir != "" {
		os.RemoveAll(c.buildDir)
	}
	return err
}

// lockedBuffer collects the subprocess's stderr (written by exec's copier
// goroutine, read by runRep).
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func (b *lockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf)
}
