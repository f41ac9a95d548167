package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dablooms/dablooms/scaling"
)

// TestBulkStopsAtFailure: when a key of add --from fails (an id above
// 2^63-1, at line 5000, in the second batch of 4096), the keys before it
// are added and none after it: neither the rest of its batch nor any
// batch read after it (a change that reads ahead while a batch is applied
// must keep this).
func TestBulkStopsAtFailure(t *testing.T) {
	for _, excl := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "exclusive"}[excl], func(t *testing.T) { bulkStopsAtFailure(t, excl) })
	}
}

func bulkStopsAtFailure(t *testing.T, excl bool) {
	path := filepath.Join(t.TempDir(), "p.dbl")
	mustCreate(t, path, "--capacity", "100000", "--error-rate", "0.01")
	var in strings.Builder
	for i := 1; i <= 20000; i++ {
		id := uint64(i)
		if i == 5000 {
			id = 1 << 63
		}
		fmt.Fprintf(&in, "k%d\t%d\n", i, id)
	}
	args := []string{"add", path, "--from", "-", "--json"}
	if excl {
		args = append(args, "--exclusive")
	}
	r := cli(t, in.String(), args...)
	if r.code != exitFail || !strings.Contains(r.stderr, "<stdin>:5000: ") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	var res bulkJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Processed != 4999 || res.Changed != 4999 || res.Items != 4999 || res.MemSeqnum != 4999 {
		t.Errorf("summary %+v, want 4999 keys processed, changed and counted", res)
	}
	// (Items would count a key added after the failure; these show which.)
	for _, k := range []string{"k4999", "k5001", "k8193", "k20000"} {
		c := cli(t, "", "contains", path, k)
		if want := fmt.Sprintf("%s\t%v\n", k, k == "k4999"); c.code != 0 || c.stdout != want {
			t.Errorf("contains %s: exit %d %q, want %q", k, c.code, c.stdout, want)
		}
	}
}

// BenchmarkBulkAdd: add --from of 1M KEY<TAB>ID lines into a store
// created for them, flush included, per line (the store is created
// outside the timer; the directory is $TMPDIR: use a tmpfs).
func BenchmarkBulkAdd(b *testing.B) {
	const n = 1 << 20
	dir := b.TempDir()
	lines := filepath.Join(dir, "lines.txt")
	if err := os.WriteFile(lines, benchLines(n), 0o644); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "b.dbl")
	var cpu time.Duration // the process's user+sys time in the adds
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		os.Remove(path)
		if r := run(context.Background(), []string{"create", path, "--capacity", fmt.Sprint(n), "--error-rate", "0.01"}, nil, io.Discard, io.Discard); r != 0 {
			b.Fatal("create failed")
		}
		b.StartTimer()
		start := cpuTime()
		if r := run(context.Background(), []string{"add", "--quiet", "--from", lines, path}, nil, io.Discard, io.Discard); r != 0 {
			b.Fatal("add failed")
		}
		cpu += cpuTime() - start
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/line")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/n, "cpu-ns/line")
}

// add --exclusive holds the file as its only writer while it runs: a
// writer beside it waits, and is told so when its lock timeout runs out;
// lookups go on. (The library's TestExclusive* check the protocol.)
func TestAddExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.dbl")
	mustCreate(t, path, "--capacity", "100000", "--error-rate", "0.01")
	if r := cli(t, "a\t1\nb\t2\n", "add", path, "--from", "-", "--exclusive"); r.code != 0 {
		t.Fatalf("add --exclusive: exit %d: %s", r.code, r.stderr)
	}
	f, err := scaling.Open(path, &scaling.OpenOptions{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r := cli(t, "", "contains", path, "a", "b"); r.code != 0 || r.stdout != "a\ttrue\nb\ttrue\n" {
		t.Fatalf("contains beside an exclusive writer: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	r := cli(t, "", "add", path, "c", "--id", "3", "--lock-timeout", "200ms")
	if r.code == 0 || !strings.Contains(r.stderr, "an exclusive writer") {
		t.Fatalf("add beside an exclusive writer: exit %d, stderr %q; want a lock timeout", r.code, r.stderr)
	}
}

// When a batch fails, the run reports its key alone, even if the reading
// went on past it while the batch was applied (add --from reads the next
// batch meanwhile): here line 4200, early in the second batch, cannot be
// parsed, and the reading gets there long before the first batch reaches
// its failing key at line 4000; a run that applied each batch before
// reading on would never have read line 4200.
func TestBulkFailureHidesLaterLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.dbl")
	mustCreate(t, path, "--capacity", "100000", "--error-rate", "0.01")
	var in strings.Builder
	for i := 1; i <= 12000; i++ {
		switch i {
		case 4000:
			fmt.Fprintf(&in, "k%d\t%d\n", i, uint64(1)<<63)
		case 4200:
			fmt.Fprintf(&in, "k%d\tnot-a-number\n", i)
		default:
			fmt.Fprintf(&in, "k%d\t%d\n", i, i)
		}
	}
	for range 5 {
		r := cli(t, in.String(), "add", path, "--from", "-", "--exclusive")
		if r.code != exitFail || !strings.Contains(r.stderr, "<stdin>:4000:") {
			t.Fatalf("exit %d, stderr %s; want the failure at line 4000", r.code, r.stderr)
		}
		if strings.Contains(r.stderr, ":4200") || strings.Contains(r.stderr, "line 4200") {
			t.Fatalf("stderr names line 4200, which a run stopping at line 4000 never reads:\n%s", r.stderr)
		}
	}
}

// TestExclusiveBatch: an exclusive add takes a 64th of the newest
// filter's capacity per batch, from 4096 to 4M lines.
func TestExclusiveBatch(t *testing.T) {
	for _, tc := range []struct {
		capacity uint64
		want     int
	}{{1000, maxBatch}, {1e6, 15625}, {1e8, 1562500}, {1e9, 1 << 22}} {
		if got := exclusiveBatch(tc.capacity); got != tc.want {
			t.Errorf("exclusiveBatch(%d) = %d, want %d", tc.capacity, got, tc.want)
		}
	}
}

// TestAddExclusiveLongBatches: an exclusive add --from into a large store
// goes in batches longer than 4096 lines (swept by AddBatch), past a
// growth, and every key is there with the count the command reports.
func TestAddExclusiveLongBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.dbl")
	mustCreate(t, path, "--capacity", "1000000", "--error-rate", "0.01")
	const n = 1_100_000 // past the first filter's capacity
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "key-%d\t%d\n", i, i+1)
	}
	if r := cli(t, in.String(), "add", path, "--from", "-", "--exclusive", "--json"); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf(`"processed": %d`, n)) {
		t.Fatalf("add --exclusive: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	f, err := scaling.Open(path, &scaling.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	out := make([]bool, n)
	f.ContainsBatch(keys, out)
	for i, ok := range out {
		if !ok {
			t.Fatalf("key %q is missing", keys[i])
		}
	}
	st := f.Stats()
	if len(st.Filters) != 2 || st.Count != n {
		t.Fatalf("%d filters holding %d keys, want 2 holding %d", len(st.Filters), st.Count, n)
	}
}

// TestBatchByteCap: a batch is applied once its keys hold maxBytes bytes,
// however few lines it has, with and without the applier goroutine; every
// key gets added. The control, with no byte cap (as before), applies
// nothing in 25 lines.
func TestBatchByteCap(t *testing.T) {
	for _, tc := range []struct {
		name          string
		piped         bool
		maxBytes      int
		applied, left int // batches applied (or handed over) and keys left after 25 keys
	}{
		{"direct", false, 1000, 2, 5},
		{"piped", true, 1000, 2, 5},
		{"control-no-cap", false, maxBatchBytes, 0, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := scaling.NewMemory(&scaling.Options{Capacity: 1000})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b := &bulk{a: &app{}, f: f, op: "add", o: &bulkOpts{}, batch: new(batch), maxBatch: maxBatch, maxBytes: tc.maxBytes}
			if tc.piped {
				b.startApplier()
			}
			key := func(i int) []byte { return fmt.Appendf(nil, "%0100d", i) } // 100 bytes
			for i := range 25 {
				if err := b.collect(item{key: key(i), id: uint64(i + 1), hasID: true, line: i + 1}); err != nil {
					t.Fatal(err)
				}
			}
			var applied int
			if tc.piped {
				applied = b.pipe.sent // (b.res is the applier's until applyRest)
			} else {
				applied = int(b.res.Processed) / 10
			}
			if applied != tc.applied || len(b.batch.ids) != tc.left {
				t.Fatalf("after 25 keys of 100 bytes: %d batch(es) applied, %d key(s) waiting; want %d and %d", applied, len(b.batch.ids), tc.applied, tc.left)
			}
			if err := b.applyRest(nil); err != nil {
				t.Fatal(err)
			}
			for i := range 25 {
				if !f.Contains(key(i)) {
					t.Fatalf("key %d is missing", i)
				}
			}
			if b.res.Processed != 25 {
				t.Fatalf("processed %d keys, want 25", b.res.Processed)
			}
		})
	}
}
