package recover_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// store creates a flushed file of 1,000 keys ("key-0" … with ids 0 …) in a
// temporary directory; the caller removes the directory.
func store() (dir, path string) {
	dir, err := os.MkdirTemp("", "recover-example")
	if err != nil {
		log.Fatal(err)
	}
	path = filepath.Join(dir, "spam.dbl")
	f, err := scaling.Create(path, &scaling.Options{Capacity: 400, ErrorRate: 0.01})
	if err != nil {
		log.Fatal(err)
	}
	for i := range 1000 {
		if err := f.Add([]byte(fmt.Sprintf("key-%d", i)), uint64(i)); err != nil {
			log.Fatal(err)
		}
	}
	if err := f.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	return dir, path
}

// Verify reads a file, which other processes may be using, and reports
// its state; Report.Err turns a bad one into an error.
func ExampleVerify() {
	dir, path := store()
	defer os.RemoveAll(dir)

	r, err := recover.Verify(path)
	if err != nil {
		log.Fatal(err) // the file could not be read
	}
	fmt.Println(r.State, len(r.Filters), "filters", r.Err())
	// Output: clean 2 filters <nil>
}

// Repair after a crash: it ends what dead writers left in flight and marks
// the file clean, keeping the original as path+".bak"; a file with nothing
// to repair is left alone (Report.Backup is then ""). Filters it cannot make exact are listed in
// NeedsRebuild: call Rebuild with the application's source of truth.
func ExampleRepair() {
	dir, path := store()
	defer os.RemoveAll(dir)

	r, err := recover.RepairContext(context.Background(), path, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.State, r.NeedsRebuild)
	// Output: clean []
}

// Compact rebuilds a long chain into one filter from the application's
// source of truth, while other processes keep the file open (they move to
// the compacted file).
func ExampleCompact() {
	dir, path := store()
	defer os.RemoveAll(dir)

	src := func(first, last uint64, add func(key []byte, id uint64) error) error {
		for i := first; i <= min(last, 999); i++ {
			if err := add([]byte(fmt.Sprintf("key-%d", i)), i); err != nil {
				return err
			}
		}
		return nil
	}
	rep, err := recover.CompactContext(context.Background(), path, src, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rep.FiltersBefore, "->", rep.FiltersAfter, "filter,", rep.Keys, "keys")
	// Output: 2 -> 1 filter, 1000 keys
}

// Backup copies a file that other processes keep open; Hold lets it hold
// their writes for one copy (at most that long) when they never pause.
// Restore puts a backup back, moving the processes that have the file open.
func ExampleBackup() {
	dir, path := store()
	defer os.RemoveAll(dir)

	dst := filepath.Join(dir, "spam.backup.dbl")
	rep, err := recover.Backup(context.Background(), path, dst, &recover.BackupOptions{Wait: time.Second, Hold: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	r, err := recover.Verify(dst)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.State, rep.MemSeqnum == rep.DiskSeqnum)
	if _, err := recover.Restore(context.Background(), dst, path, nil); err != nil {
		log.Fatal(err)
	}
	// Output: clean true
}
