package main

import (
	"math/rand/v2"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// shape20k is the counters of a 20,000-key store's filter; it fails the
// test unless that filter has the k = 8 the walks are written for.
func shape20k(t *testing.T) uint64 {
	t.Helper()
	counters, k, err := fileShape(20_000)
	if err != nil {
		t.Fatal(err)
	}
	if k != 8 || counters < 20_000*10 {
		t.Fatalf("a 20,000-key store's filter: %d counters, k = %d; the walks want k = 8", counters, k)
	}
	return counters
}

// TestFormatIsTheFilters checks the written-out walk against counting4's
// Contains over the same words, for keys that are present and absent.
func TestFormatIsTheFilters(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := newArrays(shape20k(t), 0.7, rng) // dense enough that some keys are found
	f, err := counting4.New(a.w, counting4.Blocked1024, uint64(len(a.w))*16, 8)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, k := range keys(50_000, rng) {
		want := f.Contains(header.HashKey(a.seed, k) + a.salt)
		if got := a.format(k); got != want {
			t.Fatalf("%q: format walk %v, counting4 %v", k, got, want)
		}
		if want {
			found++
		}
	}
	if found == 0 {
		t.Fatal("no key found at fill 0.7: the comparison tested only absent keys")
	}
}

// TestVariantDerivations: the variants that only move work (nomix+lat,
// touch) answer as the ones they change; the other derivations (nomix,
// cheap) answer differently from the format for some keys.
func TestVariantDerivations(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := newArrays(shape20k(t), 0.7, rng)
	differ := map[string]int{}
	for _, k := range keys(20_000, rng) {
		if a.nomix(k) != a.nomixLat(k) {
			t.Fatalf("%q: nomix and nomix+lat differ", k)
		}
		if a.touch(k) != a.format(k) {
			t.Fatalf("%q: touch and format differ", k)
		}
		if a.nomix(k) != a.format(k) {
			differ["nomix"]++
		}
		if a.cheap(k) != a.format(k) {
			differ["cheap"]++
		}
	}
	for _, v := range []string{"nomix", "cheap"} {
		if differ[v] == 0 {
			t.Errorf("%s answers exactly as the format: it is not another derivation", v)
		}
	}
}

// TestVariantsAndPick: -only runs exactly the variants it names, in the
// order they run without it; an unknown name is refused.
func TestVariantsAndPick(t *testing.T) {
	a := newArrays(4*counting4.BlockCounters1024, 0.4, rand.New(rand.NewPCG(9, 10)))
	vs := a.variants()
	names := variantNames()
	if len(vs) != len(names) || len(names) != 7 {
		t.Fatalf("%d variants, %d names; want 7", len(vs), len(names))
	}
	for i, v := range vs {
		if v.name != names[i] {
			t.Fatalf("variant %d is %q, names has %q", i, v.name, names[i])
		}
	}
	m, err := pick("blobnib,format")
	if err != nil {
		t.Fatal(err)
	}
	got := pickFrom(vs, m)
	if len(got) != 2 || got[0].name != "format" || got[1].name != "blobnib" {
		t.Fatalf("pick blobnib,format: got %v", got)
	}
	if m, err := pick(""); err != nil || len(pickFrom(vs, m)) != len(vs) {
		t.Fatalf("empty -only: %v, %d variants", err, len(pickFrom(vs, m)))
	}
	if _, err := pick("format,nope"); err == nil {
		t.Fatal("pick accepted an unknown variant")
	}
}
