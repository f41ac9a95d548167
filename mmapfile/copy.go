package mmapfile

import (
	"io"
	"os"
)

// CopySparse copies the first size bytes of src to dst from offset 0, as
// pread and pwrite do (neither file's offset matters), and makes dst size
// bytes long. Where src has holes (blocks never written, or given back: a
// retired filter, a late-add index nobody used) dst gets holes too, so a
// copy takes no more disk than the original; on a file system that cannot
// tell holes from data (no SEEK_DATA) every byte is copied. dst must be
// empty (truncated to 0) so that its skipped ranges read as zeros.
func CopySparse(dst, src *os.File, size int64) error {
	return copySparse(dst, src, size)
}

// copyRange copies src's bytes [off, end) to the same offsets of dst.
func copyRange(dst, src *os.File, off, end int64) error {
	n, err := io.Copy(&offsetWriter{f: dst, off: off}, io.NewSectionReader(src, off, end-off))
	if err == nil && n != end-off {
		err = io.ErrUnexpectedEOF // src shrank while it was copied
	}
	return err
}

// offsetWriter writes sequentially with WriteAt from off.
type offsetWriter struct {
	f   *os.File
	off int64
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}
