//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dablooms/dablooms/header"
)

// e2e drives the built binary.
type e2e struct {
	t   *testing.T
	bin string
	dir string
}

func buildBinary(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the binary with")
	}
	bin := filepath.Join(t.TempDir(), "dabloomsctl")
	cmd := exec.Command(gobin, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func (e *e2e) path(name string) string { return filepath.Join(e.dir, name) }

// run runs the binary to completion.
func (e *e2e) run(stdin string, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// must runs the binary and requires an exit code.
func (e *e2e) must(code int, stdin string, args ...string) result {
	e.t.Helper()
	r := e.run(stdin, args...)
	if r.code != code {
		e.t.Fatalf("dabloomsctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// jsonOf runs a --json command and decodes its stdout.
func (e *e2e) jsonOf(code int, args ...string) map[string]any {
	e.t.Helper()
	r := e.must(code, "", append(args, "--json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		e.t.Fatalf("%v: stdout is not JSON: %v\n%s", args, err, r.stdout)
	}
	return m
}

// checkPresent asks for keys and requires every answer to be true.
func (e *e2e) checkPresent(file string, keys []string) {
	e.t.Helper()
	if len(keys) == 0 {
		return
	}
	r := e.must(0, strings.Join(keys, "\n")+"\n", "contains", file, "--from", "-")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(keys) {
		e.t.Fatalf("contains: %d answers for %d keys", len(lines), len(keys))
	}
	bad := 0
	for i, l := range lines {
		if l != keys[i]+"\ttrue" {
			if bad < 5 {
				e.t.Errorf("false negative: %q", l)
			}
			bad++
		}
	}
	if bad > 0 {
		e.t.Fatalf("%d false negatives among %d keys", bad, len(keys))
	}
}

// num and str return field name of a JSON object, failing the test if it
// is not a number or not a string.
func num(t *testing.T, m map[string]any, name string) float64 {
	t.Helper()
	return field[float64](t, m, name)
}

func str(t *testing.T, m map[string]any, name string) string {
	t.Helper()
	return field[string](t, m, name)
}

func field[T float64 | string](t *testing.T, m map[string]any, name string) T {
	t.Helper()
	v, ok := m[name].(T)
	if !ok {
		t.Fatalf("field %q: %v (%T), want a %T", name, m[name], m[name], v)
	}
	return v
}

// TestEndToEnd builds the binary and runs a session: create, bulk add of
// 100,000 lines, contains, inspect --json checked field by field; then
// writers killed (SIGKILL) in the middle of an operation and between two
// operations, verify, repair, verify; and a writer stopped by SIGINT.
func TestEndToEnd(t *testing.T) {
	e := &e2e{t: t, bin: buildBinary(t), dir: t.TempDir()}
	f := e.path("e2e.dbl")
	const n = 100_000
	var lines strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&lines, "key-%d\t%d\n", i, i)
	}
	if err := os.WriteFile(e.path("lines.tsv"), []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	e.must(0, "", "create", f, "--capacity", "40000", "--error-rate", "0.01", "--seed", "42")
	start := time.Now()
	r := e.must(0, "", "add", f, "--from", e.path("lines.tsv"))
	t.Logf("bulk add of %d lines: %v", n, time.Since(start))
	if strings.Contains(r.stderr, "\r") {
		t.Error("a progress bar was drawn on a stderr that is not a terminal")
	}
	if !regexp.MustCompile(`added 100000 key\(s\) of 100000 processed in [0-9.]+s \([0-9.]+[kM]? keys/s\); flushed`).MatchString(r.stderr) {
		t.Errorf("summary: %s", r.stderr)
	}
	var sample, absent []string
	for i := 1; i <= n; i += 97 {
		sample = append(sample, "key-"+strconv.Itoa(i))
		absent = append(absent, "absent-"+strconv.Itoa(i))
	}
	e.checkPresent(f, sample)
	r = e.must(0, strings.Join(absent, "\n")+"\n", "contains", f, "--from", "-")
	if fp := strings.Count(r.stdout, "\ttrue\n"); fp > len(absent)/20 {
		t.Errorf("%d false positives among %d absent keys", fp, len(absent))
	}

	// inspect --json, field by field.
	m := e.jsonOf(0, "inspect", f)
	if str(t, m, "schema") != "dabloomsctl.inspect/v1" || str(t, m, "path") != f ||
		str(t, m, "condition") != "clean" || str(t, m, "state") != "clean" || str(t, m, "phase") != "clean" {
		t.Errorf("inspect: %v", m)
	}
	if num(t, m, "exit_code") != 0 || num(t, m, "mem_seqnum") != n || num(t, m, "disk_seqnum") != n || num(t, m, "items") != n {
		t.Errorf("inspect numbers: %v", m)
	}
	st, _ := os.Stat(f)
	if num(t, m, "file_size") != float64(st.Size()) {
		t.Errorf("file_size %v, the file has %d bytes", m["file_size"], st.Size())
	}
	if fpr := num(t, m, "estimated_fpr"); !(fpr > 0 && fpr < 0.01) {
		t.Errorf("estimated_fpr %v", fpr)
	}
	format := m["format"].(map[string]any)
	if num(t, format, "major") != 1 || num(t, format, "minor") != header.VersionMinor || num(t, format, "generation") < 1 {
		t.Errorf("format %v", format)
	}
	params := m["params"].(map[string]any)
	if num(t, params, "capacity") != 40000 || num(t, params, "error_rate") != 0.01 || num(t, params, "growth_factor") != 2 ||
		num(t, params, "tightening_ratio") != 0.8 || str(t, params, "seed") != "0x2a" || str(t, params, "hash") != "xxh64" ||
		str(t, params, "layout") != "blocked1024" {
		t.Errorf("params %v", params)
	}
	if _, err := time.Parse(time.RFC3339, str(t, m, "created")); err != nil {
		t.Errorf("created: %v", err)
	}
	filters := m["filters"].([]any)
	if len(filters) != 2 { // 40,000 + 80,000
		t.Fatalf("%d filters, want 2", len(filters))
	}
	var items, next float64 = 0, 1
	for i, x := range filters {
		fl := x.(map[string]any)
		if num(t, fl, "index") != float64(i) || num(t, fl, "first_id") != next || num(t, fl, "saturated") != 0 || fl["dirty"] != false {
			t.Errorf("filter %d: %v", i, fl)
		}
		c := 40000 * float64(int(1)<<i)
		if num(t, fl, "capacity") != c || num(t, fl, "fill") != num(t, fl, "items")/c || num(t, fl, "k") < 1 {
			t.Errorf("filter %d: %v", i, fl)
		}
		if num(t, fl, "estimated_fpr") > num(t, fl, "error_target") {
			t.Errorf("filter %d: estimated FPR above its target: %v", i, fl)
		}
		items += num(t, fl, "items")
		next = num(t, fl, "last_id") + 1
	}
	if items != n || next != n+1 {
		t.Errorf("filters hold %v items up to id %v", items, next-1)
	}
	if num(t, m, "live_slots") != 0 || num(t, m, "dead_slots") != 0 || len(m["findings"].([]any)) != 0 {
		t.Errorf("slots/findings: %v %v %v", m["live_slots"], m["dead_slots"], m["findings"])
	}

	// Writers killed with SIGKILL: between two operations (the file stays
	// trustworthy: "unflushed", exit 0) and in the middle of one (verify
	// says "interrupted", exit 3). Repair makes it clean either way, and
	// every add that completed is still there.
	id := uint64(n)
	for attempt, mode := range []string{"between", "mid", "between", "mid"} {
		before := num(t, e.jsonOf(0, "verify", f), "mem_seqnum")
		w := e.startWriter(f, attempt, id, "--no-flush")
		w.waitCheckpoint(t, 1)
		w.kill(t, mode)
		t.Logf("attempt %d (%s): killed after checkpoint %d", attempt, mode, w.checkpoint.Load())

		v := e.jsonOf(map[string]int{"between": 0, "mid": 3}[mode], "verify", f)
		want := map[string]string{"between": "unflushed", "mid": "interrupted"}[mode]
		if got := str(t, v, "state"); got != want {
			t.Fatalf("verify after a kill %s operations: state %q, want %q", mode, got, want)
		}
		if mode == "between" {
			if r := e.must(0, "", "verify", f); !strings.Contains(r.stdout, ": unflushed") {
				t.Errorf("verify does not say unflushed:\n%s", r.stdout)
			}
		} else {
			dead := 0
			for _, s := range v["slots"].([]any) {
				sl := s.(map[string]any)
				if str(t, sl, "status") == "dead" && len(sl["in_flight"].([]any)) > 0 {
					dead++
				}
			}
			if dead != 1 {
				t.Errorf("verify: %d dead slots with an operation in flight, want 1: %v", dead, v["slots"])
			}
		}
		os.Remove(f + ".bak")
		e.must(0, "", "repair", f)
		if _, err := os.Stat(f + ".bak"); err != nil {
			t.Errorf("repair kept no backup: %v", err)
		}
		after := e.jsonOf(0, "verify", f)
		if str(t, after, "state") != "clean" {
			t.Fatalf("after repair: %v", after["state"])
		}
		done := uint64(num(t, after, "mem_seqnum") - before)
		cp := uint64(w.checkpoint.Load())
		if done < cp || done > cp+w.every+1 {
			t.Errorf("%d adds completed by the killed writer, but its last checkpoint was %d", done, cp)
		}
		var keys []string
		for i := uint64(0); i < done; i++ {
			keys = append(keys, w.key(i))
		}
		e.checkPresent(f, append(keys, sample[:100]...))
		id += 10_000_000
	}

	// backup while a writer keeps adding, with pauses: the copy is clean and
	// holds every key added before the backup began.
	w := e.startPacedWriter(f, 7, id, 20*time.Millisecond)
	w.waitCheckpoint(t, 1)
	cp := uint64(w.checkpoint.Load())
	copyPath := e.path("backup.dbl")
	r = e.must(0, "", "backup", f, copyPath, "--wait", "30s")
	t.Logf("backup during writes: %s", strings.TrimSpace(r.stderr))
	if b := e.jsonOf(0, "verify", copyPath); str(t, b, "state") != "clean" || num(t, b, "mem_seqnum") != num(t, b, "disk_seqnum") {
		t.Errorf("the backup is %v, mem %v disk %v", b["state"], b["mem_seqnum"], b["disk_seqnum"])
	}
	keys := sample[:100]
	for i := uint64(0); i < cp; i++ {
		keys = append(keys, w.key(i))
	}
	e.checkPresent(copyPath, keys)
	w.cmd.Process.Signal(os.Interrupt)
	w.wait()
	id += 10_000_000
	// A writer that never pauses: backup either finds a quiet moment or
	// says it found none; it never leaves a torn copy.
	w = e.startWriter(f, 8, id)
	w.waitCheckpoint(t, 1)
	os.Remove(copyPath)
	r = e.run("", "backup", f, copyPath, "--wait", "300ms")
	t.Logf("backup during constant writes: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	switch {
	case r.code == 0:
		if b := e.jsonOf(0, "verify", copyPath); str(t, b, "state") != "clean" {
			t.Errorf("the backup is %v", b["state"])
		}
	case r.code == 1 && strings.Contains(r.stderr, "no quiet moment"):
		if _, err := os.Stat(copyPath); err == nil {
			t.Error("a failed backup left DEST behind")
		}
	default:
		t.Errorf("backup during constant writes: exit %d: %s", r.code, r.stderr)
	}
	w.cmd.Process.Signal(os.Interrupt)
	w.wait()
	id += 10_000_000
	e.must(0, "", "verify", f)

	// Ctrl-C: SIGINT stops the writer between two operations; it flushes,
	// closes and exits 1, and the file is clean.
	w = e.startWriter(f, 9, id)
	w.waitCheckpoint(t, 2)
	w.cmd.Process.Signal(os.Interrupt)
	err := w.wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(w.stderr.String(), "interrupted after") {
		t.Fatalf("after SIGINT: %v\n%s", err, w.stderr.String())
	}
	v := e.jsonOf(0, "verify", f)
	if str(t, v, "state") != "clean" {
		t.Errorf("after SIGINT the file is %v, want clean", v["state"])
	}
	keys = nil
	for i := uint64(0); i < uint64(w.checkpoint.Load()); i++ {
		keys = append(keys, w.key(i))
	}
	e.checkPresent(f, keys)
}

// writer is a running "add --from -" fed with endless lines.
type writer struct {
	cmd        *exec.Cmd
	prefix     string
	every      uint64
	checkpoint atomic.Int64
	stderr     bytes.Buffer
	done       chan struct{}
	path       string
}

func (w *writer) key(i uint64) string { return w.prefix + strconv.FormatUint(i, 10) }

func (e *e2e) startWriter(path string, attempt int, firstID uint64, extra ...string) *writer {
	return e.startPacedWriter(path, attempt, firstID, 0, extra...)
}

// startPacedWriter starts a writer; with pace > 0 its input comes in chunks
// of 200 lines with a pause of pace after each, so it has quiet moments.
func (e *e2e) startPacedWriter(path string, attempt int, firstID uint64, pace time.Duration, extra ...string) *writer {
	e.t.Helper()
	w := &writer{prefix: fmt.Sprintf("run%d-", attempt), every: 1000, done: make(chan struct{}), path: path}
	w.cmd = exec.Command(e.bin, append([]string{"add", path, "--from", "-", "--checkpoint", strconv.FormatUint(w.every, 10)}, extra...)...)
	stdin, err := w.cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { // endless input until the writer dies
		bw := bufio.NewWriterSize(stdin, 1<<16)
		for i := uint64(0); ; i++ {
			if _, err := fmt.Fprintf(bw, "%s\t%d\n", w.key(i), firstID+i); err != nil {
				return
			}
			if pace > 0 && i%200 == 199 {
				if bw.Flush() != nil {
					return
				}
				time.Sleep(pace)
			}
		}
	}()
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if c, ok := strings.CutPrefix(line, "checkpoint "); ok {
				v, _ := strconv.ParseInt(c, 10, 64)
				w.checkpoint.Store(v)
				continue
			}
			w.stderr.WriteString(line + "\n")
		}
	}()
	return w
}

func (w *writer) waitCheckpoint(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for w.checkpoint.Load() < n*int64(w.every) {
		if time.Now().After(deadline) {
			w.cmd.Process.Kill()
			t.Fatalf("no checkpoint %d from the writer: %s", n*int64(w.every), w.stderr.String())
		}
		time.Sleep(time.Millisecond)
	}
}

func (w *writer) wait() error {
	// Read stderr to the end before Wait, which closes the pipe (os/exec:
	// calling Wait before the reads complete loses what is left in it).
	<-w.done
	return w.cmd.Wait()
}

// kill stops the writer (SIGSTOP) until it is caught in the wanted place,
// "mid" an operation or "between" two, as the file's slot records and
// metadata copies show, and then kills it with SIGKILL. A growth runs
// with no record in flight: stopped between the two metadata copies'
// writes, the writer is inside it, not between two operations (a kill
// there leaves the copies different, which verify reports as damage
// until a read-write Open or a Flush finishes the write:
// TestMetaWriteCutShort in scaling).
func (w *writer) kill(t *testing.T, mode string) {
	t.Helper()
	pid := w.cmd.Process.Pid
	for try := 0; ; try++ {
		if try == 20000 {
			w.cmd.Process.Kill()
			w.wait()
			t.Fatalf("could not catch the writer %s operations", mode)
		}
		syscall.Kill(pid, syscall.SIGSTOP)
		waitStopped(t, pid)
		b := readHead(t, w.path)
		inFlight := slotsInFlight(b)
		if (mode == "mid" && inFlight) || (mode == "between" && !inFlight && metaSettled(b)) {
			syscall.Kill(pid, syscall.SIGKILL)
			w.wait()
			return
		}
		syscall.Kill(pid, syscall.SIGCONT)
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	}
}

// waitStopped waits until every thread of pid is stopped.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(tasks) > 0
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				continue // the thread exited
			}
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i < 0 || i+2 >= len(s) || (s[i+2] != 'T' && s[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop", pid)
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// readHead reads the file's first header.DataOffset bytes (through the
// page cache, which the writer's mapping shares).
func readHead(t *testing.T, path string) []byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b := make([]byte, header.DataOffset)
	if _, err := fh.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// metaSettled reports whether both metadata copies of head b decode to the
// same directory (their generations aside): no metadata write is cut
// halfway.
func metaSettled(b []byte) bool {
	ma, ea := header.Decode(b[header.MetaAOffset:], header.MetaAOffset, -1)
	mb, eb := header.Decode(b[header.MetaBOffset:], header.MetaBOffset, -1)
	if ea != nil || eb != nil {
		return false
	}
	return ma.SameDirectory(mb)
}

// slotsInFlight reports whether any writer slot of head b records an
// operation in flight (as backup checks its copy).
func slotsInFlight(b []byte) bool {
	for s := 0; s < header.NumSlots; s++ {
		for r := 0; r < header.RecordsPerSlot; r++ {
			op := b[header.RecordOffset(s, r)+header.RecOpOffset:]
			if header.OpWord(binary.LittleEndian.Uint64(op)).InFlight() {
				return true
			}
		}
	}
	return false
}
