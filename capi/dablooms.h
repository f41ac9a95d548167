/*
 * dablooms.h: the C API of dablooms for Go (libdablooms.so, built from ./capi
 * with go build -buildmode=c-shared). It declares the public functions of the
 * original bitly/dablooms 0.9.1 header with the same names, argument types
 * and return values, so a program written against the original compiles
 * against this header and links against this library unchanged.
 *
 * Differences from the original (see capi/README.md):
 *   - scaling_bloom_t and counting_bloom_t are opaque: a program that read
 *     their fields (bloom->header->mem_seqnum ...) must call the functions.
 *     The original's bitmap_* helpers are not part of this library.
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

#ifdef __cplusplus
extern "C" {
#endif

/* "0.9.1+go": the original's API version, implemented by this library. */
const char *dablooms_version(void);

/* A persistent, scalable, counting Bloom filter in one file. */
typedef struct dablooms_scaling_handle scaling_bloom_t;

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
typedef struct dablooms_counting_handle counting_bloom_t;

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
#endif
