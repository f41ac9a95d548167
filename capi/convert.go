//go:build cgo

package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
)

// The stores behind the two handle types.
//
// A scaling handle is a scaling.Filter with the library's defaults (growth
// factor 2, tightening ratio 0.8): the original appended filters of equal
// capacity with tightening 0.5, but the chain here holds at most 64 filters,
// and doubling keeps that out of reach.
//
// A counting handle is a store of exactly one filter. scaling.Options has no
// "at most one filter" field, but the chain ends where the next filter's
// error target underflows (Stats().FilterLimit; Add then returns ErrFull):
// with the smallest positive tightening ratio the first filter's target is
// ErrorRate·(1−r) = ErrorRate and the second's is zero, so the store keeps
// the error bound of its one filter and Add fails with ErrFull once that
// filter holds its capacity. The original's counting filter instead took
// any number of adds and let its error rate climb.
const countingTightening = math.SmallestNonzeroFloat64

func checkParams(capacity uint64, errorRate float64) error {
	switch {
	case capacity == 0:
		return errors.New("capacity must be at least 1")
	case !(errorRate > 0 && errorRate < 1):
		return fmt.Errorf("error rate %v: must be a number with 0 < error_rate < 1", errorRate)
	}
	return nil
}

// createStore makes a new file at path, replacing one that is there, as the
// original's O_TRUNC did. Unlike the original it refuses (ErrBusy) while any
// handle in any process has the old file open: scaling.Create would replace
// it and move those handles to the new, empty file, which a C program that
// keeps the old handle does not expect of new_scaling_bloom.
func createStore(path string, capacity uint64, errorRate float64, k kind) (*scaling.Filter, error) {
	if err := checkParams(capacity, errorRate); err != nil {
		return nil, err
	}
	if old, err := mmapfile.OpenRegular(path, os.O_RDONLY, 0); err == nil {
		held, herr := mmapfile.HeldFile(old, header.OpenLockOffset)
		old.Close()
		if herr == nil && held {
			return nil, fmt.Errorf("%w: %s is open in another handle or process; close it first", scaling.ErrBusy, path)
		}
	}
	o := &scaling.Options{Capacity: capacity, ErrorRate: errorRate, Overwrite: true}
	if k == kindCounting {
		o.GrowthFactor, o.TighteningRatio = 1, countingTightening
	}
	f, err := scaling.Create(path, o)
	if err != nil {
		return nil, err
	}
	if k == kindCounting {
		if n := f.Stats().FilterLimit; n != 1 {
			f.Close()
			return nil, fmt.Errorf("error rate %v: a one-filter store cannot be made with it (the chain could reach %d filters)", errorRate, n)
		}
	}
	return f, nil
}

// openStore opens an existing file. A file of this library carries its own
// parameters: capacity and errorRate are not used. A file the original wrote
// (no magic: ErrNotDablooms) is converted in place, see convertInPlace; the
// returned notice says so.
func openStore(path string, capacity uint64, errorRate float64, k kind) (f *scaling.Filter, notice string, err error) {
	f, err = scaling.Open(path, nil)
	if err == nil || !errors.Is(err, scaling.ErrNotDablooms) {
		return f, "", err
	}
	return convertInPlace(path, capacity, errorRate, k)
}

// convertInPlace converts a dablooms 0.9.1 file at path with
// scaling.ImportDablooms (or ImportDabloomsCounting), keeps the original
// under a new name (a hard link, so no byte of it is rewritten) and renames
// the converted file over path, so the next open of path, in any process,
// opens it natively. A lock on the original file serialises processes that
// convert the same file at once; the second finds path converted.
//
// An original file left mid-operation (mem_seqnum 0) is not converted: its
// counters cannot be trusted, and the converted file would be refused as
// dirty until rebuilt; it is left as it is.
func convertInPlace(path string, capacity uint64, errorRate float64, k kind) (*scaling.Filter, string, error) {
	orig, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer orig.Close() // releases the lock
	if err := flock(orig, scaling.DefaultLockTimeout); err != nil {
		return nil, "", fmt.Errorf("locking %s to convert it: %w", path, err)
	}
	if same, err := samePath(orig, path); err != nil {
		return nil, "", err
	} else if !same {
		// Converted (renamed over) by another handle while we waited.
		f, err := scaling.Open(path, nil)
		return f, "", err
	}
	// Or converted before we opened it, after our first Open failed.
	if f, err := scaling.Open(path, nil); err == nil || !errors.Is(err, scaling.ErrNotDablooms) {
		return f, "", err
	}
	tmp := fmt.Sprintf("%s.converting-%d", path, os.Getpid())
	rep, err := importOriginal(tmp, path, capacity, errorRate, k)
	if err != nil {
		return nil, "", err
	}
	backup, err := installConverted(tmp, path)
	if err != nil {
		return nil, "", err
	}
	var notice string
	if k == kindCounting {
		notice = fmt.Sprintf("converted %s from the dablooms 0.9.1 counting-filter format; the original file is kept as %s", path, backup)
	} else {
		notice = fmt.Sprintf("converted %s from the dablooms 0.9.1 format (filters %d, max id %d, mem_seqnum %d, disk_seqnum %d, %s); the original file is kept as %s",
			path, rep.Filters, rep.MaxID, rep.MemSeqnum, rep.DiskSeqnum, rep.State, backup)
	}
	fmt.Fprintln(os.Stderr, "dablooms: "+notice)
	f, err := scaling.Open(path, nil)
	return f, notice, err
}

// importOriginal converts the original's file at path into a new file tmp
// (removed again on failure), closed.
func importOriginal(tmp, path string, capacity uint64, errorRate float64, k kind) (*scaling.ImportReport, error) {
	var f *scaling.Filter
	var rep *scaling.ImportReport
	var err error
	o := &scaling.Options{Overwrite: true}
	if k == kindCounting {
		f, rep, err = scaling.ImportDabloomsCounting(tmp, path, capacity, errorRate, o)
	} else {
		f, rep, err = scaling.ImportDablooms(tmp, path, capacity, errorRate, o)
	}
	if err != nil {
		return nil, &conversionError{capacity: capacity, errorRate: errorRate, err: err}
	}
	err = f.Close()
	if err == nil && rep.State == scaling.Interrupted {
		err = fmt.Errorf("%s is a dablooms 0.9.1 file left mid-operation (mem_seqnum 0): its counters cannot be trusted; rebuild it (not converted, not changed)", path)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return rep, nil
}

// installConverted keeps the original at path as a backup (returned) and
// renames the converted file tmp over path, durably.
func installConverted(tmp, path string) (string, error) {
	backup, err := keepOriginal(path)
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		os.Remove(backup)
		return "", err
	}
	mmapfile.SyncDir(filepath.Dir(path)) // (as before: a failed directory sync is not reported)
	return backup, nil
}

// keepOriginal links the original file under a free name beside it.
func keepOriginal(path string) (string, error) {
	for i := 0; i < 100; i++ {
		name := path + ".dablooms-0.9.1"
		if i > 0 {
			name = fmt.Sprintf("%s.%d", name, i)
		}
		err := os.Link(path, name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("keeping the original file: %w", err)
		}
	}
	return "", fmt.Errorf("keeping the original file: %s.dablooms-0.9.1 and 99 numbered names exist", path)
}

// samePath reports whether path still names the file f has open.
func samePath(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}

// flock takes an exclusive flock on f, waiting at most timeout.
func flock(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return scaling.ErrLockTimeout
		}
		time.Sleep(5 * time.Millisecond)
	}
}
