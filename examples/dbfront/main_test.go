package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestDBFront(t *testing.T) {
	var out strings.Builder
	if err := run(&out, config{links: 2000, lookups: 10000, metrics: "127.0.0.1:0"}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	t.Log("\n" + s)
	for _, want := range []string{
		"inserted 2000 spam links",
		"looked up 10000 URLs: 1000 spam,",
		"deleted 200 links",
		"flushed: condition clean, disk_seqnum 2200",
		"inserted 200 more links after the flush into filter 1",
		"Open refuses the filter",
		"file is dirty",
		"condition dirty, filters marked dirty: [1]",
		"state clean",
		"after the rebuild: condition clean, 0 of the 2000 links in the database are missing",
		"no false negatives",
		// /metrics, scraped: the filter's numbers after the rebuild.
		"dablooms_items{file=",
		"} 2000\n",
		`dablooms_condition{condition="clean",file=`,
		"dablooms_writers{file=",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	m := regexp.MustCompile(`(\d+) database queries, (\d+) saved by the filter`).FindStringSubmatch(s)
	if m == nil {
		t.Fatal("no query counts")
	}
	q, saved := atoi(m[1]), atoi(m[2])
	if q+saved != 10000 || saved < 8500 || q < 1000 {
		t.Errorf("%d queries and %d saved: want 1000 spam lookups plus a few false positives, 9000-ish saved", q, saved)
	}
	// The simulated crash must really have lost links, or the rebuild proves nothing.
	m = regexp.MustCompile(`(\d+) of the 2000 links in the database are missing from the filter\n`).FindStringSubmatch(s)
	if m == nil || atoi(m[1]) == 0 {
		t.Errorf("the crash lost no link: %v", m)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
