package main

// These tests build the C library once per run (go build -buildmode=c-shared
// into a temporary directory), then compile C programs against dablooms.h
// with the system C compiler and run them, and run the Python unittest suite
// over the library. They skip only where no C compiler or no python3 is
// found, and with CI=true they fail instead of skipping.
//
// This file does not use cgo itself, so it builds (and vets) everywhere.

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dablooms/dablooms/scaling"
)

// originals is the module's copy of the files dablooms 0.9.1 wrote.
const originals = "../testdata/dablooms-0.9.1"

var lib struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if lib.dir != "" {
		os.RemoveAll(lib.dir)
	}
	os.Exit(code)
}

// unavailable skips, or in CI (CI=true) fails, a test whose tool is missing.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true, where these tests must run", why)
	}
	t.Skip(why)
}

// compiler returns the C compiler command: $CC, else cc, gcc or clang.
func compiler(t testing.TB) []string {
	t.Helper()
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		if _, err := exec.LookPath(cc[0]); err != nil {
			unavailable(t, fmt.Sprintf("C compiler $CC=%q not found: %v", os.Getenv("CC"), err))
		}
		return cc
	}
	for _, c := range []string{"cc", "gcc", "clang"} {
		if _, err := exec.LookPath(c); err == nil {
			return []string{c}
		}
	}
	unavailable(t, "no C compiler (cc, gcc or clang) on PATH: the C API cannot be built or tested")
	return nil
}

func python(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		unavailable(t, "python3 not on PATH: pydablooms cannot be tested")
	}
	return p
}

// library builds libdablooms.so once per test run and returns its directory.
func library(t testing.TB) string {
	t.Helper()
	cc := compiler(t)
	lib.once.Do(func() {
		lib.dir, lib.err = os.MkdirTemp("", "dablooms-capi-")
		if lib.err != nil {
			return
		}
		// go test puts its own GOROOT/bin first on the test's PATH.
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(lib.dir, "libdablooms.so"), ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CC="+strings.Join(cc, " "))
		if out, err := cmd.CombinedOutput(); err != nil {
			lib.err = fmt.Errorf("go build -buildmode=c-shared ./capi: %v\n%s", err, out)
		}
	})
	if lib.err != nil {
		t.Fatal(lib.err)
	}
	return lib.dir
}

// compileC compiles C sources against dablooms.h and the library.
func compileC(t testing.TB, out string, srcs ...string) {
	t.Helper()
	dir := library(t)
	args := append(compiler(t)[1:], "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-I.", "-o", out)
	args = append(args, srcs...)
	args = append(args, "-L"+dir, "-ldablooms", "-Wl,-rpath,"+dir)
	cmd := exec.Command(compiler(t)[0], args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
}

// copyOriginals copies the original's files into a new directory.
func copyOriginals(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"scaling_1000_0.05.bin", "scaling_dupids.bin", "counting_1000_0.05.bin"} {
		b, err := os.ReadFile(filepath.Join(originals, name))
		if err != nil {
			t.Fatalf("testdata of dablooms 0.9.1 missing: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The functions dablooms.h declares: the original's public API and this
// library's two additions.
var (
	originalAPI = []string{
		"dablooms_version",
		"new_scaling_bloom", "new_scaling_bloom_from_file", "free_scaling_bloom",
		"scaling_bloom_add", "scaling_bloom_remove", "scaling_bloom_check", "scaling_bloom_flush",
		"scaling_bloom_mem_seqnum", "scaling_bloom_disk_seqnum",
		"new_counting_bloom", "new_counting_bloom_from_file", "free_counting_bloom",
		"counting_bloom_add", "counting_bloom_remove", "counting_bloom_check",
		"bitmap_resize", "new_bitmap", "bitmap_increment", "bitmap_decrement", "bitmap_check",
		"bitmap_flush", "free_bitmap",
	}
	additions = []string{"dablooms_last_error", "dablooms_last_conversion"}
)

var declRE = regexp.MustCompile(`(?m)^[a-z][a-z0-9_ ]*[ *]([a-z_][a-z0-9_]*)\([^)]*\);`)

// TestHeaderMatchesLibrary checks that dablooms.h declares exactly the API
// and that the library exports every function it declares.
func TestHeaderMatchesLibrary(t *testing.T) {
	h, err := os.ReadFile("dablooms.h")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, m := range declRE.FindAllStringSubmatch(string(h), -1) {
		declared = append(declared, m[1])
	}
	want := append(slices.Clone(originalAPI), additions...)
	slices.Sort(declared)
	slices.Sort(want)
	if !slices.Equal(declared, want) {
		t.Fatalf("dablooms.h declares %v, want %v", declared, want)
	}
	f, err := elf.Open(filepath.Join(library(t), "libdablooms.so"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && elf.ST_BIND(s.Info) == elf.STB_GLOBAL && s.Section != elf.SHN_UNDEF {
			exported[s.Name] = true
		}
	}
	for _, name := range want {
		if !exported[name] {
			t.Errorf("libdablooms.so does not export %s", name)
		}
	}
	for _, internal := range []string{"dablooms_set_error_text", "dablooms_set_conversion_text"} {
		if exported[internal] {
			t.Errorf("libdablooms.so exports the internal %s", internal)
		}
	}
}

// TestC runs testdata/capi_test.c: every function, bad handles, several
// threads, a reopened file and the original's files.
func TestC(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "capi_test")
	compileC(t, bin, "testdata/capi_test.c")
	work, orig := t.TempDir(), copyOriginals(t)
	cmd := exec.Command(bin, work, orig)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("C test failed: %v", err)
	}
	m := regexp.MustCompile(`(?m)^(\d+) checks, 0 failed$`).FindSubmatch(out)
	if m == nil {
		t.Fatal("C test did not report its checks")
	}
	if n, _ := strconv.Atoi(string(m[1])); n < 60000 {
		t.Fatalf("C test ran %d checks, expected more than 60000", n)
	}
	// The converted files say so on stderr too.
	if c := strings.Count(string(out), "dablooms: converted "); c != 4 {
		t.Errorf("%d conversion notices on stderr, want 4", c)
	}
	// The library's files are this project's: Go opens what C wrote.
	f, err := scaling.Open(filepath.Join(work, "orig_scaling.bin"), &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, k := range []string{"key-2", "key-2499", "new-key"} {
		if !f.Contains([]byte(k)) {
			t.Errorf("Go does not find %q in the file C converted", k)
		}
	}
	c, err := scaling.Open(filepath.Join(work, "counting.dbl"), &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s := c.Stats(); len(s.Filters) != 1 || s.FilterLimit != 1 || s.ErrorRate != 0.05 || s.Filters[0].ErrorTarget != 0.05 {
		t.Errorf("counting file: %d filters, limit %d, error rate %v, filter target %v; want one filter, limit 1, 0.05",
			len(s.Filters), s.FilterLimit, s.ErrorRate, s.Filters[0].ErrorTarget)
	}
}

// reference is the original dablooms 0.9.1's unmodified source (header and
// tests/): ../shared/reference beside the clone, as on CI, or
// $DABLOOMS_REFERENCE.
func reference(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("DABLOOMS_REFERENCE")
	if dir == "" {
		dir = "../../shared/reference/dablooms-0.9.1-src"
	}
	if _, err := os.Stat(filepath.Join(dir, "tests", "test_dablooms.c")); err != nil {
		unavailable(t, fmt.Sprintf("the original's source is not at %s (set DABLOOMS_REFERENCE): %v", dir, err))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// words writes n distinct words, one a line, for the original's test programs.
func words(t testing.TB, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "word-%06d\n", i)
	}
	p := filepath.Join(t.TempDir(), "words")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOriginalTestProgram compiles the original's tests/test_dablooms.c,
// unmodified, against the original's dablooms.h (only: not this directory's)
// and links it against this library: it reads the structs' fields and calls
// bitmap_flush(bloom->bitmap). 150,000 words make the scaling filter grow.
func TestOriginalTestProgram(t *testing.T) {
	ref, dir := reference(t), library(t)
	hdr := t.TempDir() // the original's header alone on the include path
	b, err := os.ReadFile(filepath.Join(ref, "dablooms.h"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hdr, "dablooms.h"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "test_dablooms")
	cc := compiler(t)
	args := append(cc[1:], "-O2", "-I"+hdr, "-o", bin, filepath.Join(ref, "tests", "test_dablooms.c"),
		"-L"+dir, "-ldablooms", "-Wl,-rpath,"+dir)
	if out, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("compiling the original's test_dablooms.c: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, filepath.Join(t.TempDir(), "bloom.bin"), words(t, 150_000)).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("test_dablooms: %v", err)
	}
	for _, want := range []string{"** dablooms version: 0.9.1+go (", "** 0 failures, 0 warnings"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("test_dablooms output lacks %q", want)
		}
	}
	if n := strings.Count(string(out), "TEST PASS"); n != 4 {
		t.Errorf("%d of its 4 tests passed", n)
	}
}

// TestCExample builds and runs example/example.c as capi/README.md does.
func TestCExample(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "example")
	compileC(t, bin, "example/example.c")
	out, err := exec.Command(bin, filepath.Join(t.TempDir(), "example.dbl")).CombinedOutput()
	if err != nil {
		t.Fatalf("example: %v\n%s", err, out)
	}
	for _, want := range []string{"dablooms 0.9.1+go", "mem_seqnum 4, disk_seqnum 4", "http://spam.example/a: maybe spam", "http://spam.example/c: maybe spam"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("example output lacks %q:\n%s", want, out)
		}
	}
}

// TestPython runs the unittest suite of pydablooms and the README's example.
func TestPython(t *testing.T) {
	py := python(t)
	dir := library(t)
	src, err := filepath.Abs("python/src") // the module, not installed
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "DABLOOMS_LIB="+filepath.Join(dir, "libdablooms.so"), "DABLOOMS_ORIGINALS="+copyOriginals(t),
		"PYTHONPATH="+src)
	cmd := exec.Command(py, "-m", "unittest", "-v", "test_pydablooms")
	cmd.Dir, cmd.Env = "python", env
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python unittest failed: %v", err)
	}
	m := regexp.MustCompile(`(?m)^Ran (\d+) tests? `).FindSubmatch(out)
	if m == nil || !regexp.MustCompile(`(?m)^OK$`).Match(out) {
		t.Fatal("python unittest did not report OK")
	}
	if n, _ := strconv.Atoi(string(m[1])); n < 11 {
		t.Fatalf("python ran %d tests, want at least 11", n)
	}
	if strings.Contains(string(out), "skipped") {
		t.Fatal("python tests were skipped")
	}

	cmd = exec.Command(py, "example.py", filepath.Join(t.TempDir(), "example.bin"))
	cmd.Dir, cmd.Env = "python", env
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("example.py: %v\n%s", err, out)
	}
	for _, want := range []string{"pydablooms 0.9.1+go", "mem_seqnum 4, disk_seqnum 4", "http://spam.example/a: maybe spam"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("example.py output lacks %q:\n%s", want, out)
		}
	}

	// The original's own test script, unmodified.
	cmd = exec.Command(py, filepath.Join(reference(t), "tests", "test_pydablooms.py"), filepath.Join(t.TempDir(), "bloom.bin"), words(t, 150_000))
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "TEST PASS") {
		t.Fatalf("the original's test_pydablooms.py: %v\n%s", err, out)
	}
}

// BenchmarkCallBoundary measures add and check per key from Go, from C
// through the library and from Python through ctypes, on the same workload:
// N keys "key-%011d" added with ids 1..N to a new file (capacity N, error
// 0.01), then checked in the same order, after 100,000 untimed checks of an
// absent key. N is $DABLOOMS_BENCH_N (default
// 1,000,000). Each side times its own loops; -benchtime Nx repeats the
// whole measurement N times and reports the means.
//
//	go test ./capi -run '^$' -bench CallBoundary -benchtime 3x
func BenchmarkCallBoundary(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("DABLOOMS_BENCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("DABLOOMS_BENCH_N=%q", s)
		}
	}
	// run repeats a measurement b.N times and reports the means.
	run := func(b *testing.B, measure func() (add, check float64)) {
		var add, check float64
		for range b.N {
			a, c := measure()
			add, check = add+a, check+c
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(add/float64(b.N), "add-ns/key")
		b.ReportMetric(check/float64(b.N), "check-ns/key")
	}
	b.Run("go", func(b *testing.B) {
		run(b, func() (float64, float64) { return benchGo(b, n) })
	})
	b.Run("c", func(b *testing.B) {
		bin := filepath.Join(b.TempDir(), "bench")
		compileC(b, bin, "testdata/bench.c")
		run(b, func() (float64, float64) {
			return benchRun(b, exec.Command(bin, filepath.Join(b.TempDir(), "bench.dbl"), strconv.Itoa(n)))
		})
	})
	b.Run("python", func(b *testing.B) {
		py, dir := python(b), library(b)
		run(b, func() (float64, float64) {
			cmd := exec.Command(py, "bench_pydablooms.py", filepath.Join(b.TempDir(), "bench.bin"), strconv.Itoa(n))
			cmd.Dir = "python"
			cmd.Env = append(os.Environ(), "DABLOOMS_LIB="+filepath.Join(dir, "libdablooms.so"), "PYTHONPATH=src") // relative to Dir
			return benchRun(b, cmd)
		})
	})
}

func benchGo(b *testing.B, n int) (add, check float64) {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%011d", i)
	}
	f, err := scaling.Create(filepath.Join(b.TempDir(), "bench.dbl"), &scaling.Options{Capacity: uint64(n), ErrorRate: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for range 100_000 { // untimed, as in the C and Python benchmarks
		f.Contains([]byte("warm-up"))
	}
	t0 := time.Now()
	for i, k := range keys {
		if err := f.Add(k, uint64(i)+1); err != nil {
			b.Fatal(err)
		}
	}
	t1 := time.Now()
	found := 0
	for _, k := range keys {
		if f.Contains(k) {
			found++
		}
	}
	t2 := time.Now()
	if found != n {
		b.Fatalf("found %d of %d", found, n)
	}
	return float64(t1.Sub(t0).Nanoseconds()) / float64(n), float64(t2.Sub(t1).Nanoseconds()) / float64(n)
}

// benchRun runs a benchmark program that prints "add NS" and "check NS".
func benchRun(b *testing.B, cmd *exec.Cmd) (add, check float64) {
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			b.Fatalf("%s: %v\n%s", cmd, err, ee.Stderr)
		}
		b.Fatalf("%s: %v", cmd, err)
	}
	got := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var name string
		var v float64
		if _, err := fmt.Sscanf(sc.Text(), "%s %g", &name, &v); err == nil {
			got[name] = v
		}
	}
	a, okA := got["add"]
	c, okC := got["check"]
	if !okA || !okC {
		b.Fatalf("%s printed %q", cmd, out)
	}
	return a, c
}
