package legacy

import (
	"fmt"
	"io"
	"math"
	"os"
)

// readFile opens path read-only, lets check refuse its size before anything is read, and
// returns its content. A file that changes size while being read is refused.
func readFile(path string, check func(size uint64) error) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("legacy: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("legacy: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("legacy: %s is not a regular file", path)
	}
	if err := check(uint64(fi.Size())); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fi.Size() > math.MaxInt {
		return nil, fmt.Errorf("legacy: %s: file of %d bytes is too large to read", path, fi.Size())
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%w: %s: file shrank while being read: %v", ErrSizeMismatch, path, err)
	}
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return nil, fmt.Errorf("%w: %s: file grew while being read", ErrSizeMismatch, path)
	}
	return data, nil
}
