package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mapping returns the VmFlags and the Rss (in KiB) of the mapping of path
// in /proc/self/smaps.
func mapping(t *testing.T, path string) (flags string, rssKiB int) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, found := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		// A mapping's first line: "start-end perms offset dev inode [path]".
		if fs := strings.Fields(l); len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			in = len(fs) >= 6 && fs[len(fs)-1] == path
			found = found || in
		}
		if !in {
			continue
		}
		if v, ok := strings.CutPrefix(l, "Rss:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			rssKiB += n
		}
		if strings.HasPrefix(l, "VmFlags:") {
			flags += l
		}
	}
	if !found {
		t.Fatalf("%s is not mapped", path)
	}
	return flags, rssKiB
}

// canPopulate reports whether the kernel has MADV_POPULATE_WRITE (5.14),
// without which Populate does nothing.
func canPopulate(t *testing.T) bool {
	b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	return unix.Madvise(b, unix.MADV_POPULATE_WRITE) == nil
}

// TestRun runs the program at a small size with each option: every step
// of the table is there, and the store's mapping has the options asked
// for (hg in its flags with -huge; its pages in memory right after Create
// with -populate, and not without).
func TestRun(t *testing.T) {
	const n = 1_000_000 // a file of several 2 MiB pages
	for _, huge := range []bool{false, true} {
		for _, pop := range []bool{false, true} {
			t.Run(fmt.Sprintf("huge=%v,populate=%v", huge, pop), func(t *testing.T) {
				var out bytes.Buffer
				c := config{n: n, dir: t.TempDir(), sample: 1000, skip: "inspect", huge: huge, populate: pop}
				c.check = func(path string) {
					st, err := os.Stat(path)
					if err != nil {
						t.Fatal(err)
					}
					flags, rss := mapping(t, path)
					if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err == nil {
						if got := strings.Contains(flags+" ", " hg "); got != huge {
							t.Errorf("HugePages %v: the mapping's %q", huge, flags)
						}
					}
					// The data pages: all of them with Populate (on a
					// kernel that has MADV_POPULATE_WRITE); without, only
					// the few Create writes.
					if pages := st.Size() / 4096; canPopulate(t) && pop != (int64(rss)/4 > pages*9/10) {
						t.Errorf("Populate %v: %d KiB of the %d-page file in memory after Create", pop, rss, pages)
					}
				}
				if err := run(&out, c); err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{
					fmt.Sprintf("%d keys (capacity %d)", n, n), "| load (AddBatch of 15625) |", "| Flush |",
					"| Open (shared) |", "| Contains, present |", "| Contains, absent |",
					"| recover.Verify (Quick) |", "| recover.Verify |", "| recover.Backup |",
					"| recover.Compact (Capacity n) |",
				} {
					if !strings.Contains(out.String(), want) {
						t.Errorf("the output lacks %q:\n%s", want, out.String())
					}
				}
			})
		}
	}
}

// TestParseCount: -n takes 1e8, 100000000 and 100_000_000, and refuses
// what is not a whole positive number.
func TestParseCount(t *testing.T) {
	for s, want := range map[string]uint64{"1e8": 1e8, "100000000": 1e8, "100_000_000": 1e8, "2.5e3": 2500} {
		if got, err := parseCount(s); err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "-5", "1.5", "x", "1e13"} {
		if got, err := parseCount(s); err == nil {
			t.Errorf("parseCount(%q) = %d, want an error", s, got)
		}
	}
}

// TestRunMemory: -memory loads a store in memory and times the load and
// the lookups (every present key found), and nothing of a file.
func TestRunMemory(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, config{n: 100_000, dir: t.TempDir(), sample: 1000, memory: true}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"100000 keys (capacity 100000), in memory", "| load (AddBatch of 4096) |",
		"| Contains, present |", "| Contains, absent |"} {
		if !strings.Contains(s, want) {
			t.Errorf("the output lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"Flush", "Open", "Verify", "Backup"} {
		if strings.Contains(s, not) {
			t.Errorf("the output of a store in memory has %q:\n%s", not, s)
		}
	}
}
