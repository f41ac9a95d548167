package main

import (
	"math/rand/v2"
	"testing"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/header"
)

// TestFormatIsTheFilters checks the written-out walk against counting4's
// Contains over the same words, for keys that are present and absent.
func TestFormatIsTheFilters(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := newArrays(20_000, 0.7, rng) // dense enough that some keys are found
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

// TestNomixVariants: the variants that only move work (nomix+lat, touch)
// answer as the ones they change, and nomix differs from the format.
func TestNomixVariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := newArrays(20_000, 0.7, rng)
	differ := 0
	for _, k := range keys(20_000, rng) {
		if a.nomix(k) != a.nomixLat(k) {
			t.Fatalf("%q: nomix and nomix+lat differ", k)
		}
		if a.touch(k) != a.format(k) {
			t.Fatalf("%q: touch and format differ", k)
		}
		if a.nomix(k) != a.format(k) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("nomix answers exactly as the format: it is not another derivation")
	}
}
