package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestQuickstart(t *testing.T) {
	var out strings.Builder
	if err := run(&out, config{words: 6000, capacity: 2000, rate: 0.01}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	t.Log("\n" + s)
	for _, want := range []string{
		"added 6000 words with ids 1..6000",
		"removed every fifth word: 1200 words",
		"mem_seqnum  7200  modifications completed (6000 adds + 1200 removes)",
		"disk_seqnum 7200  = mem_seqnum",
		"condition   clean",
		"mem_seqnum  7200, disk_seqnum 7200",
		"true positives    4800",
		"false negatives      0",
		"no false negatives",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Two filters: 2,000 then 4,000.
	if n := len(regexp.MustCompile(`(?m)^    filter \d+:`).FindAllString(s, -1)); n != 2 {
		t.Errorf("%d filters listed, want 2", n)
	}
	m := regexp.MustCompile(`false-positive rate ([\d.]+)%`).FindStringSubmatch(s)
	if m == nil {
		t.Fatal("no false-positive rate")
	}
	if fpr, err := strconv.ParseFloat(m[1], 64); err != nil || fpr > 1.0 {
		t.Errorf("false-positive rate %s%% above the 1%% bound", m[1])
	}
	tn := regexp.MustCompile(`true negatives +(\d+)`).FindStringSubmatch(s)
	fp := regexp.MustCompile(`false positives +(\d+) +removed`).FindStringSubmatch(s)
	if tn == nil || fp == nil || atoi(tn[1])+atoi(fp[1]) != 1200 {
		t.Errorf("true negatives + false positives among removed words should be 1200: %v %v", tn, fp)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func TestWordList(t *testing.T) {
	words := strings.Fields(wordList)
	if len(words) != 30000 {
		t.Fatalf("%d words, want 30000", len(words))
	}
	seen := map[string]bool{}
	for _, w := range words {
		if seen[w] {
			t.Fatalf("duplicate word %q", w)
		}
		seen[w] = true
	}
}
