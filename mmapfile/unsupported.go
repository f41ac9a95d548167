//go:build !linux

package mmapfile

import (
	"fmt"
	"os"
	"runtime"
)

// Files need Linux: open-file-description locks, fallocate, the boot id in
// /proc. Elsewhere Open and Create fail at once with ErrUnsupported, and so
// does every lock; Heap regions (scaling's memory mode) work. The functions
// below stand in for the Linux ones (sys_linux.go, lock_linux.go,
// fs_linux.go, bootid_linux.go) and are never reached past unsupported.

func unsupported(path string) error {
	return fmt.Errorf("%w: %s on %s", ErrUnsupported, path, runtime.GOOS)
}

const oNonblock = 0

func setBlocking(*os.File) error                    { return ErrUnsupported }
func mapShared(*os.File, int, bool) ([]byte, error) { return nil, ErrUnsupported }
func isNoMemory(error) bool                         { return false }
func munmap([]byte) error                           { return ErrUnsupported }
func adviseRandom([]byte)                           {}
func adviseNormal([]byte)                           {}
func adviseHuge([]byte)                             {}
func populateWrite([]byte) error                    { return ErrUnsupported }
func msync([]byte) error                            { return ErrUnsupported }
func fdatasync(int) error                           { return ErrUnsupported }
func fallocate(int, int64, int64) error             { return ErrUnsupported }
func punchHole(int, int64, int64) error             { return ErrUnsupported }
func fileSize(int) (int64, error)                   { return 0, ErrUnsupported }
func sameInode(int, string) (bool, error)           { return false, ErrUnsupported }
func renameNoReplace(string, string) error          { return ErrUnsupported }
func replaceWithZeros([]byte) error                 { return ErrUnsupported }
func checkFS(string, bool) error                    { return ErrUnsupported }
func tryLock(int, int64, bool) error                { return ErrUnsupported }
func unlock(int, int64) error                       { return ErrUnsupported }
func heldElsewhere(int, int64) (bool, error)        { return false, ErrUnsupported }
func bootID() (string, error)                       { return "", ErrUnsupported }

func copySparse(dst, src *os.File, size int64) error {
	if err := copyRange(dst, src, 0, size); err != nil {
		return err
	}
	return dst.Truncate(size)
}
