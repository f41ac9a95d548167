package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

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
		st, serr := os.Stat(path)
		switch {
		case serr == nil && st.IsDir():
			msg = fmt.Sprintf("%s is a directory, not a dablooms file", path)
		case serr == nil && st.Mode()&fs.ModeNamedPipe != 0:
			msg = fmt.Sprintf("%s is a named pipe (FIFO), not a regular file: a dablooms file must be one", path)
		case serr == nil && st.Mode()&fs.ModeDevice != 0:
			msg = fmt.Sprintf("%s is a device, not a regular file: a dablooms file must be one", path)
		case serr == nil && st.Mode()&fs.ModeSocket != 0:
			msg = fmt.Sprintf("%s is a socket, not a regular file: a dablooms file must be one", path)
		default:
			msg = fmt.Sprintf("%s is not a regular file (a dablooms file must be one)", path)
		}
	case errors.Is(err, recover.ErrUnrepairable):
		// Neither metadata copy can be used: not a dablooms file at all,
		// or one damaged beyond what repair can work from.
		if startsWithMagic(path) {
			msg = fmt.Sprintf("%s is a dablooms file whose two metadata copies are both unusable: repair cannot work from it; restore a backup, or create the file anew and add the keys again", path)
		} else {
			msg = notDablooms(path)
		}
	case errors.Is(err, scaling.ErrBusy):
		msg = fmt.Sprintf("%s is in use by another process", path)
		if detail := afterSentinel(err, scaling.ErrBusy); detail != "" {
			msg += ": " + roundDurations(strings.TrimPrefix(detail, path+": "))
		}
	case errors.Is(err, scaling.ErrLockTimeout):
		// The library says what held the lock, after its sentinel, and
		// for how long to the nanosecond: rounded here.
		detail := roundDurations(afterSentinel(err, scaling.ErrLockTimeout))
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
			msg = notDablooms(path)
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

// afterSentinel is what err says after sentinel's text ("" if it does
// not say it).
func afterSentinel(err, sentinel error) string {
	msg := err.Error()
	i := strings.Index(msg, sentinel.Error())
	if i < 0 {
		return ""
	}
	return strings.TrimPrefix(msg[i+len(sentinel.Error()):], ": ")
}

// goDuration matches a time.Duration as its String method writes it.
var goDuration = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|us|ms|s)\b`)

// roundDurations rounds the durations the library prints exactly
// ("for over 999.68371ms") to what a reader needs: milliseconds below a
// second, tenths of a second above ("1s", "2.5s").
func roundDurations(msg string) string {
	return goDuration.ReplaceAllStringFunc(msg, func(s string) string {
		d, err := time.ParseDuration(s)
		if err != nil {
			return s
		}
		switch {
		case d >= time.Second:
			d = d.Round(100 * time.Millisecond)
		case d >= time.Millisecond:
			d = d.Round(time.Millisecond)
		}
		return d.String()
	})
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

// notDablooms says that the file at path, which does not begin with the
// dablooms magic, is not a dablooms file (an empty one, say so).
func notDablooms(path string) string {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
		return fmt.Sprintf("%s is empty (0 bytes), not a dablooms file", path)
	}
	return fmt.Sprintf("%s is not a dablooms file", path)
}

// checkFile checks, before a command hands path to the library, that it
// names an existing regular file, and says what it is otherwise (missing,
// a directory, a named pipe, ...), in words, naming it once. It never
// opens the file: opening a named pipe would wait for a writer.
func checkFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return explain(path, err)
	}
	if !st.Mode().IsRegular() {
		return explain(path, recover.ErrNotRegular)
	}
	return nil
}

// startsWithMagic says whether the file at path begins with the dablooms
// magic: a file that does but cannot be read is a damaged dablooms file
// (cut short, say), not some other file. Only a regular file is opened (a
// named pipe would block until a writer came).
func startsWithMagic(path string) bool {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return false
	}
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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

// isPathError says whether err is about the file at path (an *fs.PathError
// naming it).
func isPathError(err error, path string) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Path == path
}

// unreadable says that the file at path, which verify or inspect found
// corrupt beyond reading, is not a dablooms file this version can read: in
// the words that fit it (empty, no magic, or a damaged one).
func unreadable(path string) string {
	if !startsWithMagic(path) {
		return notDablooms(path)
	}
	return fmt.Sprintf("%s is a dablooms file this version cannot read (the findings say why)", path)
}
