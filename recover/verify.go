package recover

import (
	"fmt"
	"os"
	"syscall"
)

// Verify deep-checks the file at path and reports its state and every
// finding. It only reads: it never changes a byte of the file (it opens it
// read-only and takes no lock) and never panics. The error is for operational
// failures only (the file cannot be opened or read, or is not a regular
// file); a bad file gives a Report with State Damaged or Corrupt.
func Verify(path string) (*Report, error) { return VerifyWithOptions(path, nil) }

// VerifyWithOptions is Verify with options (a boot identity for tests).
func VerifyWithOptions(path string, o *VerifyOptions) (*Report, error) {
	var opt VerifyOptions
	if o != nil {
		opt = *o
	}
	f, size, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a, err := analyze(&fileImage{f: f, size: size}, currentBoot(opt.BootID), func(off int64) bool { return heldByOther(f, off) })
	if err != nil {
		return nil, fmt.Errorf("recover: verify %s: %w", path, err)
	}
	return a.report(path), nil
}

// openRegular opens path without blocking (a FIFO would block a plain open)
// and refuses anything but a regular file. It returns the file's size.
func openRegular(path string, flag int) (*os.File, int64, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, 0, err
	} else if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%w: %s is a %v", ErrNotRegular, path, typeName(st.Mode()))
	}
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%w: %s is a %v", ErrNotRegular, path, typeName(st.Mode()))
	}
	return f, st.Size(), nil
}

func typeName(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	}
	return m.Type().String()
}
