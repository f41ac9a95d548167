//go:build !unix

package childproc

import (
	"errors"
	"os"
)

// MapShm returns errors.ErrUnsupported off Unix: the multi-process tests
// need MAP_SHARED mappings, and the library itself maps files on Linux only
// (mmapfile). It exists so that the packages whose tests import childproc
// build and vet for every platform.
func MapShm(path string, words int, create bool) (*Shm, error) {
	return nil, &os.PathError{Op: "map shared", Path: path, Err: errors.ErrUnsupported}
}

// Close closes the file.
func (s *Shm) Close() {
	if s.f != nil {
		s.f.Close()
	}
}
