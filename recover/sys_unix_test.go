//go:build unix

package recover

import "syscall"

// mkfifo makes a named pipe at path.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

// diskUsage is the size of the file at path and the bytes its blocks take.
func diskUsage(path string) (size, used int64, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, err
	}
	return st.Size, st.Blocks * 512, nil
}
