//go:build cgo

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/dablooms/dablooms/mmapfile"
	"github.com/dablooms/dablooms/scaling"
)

// message says what err means to a program using the C API or pydablooms,
// in its words rather than the packages' ("mmapfile: file is in use"),
// naming the file at path once (path "" when the call has none). k is the
// kind of handle the call was made on (0: none).
//
// The library's sentinel errors are matched with errors.Is, most specific
// first; an error none matches keeps its own text, without the packages'
// "dablooms: ", "mmapfile: " and "legacy: " prefixes, followed by the file where the
// text does not name it.
func message(err error, path string, k kind) string {
	file := "the file"
	if path != "" {
		file = path
	}
	if s, ok := fileMessage(err, path, file); ok {
		return s
	}
	if s, ok := opMessage(err, file, k); ok {
		return s
	}
	s := plainText(err)
	if path != "" && !strings.Contains(s, path) {
		s += " (" + path + ")"
	}
	return s
}

// fileMessage is message for what is wrong with the file (file names
// it): missing, busy, damaged, another format.
func fileMessage(err error, path, file string) (string, bool) {
	var se *scaling.StateError
	var ce *scaling.CorruptionError
	var cv *conversionError
	switch {
	case errors.As(err, &cv):
		detail := plainText(cv.err)
		if path != "" {
			detail = strings.ReplaceAll(detail, path+": ", "")
		}
		return fmt.Sprintf("%s is not a dablooms file, nor one the original dablooms 0.9.1 wrote with capacity %d and error rate %v (%s)",
			file, cv.capacity, cv.errorRate, detail), true
	case errors.As(err, &se):
		return fmt.Sprintf("%s cannot be trusted until it is repaired: it is %s (%s); run 'dabloomsctl verify %s' to see why, then 'dabloomsctl repair' on it",
			file, se.Condition, se.Detail, file), true
	case errors.Is(err, scaling.ErrBusy):
		return file + " is open in another handle or process; close it first", true
	case errors.Is(err, scaling.ErrExists):
		return file + " already exists", true
	case errors.Is(err, scaling.ErrLockTimeout):
		return "gave up waiting for another handle or process to release its lock on " + file + " (a flush, a growth or a rewrite of the file); try again", true
	case errors.Is(err, fs.ErrNotExist):
		return file + " does not exist", true
	case errors.Is(err, fs.ErrPermission):
		return "no permission to read and write " + file, true
	case errors.Is(err, mmapfile.ErrNotRegular):
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return file + " is a directory, not a file", true
		}
		return file + " is not a regular file", true
	case errors.Is(err, scaling.ErrNetworkFS):
		return file + " is on a network file system, where the locks and shared mappings this library relies on are not safe", true
	case errors.Is(err, scaling.ErrVersion):
		return file + " has a format version this library cannot read (" + after(err, scaling.ErrVersion) + "); use a newer dablooms", true
	case errors.As(err, &ce):
		return fmt.Sprintf("%s is damaged: %s at offset %d: %s; 'dabloomsctl verify %s' says more, 'dabloomsctl repair' may mend it",
			file, ce.Field, ce.Offset, ce.Reason, file), true
	case errors.Is(err, scaling.ErrChecksum), errors.Is(err, scaling.ErrCorrupt):
		return file + " is damaged (" + plainText(err) + ")", true
	case errors.Is(err, scaling.ErrNotDablooms):
		return file + " is neither a dablooms file nor one the original dablooms 0.9.1 wrote", true
	}
	return "", false
}

// opMessage is message for why an operation failed (k: the filter's
// kind).
func opMessage(err error, file string, k kind) (string, bool) {
	var oe *scaling.OptionError
	switch {
	case errors.Is(err, scaling.ErrFull):
		if k == kindCounting {
			return "the counting filter is full: it holds as many items as its capacity; remove some before adding more", true
		}
		return file + " is full: its chain of filters has reached the most it can hold", true
	case errors.Is(err, scaling.ErrNotPresent):
		return "the key is not present in the filter for this id; nothing was removed", true
	case errors.Is(err, scaling.ErrAmbiguous):
		return "the key looks present in several filters whose id ranges hold this id; it was not removed, as removing it from the wrong one would remove other keys", true
	case errors.Is(err, scaling.ErrInvalidID):
		return "invalid id: " + after(err, scaling.ErrInvalidID) + ", the largest id this library stores", true
	case errors.Is(err, scaling.ErrNoSlot):
		return file + " has no free writer slot: 64 handles have it open, or writers that died left operations cut short ('dabloomsctl repair' rolls them back)", true
	case errors.Is(err, scaling.ErrSyncFailed):
		return "an earlier flush of " + file + " failed, so this handle can no longer make it durable; free the handle and open the file again", true
	case errors.Is(err, scaling.ErrReplaced):
		return file + " was replaced by a rewrite (a compaction or repair) and this handle could not open the new file: " + after(err, scaling.ErrReplaced), true
	case errors.Is(err, scaling.ErrReadOnly):
		return file + " is open read-only", true
	case errors.Is(err, scaling.ErrClosed):
		return "the handle's file is closed", true
	case errors.As(err, &oe):
		return fmt.Sprintf("%s = %v: %s", oe.Field, oe.Value, oe.Reason), true
	case errors.Is(err, syscall.ENOSPC):
		return "no space left on the device holding " + file, true
	case errors.Is(err, syscall.EIO):
		return "input/output error on " + file + " (" + plainText(err) + ")", true
	}
	return "", false
}

// plainText is err's text without the packages' prefixes.
func plainText(err error) string {
	s := err.Error()
	for _, p := range []string{"dablooms: ", "mmapfile: ", "legacy: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	return s
}

// after is what err says after sentinel's text (the detail a wrapping
// fmt.Errorf("%w: ...") added), or err's plain text if it does not start
// with it.
func after(err, sentinel error) string {
	s := err.Error()
	if rest, ok := strings.CutPrefix(s, sentinel.Error()+": "); ok {
		return rest
	}
	return plainText(err)
}

// conversionError: a file that is not this library's could not be read as
// one the original wrote, with the parameters the caller gave.
type conversionError struct {
	capacity  uint64
	errorRate float64
	err       error // why ImportDablooms refused it
}

func (e *conversionError) Error() string {
	return fmt.Sprintf("not a dablooms file; read as a dablooms 0.9.1 file with capacity %d and error rate %v: %v", e.capacity, e.errorRate, e.err)
}

func (e *conversionError) Unwrap() error { return e.err }
