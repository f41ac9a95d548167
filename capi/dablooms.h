/*
 * dablooms.h: the C API of dablooms for Go (libdablooms, built from ./capi
 * with go build -buildmode=c-shared or c-archive; "make -C capi install").
 * It declares every function of the original bitly/dablooms 0.9.1 header
 * with the same names, argument types and return values, and its structs
 * with the same layout and public fields, so a program written against the
 * original compiles against this header (or the original's) and links
 * against this library unchanged.
 *
 * Differences from the original (see capi/README.md):
 *   - The structs are snapshots the library keeps true: it rewrites their
 *     fields before every function that takes the handle returns. Writing
 *     them changes nothing in the file. fd is -1 and bitmap->array NULL:
 *     the file's descriptor and mapping are the library's own.
 *   - bitmap_flush() of a handle's bitmap flushes the file; the other
 *     bitmap_* functions refuse (-1, NULL) a handle's bitmap, whose counters
 *     are not at the original's offsets, and work on a bitmap the caller
 *     made with new_bitmap() over a descriptor of its own.
 *   - Every function may be called from several threads at once, on the
 *     same handle or on different ones.
 *   - Failures are reported, as the original's return conventions allow:
 *     NULL from the constructors, 0 from scaling_bloom_add/_remove, -1 from
 *     the counting functions, scaling_bloom_flush and free_*; the text is
 *     dablooms_last_error() of the calling thread.
 *   - scaling_bloom_remove refuses (returns 0) a key the filter for that id
 *     does not hold, instead of decrementing counters blindly.
 *   - Files are this library's format. *_from_file converts a file written
 *     by the original in place (the original is kept beside it, see
 *     dablooms_last_conversion()).
 */
#ifndef __BLOOM_H__
#define __BLOOM_H__
#define DABLOOMS_GO 1

#include <stdint.h>
#include <stdlib.h>

/* The original's structs, same layout and fields. */

/* 4-bit counters in a memory-mapped file. For a handle's bitmap: bytes is the
 * file's size, fd -1, array NULL. */
typedef struct {
    size_t bytes;
    int    fd;
    char  *array;
} bitmap_t;

/* id: the largest id the filter holds; count: its items (adds - removes). */
typedef struct {
    uint64_t id;
    uint32_t count;
    uint32_t _pad;
} counting_bloom_header_t;

/* One filter. capacity and error_rate: its own; offset: where its counters
 * start in the file; nfuncs: hash functions (k); size: counters;
 * counts_per_func: size / nfuncs; num_bytes: its bytes in the file;
 * hashes: NULL; bitmap: the file's (shared by the handle's filters). */
typedef struct {
    counting_bloom_header_t *header;
    unsigned int capacity;
    long offset;
    unsigned int counts_per_func;
    uint32_t *hashes;
    size_t nfuncs;
    size_t size;
    size_t num_bytes;
    double error_rate;
    bitmap_t *bitmap;
} counting_bloom_t;

/* max_id: the largest id added; disk_seqnum as scaling_bloom_disk_seqnum()
 * returns it; mem_seqnum as scaling_bloom_mem_seqnum() last counted it (the
 * constructors, flushes and seqnum functions count it), plus one for each
 * add or remove that succeeded through this handle since: equal to the
 * function's count while no other handle writes to the file (see
 * capi/README.md). */
typedef struct {
    uint64_t max_id;
    uint64_t mem_seqnum;
    uint64_t disk_seqnum;
} scaling_bloom_header_t;

/* A persistent, scalable, counting Bloom filter in one file. capacity and
 * error_rate: the file's parameters; num_blooms: filters in the chain, which
 * blooms[0 .. num_blooms-1] describe (oldest first); num_bytes: the file's
 * size; fd: -1. */
typedef struct {
    scaling_bloom_header_t *header;
    unsigned int capacity;
    unsigned int num_blooms;
    size_t num_bytes;
    double error_rate;
    int fd;
    counting_bloom_t **blooms;
    bitmap_t *bitmap;
} scaling_bloom_t;

/* The library's own cgo build includes this header for the types only. */
#ifndef DABLOOMS_TYPES_ONLY

#ifdef __cplusplus
extern "C" {
#endif

/* "0.9.1+go (...)": the original's API version, implemented by this library,
 * then this build's module version, VCS revision, Go version and the file
 * format versions it writes and reads. */
const char *dablooms_version(void);

/* Creates (or replaces) filename. NULL on failure (bad parameters, the old
 * file open elsewhere, I/O). */
scaling_bloom_t *new_scaling_bloom(unsigned int capacity, double error_rate, const char *filename);
/* Opens filename. capacity and error_rate are used only for a file written by
 * the original, which is converted in place; this library's files carry
 * their own parameters. NULL on failure. */
scaling_bloom_t *new_scaling_bloom_from_file(unsigned int capacity, double error_rate, const char *filename);
/* Closes the handle. 0, or -1 if bloom is not a live handle. NULL is a no-op. */
int free_scaling_bloom(scaling_bloom_t *bloom);
/* 1 added, 0 failed (id above 2^63-1, the chain full, I/O). */
int scaling_bloom_add(scaling_bloom_t *bloom, const char *s, size_t len, uint64_t id);
/* 1 removed, 0 not removed: the filter for id does not hold s, or s looks
 * present in several filters whose id ranges hold id. */
int scaling_bloom_remove(scaling_bloom_t *bloom, const char *s, size_t len, uint64_t id);
/* 1 maybe present, 0 absent; -1 (true in a condition) for an invalid handle. */
int scaling_bloom_check(scaling_bloom_t *bloom, const char *s, size_t len);
/* Makes the file durable (msync and fsync); 0, or -1 on failure. */
int scaling_bloom_flush(scaling_bloom_t *bloom);
/* Completed modifications; 0 while one is in flight or was interrupted. */
uint64_t scaling_bloom_mem_seqnum(scaling_bloom_t *bloom);
/* mem_seqnum at the last flush that found the file quiet; 0 once changed. */
uint64_t scaling_bloom_disk_seqnum(scaling_bloom_t *bloom);

/* One counting Bloom filter in one file: a store of exactly one filter.
 * Adds fail (-1) once it holds capacity items; the original took more and
 * let its error rate climb. */

counting_bloom_t *new_counting_bloom(unsigned int capacity, double error_rate, const char *filename);
counting_bloom_t *new_counting_bloom_from_file(unsigned int capacity, double error_rate, const char *filename);
/* 0, or -1 if bloom is not a live handle. NULL is a no-op. */
int free_counting_bloom(counting_bloom_t *bloom);
/* 0 added, -1 failed (the filter is full, I/O). */
int counting_bloom_add(counting_bloom_t *bloom, const char *s, size_t len);
/* 0 removed, -1 not removed (the filter does not hold s). */
int counting_bloom_remove(counting_bloom_t *bloom, const char *s, size_t len);
/* 1 maybe present, 0 absent; -1 for an invalid handle. */
int counting_bloom_check(counting_bloom_t *bloom, const char *s, size_t len);

/* The original's bitmap functions.
 * On a bitmap the caller made with new_bitmap(fd, bytes) (fd open for reading
 * and writing; the file grows to bytes if shorter) they do what the
 * original's did: index counts 4-bit counters from byte offset (two a byte,
 * even index in the high nibble), increment and decrement return 0 or -1 (at
 * 15, at 0, out of range), check returns the counter (0-15) or -1 out of
 * range, flush msyncs the mapping (0 or -1), resize maps new_size bytes
 * (NULL on failure, the bitmap then freed), and free_bitmap unmaps it and
 * closes fd.
 * On a handle's bitmap (bloom->bitmap): bitmap_flush is scaling_bloom_flush;
 * increment, decrement and check return -1 and resize NULL (the handle's
 * counters are not at the original's offsets: use the handle's functions),
 * and free_bitmap does nothing (free_*_bloom frees it). */
bitmap_t *bitmap_resize(bitmap_t *bitmap, size_t old_size, size_t new_size);
bitmap_t *new_bitmap(int fd, size_t bytes);
int bitmap_increment(bitmap_t *bitmap, unsigned int index, long offset);
int bitmap_decrement(bitmap_t *bitmap, unsigned int index, long offset);
int bitmap_check(bitmap_t *bitmap, unsigned int index, long offset);
int bitmap_flush(bitmap_t *bitmap);
void free_bitmap(bitmap_t *bitmap);

/* Additions of this library. */

/* The text of the last failure of a dablooms call on the calling thread
 * ("" if none yet). Valid until that thread's next failing call. */
const char *dablooms_last_error(void);
/* After new_scaling_bloom_from_file or new_counting_bloom_from_file on the
 * calling thread: what was converted from the original's format and where
 * the original file was kept, or NULL if that call converted nothing. The
 * same text is printed on stderr. */
const char *dablooms_last_conversion(void);

#ifdef __cplusplus
}
#endif
#endif /* DABLOOMS_TYPES_ONLY */
#endif
