package recover

import (
	"fmt"
	"io"
	"os"
)

// image is the bytes of a store: a file, or a byte slice in the tests.
type image interface {
	io.ReaderAt
	Size() int64
}

// fileImage reads a file of a size fixed when it was opened.
type fileImage struct {
	f    *os.File
	size int64
}

func (fi *fileImage) ReadAt(p []byte, off int64) (int, error) { return fi.f.ReadAt(p, off) }
func (fi *fileImage) Size() int64                             { return fi.size }

// bytesImage is an image in memory.
type bytesImage []byte

func (b bytesImage) Size() int64 { return int64(len(b)) }

func (b bytesImage) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt writes within the slice; it never grows it.
func (b bytesImage) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(b)) {
		return 0, fmt.Errorf("recover: write [%d, +%d) outside a %d-byte image", off, len(p), len(b))
	}
	return copy(b[off:], p), nil
}

// full is an image whose reads are readFull's: a short one fails, saying
// where (for the word reads of header's views).
type full struct{ image }

func (r full) ReadAt(p []byte, off int64) (int, error) {
	if err := readFull(r.image, p, off); err != nil {
		return 0, err
	}
	return len(p), nil
}

// readFull reads exactly len(p) bytes at off.
func readFull(img image, p []byte, off int64) error {
	n, err := img.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading %d bytes at %d: %w", len(p), off, err)
}
