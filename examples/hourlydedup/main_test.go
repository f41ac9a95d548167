package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestHourlyDedup runs the example as "go run" does and checks its report:
// every (item, hour) that had events was written exactly once, the ring
// retired filters and kept the file's size.
func TestHourlyDedup(t *testing.T) {
	var out strings.Builder
	if err := run(&out, defaultConfig); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	t.Log("\n" + s)
	for _, want := range []string{
		"events:          960000\n",
		"lost writes:     0 ",
		"written twice:   0 ",
		"check: ok: every (item, hour) that had events was written, none lost, none twice",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`writes done: +(\d+), for (\d+) \(item, hour\) pairs`).FindStringSubmatch(s)
	if m == nil || m[1] != m[2] {
		t.Errorf("writes done and pairs differ: %v", m)
	}
	if n := number(t, s, `filters retired: (\d+)`); n < 40 {
		t.Errorf("%d filters retired: the window did not slide", n)
	}
	if n := number(t, s, `chain length: +\d+ filters now, (\d+) at most`); n > 6 {
		t.Errorf("the chain reached %d filters", n)
	}
	// The file stops growing: the size at hour 8 is the size at the end.
	sizes := regexp.MustCompile(`file (\d+) KiB`).FindAllStringSubmatch(s, -1)
	if len(sizes) < 2 || sizes[0][1] != sizes[len(sizes)-1][1] {
		t.Errorf("file sizes over the run: %v", sizes)
	}
}

// TestHourlyDedupLoose: with a loose error rate the check counts the
// writes false positives skipped (it is not vacuous), and passes only
// because they are within that rate's bound.
func TestHourlyDedupLoose(t *testing.T) {
	cfg := defaultConfig
	cfg.hours, cfg.rate = 6, 0.05
	var out strings.Builder
	if err := run(&out, cfg); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	if n := number(t, s, `lost writes: +(\d+)`); n == 0 {
		t.Errorf("no write lost at error rate 0.05:\n%s", s)
	}
	if !strings.Contains(s, "check: ok within the bound:") || !strings.Contains(s, "written twice:   0 ") {
		t.Errorf("report:\n%s", s)
	}
}

func number(t *testing.T, s, re string) int {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("output lacks %s:\n%s", re, s)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
