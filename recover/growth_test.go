package recover_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dablooms/dablooms/counting4"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// TestVerifyDuringGrowth: Verify of a file that another handle keeps
// growing (capacity 4, growth 1: a new filter every few Adds) never reports
// a growth in progress as damage (issue 11, item 9).
func TestVerifyDuringGrowth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.dbl")
	run := 3 * time.Second
	if testing.Short() {
		run = time.Second
	}
	var done atomic.Bool
	var growths atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for round := 0; !done.Load(); round++ {
			// Each round grows a new file, made aside and renamed over the
			// path once whole (Verify of a file being created is not the
			// point here).
			tmp := path + ".new"
			f, err := scaling.Create(tmp, recover.Booted(&scaling.Options{Capacity: 4, GrowthFactor: 1, ErrorRate: 0.1, Layout: counting4.Blocked512, Seed: 9, Reserve: 1 << 28, Overwrite: true}, recover.TestBoot))
			if err == nil {
				err = os.Rename(tmp, path)
			}
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < 4*40; i++ {
				if err := f.Add([]byte(fmt.Sprint(round, "-", i)), uint64(i+1)); err != nil {
					break // the chain is at its end
				}
			}
			growths.Add(int64(len(f.Stats().Filters) - 1))
			f.Close()
		}
	}()
	deadline := time.Now().Add(run)
	verifies, bad := 0, 0
	for time.Now().Before(deadline) {
		r, err := recover.VerifyWithOptions(path, recover.Booted(&recover.VerifyOptions{}, recover.TestBoot))
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			t.Fatalf("Verify: %v", err)
		}
		verifies++
		if r.State >= recover.Damaged {
			bad++
			if bad <= 3 {
				recover.DumpReport(t, r)
			}
		}
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d verifies during %d growths", verifies, growths.Load())
	if bad > 0 {
		t.Fatalf("%d of %d verifies of a growing file reported damage", bad, verifies)
	}
}
