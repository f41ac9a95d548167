package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dablooms/dablooms/header"
	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
)

// userError is a library error said in the words of a user: msg names the
// file once and says what happened; err is the library's error, kept for
// errors.Is (the exit code and the hints go by it).
type userError struct {
	msg string
	err error
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.err }

// explain rewrites an error of the library about the file at path into
// words a user understands, naming the file once: the library's messages
// name packages ("mmapfile: file exists"), system calls ("statfs ...") and
// options of the Go API ("open with AllowUnclean"). An error it does not
// know, or one already explained, is returned as it is.
func explain(path string, err error) error {
	if err == nil {
		return nil
	}
	var ue *userError
	if errors.As(err, &ue) {
		return err
	}
	var se *scaling.StateError
	var ce *scaling.CorruptionError
	var msg string
	switch {
	case errors.As(err, &se):
		msg = fmt.Sprintf("%s is %s (%s): it must be repaired before it can be written", path, se.Condition, se.Detail)
	case errors.Is(err, scaling.ErrFull):
		msg = fmt.Sprintf("%s is full: its chain of filters has reached the most it can hold, and the newest filter is full. "+
			"Make room by retiring old filters ('dabloomsctl retire %s --before ID'), or compact it into one filter "+
			"('dabloomsctl compact %s --from KEYS'), or create a new file with a larger --capacity (or --growth) and add the keys to it "+
			"('dabloomsctl inspect' shows the filter limit)", path, path, path)
	case errors.Is(err, scaling.ErrInvalidID):
		// "dablooms: invalid id: id N is above 2^63-1"
		detail := strings.TrimPrefix(err.Error(), scaling.ErrInvalidID.Error()+": ")
		msg = detail + ", the largest id a key can have"
	case errors.Is(err, scaling.ErrExists):
		msg = fmt.Sprintf("%s already exists", path)
	case errors.Is(err, recover.ErrNotRegular):
		if st, serr := os.Stat(path); serr == nil && st.IsDir() {
			msg = fmt.Sprintf("%s is a directory, not a dablooms file", path)
		} else {
			msg = fmt.Sprintf("%s is not a regular file (a dablooms file must be one)", path)
		}
	case errors.Is(err, scaling.ErrBusy):
		msg = fmt.Sprintf("%s is in use by another process", path)
	case errors.Is(err, scaling.ErrLockTimeout):
		// The library says what held the lock, after its sentinel.
		detail := err.Error()
		if i := strings.Index(detail, scaling.ErrLockTimeout.Error()); i >= 0 {
			detail = strings.TrimPrefix(detail[i+len(scaling.ErrLockTimeout.Error()):], ": ")
		} else {
			detail = ""
		}
		switch {
		case strings.Contains(detail, path):
			msg = "timed out waiting for a lock: " + detail
		case detail != "":
			msg = fmt.Sprintf("timed out waiting for a lock on %s: %s", path, detail)
		default:
			msg = fmt.Sprintf("timed out waiting for a lock on %s that another process holds", path)
		}
	case errors.Is(err, scaling.ErrNoSlot):
		msg = fmt.Sprintf("%s has no free writer slot", path)
	case errors.Is(err, scaling.ErrNetworkFS):
		msg = fmt.Sprintf("%s is on a network file system, where the locks dablooms files need do not work", path)
	case errors.Is(err, fs.ErrNotExist):
		if dir := filepath.Dir(path); !exists(path) && !exists(dir) {
			msg = fmt.Sprintf("cannot use %s: the directory %s does not exist", path, dir)
		} else {
			msg = fmt.Sprintf("%s does not exist", path)
		}
	case errors.Is(err, fs.ErrPermission):
		msg = fmt.Sprintf("permission denied on %s (or its directory)", path)
	case errors.Is(err, scaling.ErrNotDablooms):
		if startsWithMagic(path) {
			msg = fmt.Sprintf("%s is a damaged dablooms file (%s): 'dabloomsctl verify %s' says what can be done", path, reason(err), path)
		} else {
			msg = fmt.Sprintf("%s is not a dablooms file", path)
		}
	case errors.Is(err, scaling.ErrVersion):
		msg = fmt.Sprintf("%s is a dablooms file this version cannot read: %s", path, reason(err))
	case errors.As(err, &ce), isCorruption(err):
		msg = fmt.Sprintf("%s is a damaged dablooms file (%s): 'dabloomsctl verify %s' says what can be done", path, reason(err), path)
	default:
		return err
	}
	return &userError{msg: msg, err: err}
}

// reason is what a corruption error says about the bytes, without the
// path and sentinel that wrap it.
func reason(err error) string {
	var ce *scaling.CorruptionError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startsWithMagic says whether the file at path begins with the dablooms
// magic: a file that does but cannot be read is a damaged dablooms file
// (cut short, say), not some other file.
func startsWithMagic(path string) bool {
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	var b [len(header.Magic)]byte
	if _, err := io.ReadFull(fh, b[:]); err != nil {
		return false
	}
	return b == header.Magic
}
