package mmapfile

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Network file systems: each host has its own page cache, so atomic
// operations on a shared mapping do not reach other hosts.
var networkFS = map[int64]string{
	0x6969:     "nfs",
	0x517B:     "smb",
	0xFF534D42: "cifs",
	0xFE534D42: "smb2",
	0x65735546: "fuse",
	0x5346414F: "afs",
	0x73757245: "coda",
	0x00C36400: "ceph",
	0x01021997: "9p",
	0x47504653: "gpfs",
	0x0BD00BD0: "lustre",
}

func checkFS(path string, allow bool) error {
	if allow {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", path, err)
	}
	if name, ok := networkFS[int64(st.Type)]; ok {
		return fmt.Errorf("%w: %s is on %s; set AllowNetworkFS only if a single host uses it", ErrNetworkFS, path, name)
	}
	return nil
}
