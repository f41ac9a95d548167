package scaling

import (
	"testing"
	"time"
)

// Stats' Flushes, DirtySince and Writers: what an operator's metrics read.
func TestStatsFlushesDirtySinceWriters(t *testing.T) {
	f, path := createFile(t, &Options{Capacity: 1000, ErrorRate: 0.01})
	st := f.Stats()
	if st.Writers != 1 {
		t.Errorf("one writer open: Writers = %d, want 1", st.Writers)
	}
	if !st.DirtySince.IsZero() {
		t.Errorf("a new file is clean: DirtySince = %v, want zero", st.DirtySince)
	}
	flushes := st.Flushes

	before := time.Now()
	addRange(t, f, 0, 10)
	st = f.Stats()
	if st.DirtySince.IsZero() || st.DirtySince.Before(before.Add(-time.Second)) {
		t.Errorf("after an Add: DirtySince = %v, want about %v", st.DirtySince, before)
	}

	g := openFile(t, path, &OpenOptions{})
	r := openFile(t, path, &OpenOptions{ReadOnly: true})
	if n := f.Stats().Writers; n != 2 {
		t.Errorf("two writers and a reader open: Writers = %d, want 2", n)
	}
	if n := r.Stats().Writers; n != 2 {
		t.Errorf("the reader sees Writers = %d, want 2", n)
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	st = f.Stats()
	if st.Flushes != flushes+1 {
		t.Errorf("after another handle's Flush: Flushes = %d, want %d", st.Flushes, flushes+1)
	}
	if !st.DirtySince.IsZero() {
		t.Errorf("after a Flush: DirtySince = %v, want zero", st.DirtySince)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if n := r.Stats().Writers; n != 1 {
		t.Errorf("after one writer closed: Writers = %d, want 1", n)
	}
}
