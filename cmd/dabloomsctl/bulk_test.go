package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBulkStopsAtFailure: when a key of add --from fails (an id above
// 2^63-1, at line 5000, in the second batch of 4096), the keys before it
// are added and none after it: neither the rest of its batch nor any
// batch read after it (a change that reads ahead while a batch is applied
// must keep this).
func TestBulkStopsAtFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.dbl")
	if r := cli(t, "", "create", path, "--capacity", "100000", "--error-rate", "0.01"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	var in strings.Builder
	for i := 1; i <= 20000; i++ {
		id := uint64(i)
		if i == 5000 {
			id = 1 << 63
		}
		fmt.Fprintf(&in, "k%d\t%d\n", i, id)
	}
	r := cli(t, in.String(), "add", path, "--from", "-", "--json")
	if r.code != exitFail || !strings.Contains(r.stderr, "line 5000") {
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

// cpuTime is the user+sys time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
