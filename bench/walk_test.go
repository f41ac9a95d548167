package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestControls runs the two lookup controls through the harness: ours-walk
// must find every present key (checkRows counts false negatives) and
// blobloom-dense must answer like a Bloom filter.
func TestControls(t *testing.T) {
	const systems = "ours-walk,blobloom-dense"
	rep := runJSON(t, "-n", "20000", "-reps", "1", "-parallel", "2", "-systems", systems)
	checkRows(t, rep, systems, 2, true)
}

// TestOursWalkIsTheFormat checks ours-walk's written-out walk against the
// library on the same file: every added key found, and the same absent
// keys found as Contains finds. The negative control walks with another
// filter's salt, which must lose keys: a walk that ignored the file would
// not.
func TestOursWalkIsTheFormat(t *testing.T) {
	const n = 20_000
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			s, err := newOursWalk(buildConfig{n: n, dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			w := s.(*oursWalk)
			defer func() {
				if err := w.close(); err != nil {
					t.Error(err)
				}
			}()
			key := func(p string, i int) []byte { return []byte(fmt.Sprintf("%s%012d", p, i)) }
			for i := range n {
				if err := w.add(key("key-", i), uint64(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.prepare(); err != nil {
				t.Fatal(err)
			}
			if broken {
				w.salt++
			}
			missed := 0
			for i := range n {
				if !w.contains(key("key-", i)) {
					missed++
				}
			}
			differ, fp := 0, 0
			for i := range 4 * n {
				k := key("absent-", i)
				got := w.contains(k)
				if got != w.f.Contains(k) {
					differ++
				}
				if got {
					fp++
				}
			}
			if !broken && (missed != 0 || differ != 0) {
				t.Errorf("the walk missed %d of %d added keys and disagreed with Contains on %d absent keys", missed, n, differ)
			}
			if !broken && fp == 0 {
				t.Errorf("no false positive among %d absent keys: the absent keys were not asked", 4*n)
			}
			if broken && missed < n/2 {
				t.Errorf("negative control: a walk with the wrong salt missed only %d of %d keys", missed, n)
			}
		})
	}
}

// TestOursWalkRefusesOtherLayouts: the walk reads blocked1024 only.
func TestOursWalkRefusesOtherLayouts(t *testing.T) {
	_, err := newOursWalk(buildConfig{n: 10, dir: t.TempDir(), layout: "blocked512"})
	if err == nil || !strings.Contains(err.Error(), "blocked1024") {
		t.Fatalf("ours-walk on blocked512: err = %v", err)
	}
}
