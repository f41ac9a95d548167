// Package legacy reads files written by the original C library, bitly/dablooms 0.9.1.
//
// The original keeps a scaling counting Bloom filter in one file: a 24-byte header (max_id,
// mem_seqnum, disk_seqnum, three uint64) followed by filters back to back. Each filter is a
// 16-byte header (uint64 first id it covers, uint32 count, uint32 pad) and 4-bit counters, two
// per byte, the even counter index in the high nibble. A single counting filter file is one
// such filter with no scaling header. Integers are little-endian: the original wrote its native
// byte order and ran on x86-64.
//
// The file stores no magic, version, parameters or checksum, so every reader must be told the
// capacity and error rate the file was created with. Layout reproduces the original's sizing
// bit for bit (see Layout), and the readers accept a file only if its size is exactly what those
// parameters imply; any other size is refused with ErrSizeMismatch.
//
// Files are opened read-only and read into memory. Unlike the original, which grew a file it
// failed to reopen, nothing here ever writes to, truncates or grows a file.
//
// Contains answers exactly as the original's check did: the key is hashed with MurmurHash3
// x64/128 (seed 0x97c29b3a), and a filter holds it when the k counters at the key's indices (see
// Index) are all non-zero. A scaling file holds it when any of its filters does.
//
// Stability: this package is low-level: it reads files of the original C
// dablooms 0.9.1 for scaling's import and for tests. Its API may change
// between releases, and CHANGELOG.md lists such changes; programs should
// use scaling.ImportDablooms.
package legacy
