package mmapfile

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func copySparse(dst, src *os.File, size int64) error {
	fd := int(src.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO):
			off = size // a hole from off to the end
			continue
		case errors.Is(err, unix.EINVAL) && off == 0:
			// No SEEK_DATA on this file system: copy every byte.
			if err := copyRange(dst, src, 0, size); err != nil {
				return err
			}
			return dst.Truncate(size)
		case err != nil:
			return fmt.Errorf("finding data in %s: %w", src.Name(), err)
		}
		if data >= size {
			break
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("finding a hole in %s: %w", src.Name(), err)
		}
		end := min(hole, size)
		if err := copyRange(dst, src, data, end); err != nil {
			return err
		}
		off = end
	}
	return dst.Truncate(size) // (the holes at the end, if any)
}
