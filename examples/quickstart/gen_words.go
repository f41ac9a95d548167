//go:build ignore

// gen_words writes words.txt: distinct pronounceable pseudo-words made from
// syllables by a fixed-seed generator, so the list is the same on every run
// and carries no licence. Run: go run gen_words.go > words.txt
package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
)

func main() {
	onsets := []string{"b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "ch", "cl", "dr", "fl", "gr", "pl", "sh", "st", "th", "tr"}
	vowels := []string{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"}
	codas := []string{"", "", "", "n", "r", "s", "t", "l", "m", "ck", "nd", "st"}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for len(seen) < 30000 {
		word := ""
		for n := 1 + r.IntN(3); n > 0; n-- {
			word += onsets[r.IntN(len(onsets))] + vowels[r.IntN(len(vowels))] + codas[r.IntN(len(codas))]
		}
		if len(word) < 3 || seen[word] {
			continue
		}
		seen[word] = true
		fmt.Fprintln(w, word)
	}
}
