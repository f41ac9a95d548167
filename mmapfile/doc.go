// Package mmapfile maps a file shared (MAP_SHARED) into memory, or provides a
// heap-backed region with the same interface. It knows nothing of filters.
//
// A File reserves address space beyond the file's size when it maps it, so
// the file can grow (with fallocate, so a full disk is an error now and never
// a SIGBUS later) without remapping: slices handed out stay valid for the
// life of the File. Sync makes a byte range durable with msync(MS_SYNC) and
// fsync. Create refuses to overwrite an existing file unless asked and fsyncs
// the directory. Byte-range locks are Linux open-file-description locks
// (F_OFD_SETLK), which belong to the open file and are released by the kernel
// when the process dies, and are not dropped when another descriptor of the
// same file is closed (as classic POSIX locks are).
//
// Detach closes the file but leaves the addresses readable (zero pages) for
// readers that cannot be waited for; the address range is returned by Close,
// which the caller runs once those readers are gone (scaling does it from a
// garbage-collector cleanup). A mapping that fails for want of address
// space is retried after a collection, so such pending ranges never make an
// Open fail.
//
// Two options trade memory and write-back for fewer page faults (see
// Options): Populate pre-faults the file Create makes, writable, in one
// madvise (MADV_POPULATE_WRITE) instead of a fault per page at its first
// store; HugePages asks for transparent huge pages over the mapping
// (MADV_HUGEPAGE), which file systems with large folios honour. Both are
// off by default, and both fall back silently where the kernel has not
// got them.
//
// Memory mapped from a file is invisible to the race detector; Heap gives the
// same interface over ordinary memory so concurrency tests can run under -race.
//
// Files need Linux. Every system call and Linux fact is in a _linux.go file
// (sys_linux.go, lock_linux.go, fs_linux.go, bootid_linux.go); on any other
// system Open, Create and the locks fail with ErrUnsupported, while Heap
// works everywhere.
//
// Stability: this package is low-level, the mapping under scaling's files.
// Its API may change between releases as scaling needs, and CHANGELOG.md
// lists such changes; programs should use scaling.
package mmapfile
