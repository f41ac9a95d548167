/*
 * Test of libdablooms.so through dablooms.h, run by capi_test.go:
 *   capi_test WORKDIR ORIGDIR
 * WORKDIR is an empty scratch directory; ORIGDIR holds copies of the files
 * the original dablooms 0.9.1 wrote (../shared/testdata/dablooms-0.9.1).
 * Prints one line per failed check and exits 1 if any failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dablooms.h"

static int failures;
static int checks;
static pthread_mutex_t report = PTHREAD_MUTEX_INITIALIZER;

#define CHECK(cond, ...) do { \
	pthread_mutex_lock(&report); \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, " (last error: %s)\n", dablooms_last_error()); \
	} \
	pthread_mutex_unlock(&report); \
} while (0)

static const char *workdir, *origdir;

static char *path_in(const char *dir, const char *name) {
	static __thread char buf[8][4096];
	static __thread int next;
	char *p = buf[next++ % 8];
	snprintf(p, 4096, "%s/%s", dir, name);
	return p;
}

static int keyf(char *buf, size_t n, const char *prefix, long i) {
	return snprintf(buf, n, "%s%ld", prefix, i);
}

static int starts_with(const char *s, const char *prefix) {
	return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

static long file_size(const char *p) {
	struct stat st;
	return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static int copy_file(const char *from, const char *to) {
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char buf[8192];
	size_t n;
	if (in == NULL || out == NULL) return -1;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
	fclose(in);
	return fclose(out);
}

static void test_version_and_arguments(void) {
	const char *v = dablooms_version();
	CHECK(starts_with(v, "0.9.1"), "version %s", v ? v : "(null)");

	const char *p = path_in(workdir, "bad.dbl");
	CHECK(new_scaling_bloom(0, 0.01, p) == NULL, "capacity 0 accepted");
	CHECK(strstr(dablooms_last_error(), "capacity") != NULL, "error text %s", dablooms_last_error());
	CHECK(new_scaling_bloom(1000, 0.0, p) == NULL, "error rate 0 accepted");
	CHECK(new_scaling_bloom(1000, 1.0, p) == NULL, "error rate 1 accepted");
	CHECK(new_counting_bloom(0, 0.01, p) == NULL, "counting capacity 0 accepted");
	CHECK(new_scaling_bloom(1000, 0.01, NULL) == NULL, "NULL filename accepted");
	CHECK(new_scaling_bloom_from_file(1000, 0.01, path_in(workdir, "missing.dbl")) == NULL, "missing file opened");
	CHECK(starts_with(dablooms_last_error(), "new_scaling_bloom_from_file"), "error text %s", dablooms_last_error());
	CHECK(dablooms_last_conversion() == NULL, "a failed open reports a conversion");

	/* Handles the library never returned, NULL, and a double free. */
	scaling_bloom_t *bogus = (scaling_bloom_t *)&failures;
	CHECK(scaling_bloom_add(bogus, "k", 1, 1) == 0, "add on a bogus handle");
	CHECK(starts_with(dablooms_last_error(), "scaling_bloom_add"), "error text %s", dablooms_last_error());
	CHECK(scaling_bloom_remove(NULL, "k", 1, 1) == 0, "remove on NULL");
	CHECK(scaling_bloom_check(NULL, "k", 1) == -1, "check on NULL is not -1");
	CHECK(scaling_bloom_flush(NULL) == -1, "flush on NULL");
	CHECK(scaling_bloom_mem_seqnum(NULL) == 0, "mem_seqnum on NULL");
	CHECK(scaling_bloom_disk_seqnum(NULL) == 0, "disk_seqnum on NULL");
	CHECK(free_scaling_bloom(NULL) == 0, "free(NULL)");
	CHECK(free_counting_bloom(NULL) == 0, "free(NULL)");
	CHECK(free_scaling_bloom(bogus) == -1, "free of a bogus handle");
	CHECK(counting_bloom_add(NULL, "k", 1) == -1, "counting add on NULL");
	CHECK(counting_bloom_remove(NULL, "k", 1) == -1, "counting remove on NULL");
	CHECK(counting_bloom_check(NULL, "k", 1) == -1, "counting check on NULL");
}

static void test_scaling(void) {
	const char *p = path_in(workdir, "scaling.dbl");
	char k[64];
	long i, n = 3000, fp = 0, still = 0;

	scaling_bloom_t *b = new_scaling_bloom(1000, 0.01, p);
	CHECK(b != NULL, "new_scaling_bloom");
	if (b == NULL) return;
	uint64_t mem0 = scaling_bloom_mem_seqnum(b);
	for (i = 0; i < n; i++) {
		int len = keyf(k, sizeof k, "key-", i);
		CHECK(scaling_bloom_add(b, k, len, (uint64_t)i) == 1, "add %s", k);
	}
	CHECK(scaling_bloom_mem_seqnum(b) == mem0 + n, "mem_seqnum %llu after %ld adds from %llu",
	      (unsigned long long)scaling_bloom_mem_seqnum(b), n, (unsigned long long)mem0);
	for (i = 0; i < n; i++) {
		int len = keyf(k, sizeof k, "key-", i);
		CHECK(scaling_bloom_check(b, k, len) == 1, "false negative %s", k);
		len = keyf(k, sizeof k, "absent-", i);
		fp += scaling_bloom_check(b, k, len);
	}
	CHECK(fp < n / 50, "%ld false positives in %ld (error rate 0.01)", fp, n);

	CHECK(scaling_bloom_add(b, "", 0, (uint64_t)n) == 1, "empty key");
	CHECK(scaling_bloom_check(b, "", 0) == 1, "empty key not found");
	CHECK(scaling_bloom_add(b, "x", 1, UINT64_MAX) == 0, "id 2^64-1 accepted");

	/* Remove every fifth key with its id; a wrong id or an absent key is refused. */
	for (i = 0; i < n; i += 5) {
		int len = keyf(k, sizeof k, "key-", i);
		CHECK(scaling_bloom_remove(b, k, len, (uint64_t)i) == 1, "remove %s", k);
	}
	for (i = 0; i < n; i++) {
		int len = keyf(k, sizeof k, "key-", i);
		if (i % 5 == 0) still += scaling_bloom_check(b, k, len);
		else CHECK(scaling_bloom_check(b, k, len) == 1, "false negative after removes %s", k);
	}
	CHECK(still < n / 5 / 20, "%ld of %ld removed keys still found", still, n / 5);
	CHECK(scaling_bloom_check(b, "never-added", 11) == 0 || 1, "-");
	if (scaling_bloom_check(b, "never-added", 11) == 0) {
		CHECK(scaling_bloom_remove(b, "never-added", 11, 5) == 0, "removed a key never added");
		CHECK(strstr(dablooms_last_error(), "not present") != NULL, "error text %s", dablooms_last_error());
	}
	CHECK(scaling_bloom_remove(b, "key-1", 5, 2500) == 0, "removed with an id of another filter");
	CHECK(scaling_bloom_check(b, "key-1", 5) == 1, "key-1 lost by a refused remove");

	/* A scaling handle is not a counting handle. */
	CHECK(counting_bloom_check((counting_bloom_t *)b, "key-1", 5) == -1, "scaling handle taken as counting");
	CHECK(strstr(dablooms_last_error(), "scaling_bloom_t handle") != NULL, "error text %s", dablooms_last_error());

	/* Flush: disk_seqnum catches up, and drops to 0 with the next change. */
	CHECK(scaling_bloom_flush(b) == 0, "flush");
	uint64_t mem = scaling_bloom_mem_seqnum(b);
	CHECK(mem == mem0 + n + 1 + n / 5, "mem_seqnum %llu", (unsigned long long)mem);
	CHECK(scaling_bloom_disk_seqnum(b) == mem, "disk_seqnum %llu, mem_seqnum %llu",
	      (unsigned long long)scaling_bloom_disk_seqnum(b), (unsigned long long)mem);
	CHECK(scaling_bloom_add(b, "after-flush", 11, (uint64_t)n) == 1, "add after flush");
	CHECK(scaling_bloom_disk_seqnum(b) == 0, "disk_seqnum not reset by a change");
	CHECK(scaling_bloom_flush(b) == 0, "flush");
	mem = scaling_bloom_mem_seqnum(b);

	/* new_scaling_bloom refuses to replace a file that is open. */
	CHECK(new_scaling_bloom(1000, 0.01, p) == NULL, "replaced a file held open");

	CHECK(free_scaling_bloom(b) == 0, "free");
	CHECK(free_scaling_bloom(b) == -1, "double free accepted");
	CHECK(scaling_bloom_check(b, "key-1", 5) == -1, "check on a freed handle");

	/* Reopen: same keys, same seqnums; parameters come from the file. */
	b = new_scaling_bloom_from_file(1, 0.5, p);
	CHECK(b != NULL, "reopen");
	if (b == NULL) return;
	CHECK(dablooms_last_conversion() == NULL, "native file reported converted: %s", dablooms_last_conversion());
	CHECK(scaling_bloom_mem_seqnum(b) == mem, "mem_seqnum after reopen %llu", (unsigned long long)scaling_bloom_mem_seqnum(b));
	CHECK(scaling_bloom_disk_seqnum(b) == mem, "disk_seqnum after reopen");
	for (i = 0; i < n; i++) {
		int len = keyf(k, sizeof k, "key-", i);
		if (i % 5 != 0) CHECK(scaling_bloom_check(b, k, len) == 1, "false negative after reopen %s", k);
	}
	CHECK(scaling_bloom_check(b, "after-flush", 11) == 1, "after-flush lost");
	CHECK(scaling_bloom_remove(b, "key-7", 5, 7) == 1, "remove after reopen");
	CHECK(free_scaling_bloom(b) == 0, "free");
}

static void test_counting(void) {
	const char *p = path_in(workdir, "counting.dbl");
	char k[64];
	long i;
	counting_bloom_t *c = new_counting_bloom(100, 0.05, p);
	CHECK(c != NULL, "new_counting_bloom");
	if (c == NULL) return;
	for (i = 0; i < 100; i++) {
		int len = keyf(k, sizeof k, "c-", i);
		CHECK(counting_bloom_add(c, k, len) == 0, "counting add %s", k);
	}
	/* One filter, no growth: the 101st add is refused. */
	CHECK(counting_bloom_add(c, "one-more", 8) == -1, "add beyond capacity accepted");
	CHECK(strstr(dablooms_last_error(), "full") != NULL, "error text %s", dablooms_last_error());
	for (i = 0; i < 100; i++) {
		int len = keyf(k, sizeof k, "c-", i);
		CHECK(counting_bloom_check(c, k, len) == 1, "counting false negative %s", k);
	}
	CHECK(counting_bloom_remove(c, "c-3", 3) == 0, "counting remove");
	CHECK(counting_bloom_add(c, "one-more", 8) == 0, "add after a remove made room");
	if (counting_bloom_check(c, "c-none", 6) == 0)
		CHECK(counting_bloom_remove(c, "c-none", 6) == -1, "removed a key never added");
	CHECK(scaling_bloom_add((scaling_bloom_t *)c, "x", 1, 1) == 0, "counting handle taken as scaling");
	CHECK(free_counting_bloom(c) == 0, "free counting");
	CHECK(free_counting_bloom(c) == -1, "double free counting");

	c = new_counting_bloom_from_file(100, 0.05, p);
	CHECK(c != NULL, "reopen counting");
	if (c == NULL) return;
	CHECK(dablooms_last_conversion() == NULL, "native counting file reported converted");
	for (i = 0; i < 100; i++) {
		int len = keyf(k, sizeof k, "c-", i);
		if (i != 3) CHECK(counting_bloom_check(c, k, len) == 1, "counting false negative after reopen %s", k);
	}
	CHECK(counting_bloom_check(c, "one-more", 8) == 1, "one-more lost");
	CHECK(counting_bloom_add(c, "two-more", 8) == -1, "reopened counting filter grew");
	CHECK(free_counting_bloom(c) == 0, "free counting");
}

/* Files the original wrote: converted in place, keys answer as before. */
static void test_original_files(void) {
	char k[64];
	long i, still = 0;
	const char *p = path_in(workdir, "orig_scaling.bin");
	CHECK(copy_file(path_in(origdir, "scaling_1000_0.05.bin"), p) == 0, "copy");

	/* Wrong parameters: refused, file untouched. */
	long size = file_size(p);
	CHECK(new_scaling_bloom_from_file(999, 0.05, p) == NULL, "opened with the wrong capacity");
	CHECK(strstr(dablooms_last_error(), "size") != NULL, "error text %s", dablooms_last_error());
	CHECK(file_size(p) == size, "a refused open changed the file size");
	CHECK(dablooms_last_conversion() == NULL, "conversion reported for a refused file");

	scaling_bloom_t *b = new_scaling_bloom_from_file(1000, 0.05, p);
	CHECK(b != NULL, "open the original's scaling file");
	if (b == NULL) return;
	const char *conv = dablooms_last_conversion();
	CHECK(conv != NULL && strstr(conv, "converted") && strstr(conv, "0.9.1"), "conversion notice %s", conv ? conv : "(null)");
	CHECK(file_size(path_in(workdir, "orig_scaling.bin.dablooms-0.9.1")) == size, "original not kept beside");
	CHECK(scaling_bloom_mem_seqnum(b) == 3001, "mem_seqnum %llu", (unsigned long long)scaling_bloom_mem_seqnum(b));
	CHECK(scaling_bloom_disk_seqnum(b) == 3001, "disk_seqnum %llu", (unsigned long long)scaling_bloom_disk_seqnum(b));
	for (i = 0; i < 2500; i++) {
		int len = keyf(k, sizeof k, "key-", i);
		if (i % 5 != 0) CHECK(scaling_bloom_check(b, k, len) == 1, "false negative in the converted file %s", k);
		else still += scaling_bloom_check(b, k, len);
	}
	CHECK(still < 50, "%ld of 500 keys the original removed still found", still);
	CHECK(scaling_bloom_remove(b, "key-1", 5, 1) == 1, "remove from a converted filter");
	CHECK(scaling_bloom_add(b, "new-key", 7, 2500) == 1, "add to the converted file");
	CHECK(free_scaling_bloom(b) == 0, "free");

	b = new_scaling_bloom_from_file(1000, 0.05, p);
	CHECK(b != NULL, "reopen the converted file");
	if (b != NULL) {
		CHECK(dablooms_last_conversion() == NULL, "converted twice");
		CHECK(scaling_bloom_check(b, "new-key", 7) == 1, "new-key lost");
		CHECK(scaling_bloom_check(b, "key-2", 5) == 1, "key-2 lost");
		CHECK(free_scaling_bloom(b) == 0, "free");
	}

	/* Repeated ids, never flushed (disk_seqnum 0). */
	p = path_in(workdir, "orig_dupids.bin");
	CHECK(copy_file(path_in(origdir, "scaling_dupids.bin"), p) == 0, "copy");
	b = new_scaling_bloom_from_file(100, 0.1, p);
	CHECK(b != NULL, "open the original's dupids file");
	if (b != NULL) {
		CHECK(dablooms_last_conversion() != NULL, "no conversion notice");
		CHECK(scaling_bloom_mem_seqnum(b) == 501, "mem_seqnum %llu", (unsigned long long)scaling_bloom_mem_seqnum(b));
		for (i = 0; i < 500; i++) {
			int len = keyf(k, sizeof k, "key-", i);
			CHECK(scaling_bloom_check(b, k, len) == 1, "false negative in dupids %s", k);
		}
		CHECK(free_scaling_bloom(b) == 0, "free");
	}

	/* The single counting filter. */
	p = path_in(workdir, "orig_counting.bin");
	CHECK(copy_file(path_in(origdir, "counting_1000_0.05.bin"), p) == 0, "copy");
	counting_bloom_t *c = new_counting_bloom_from_file(1000, 0.05, p);
	CHECK(c != NULL, "open the original's counting file");
	if (c != NULL) {
		CHECK(dablooms_last_conversion() != NULL, "no conversion notice");
		for (i = 0; i < 1000; i++) {
			int len = keyf(k, sizeof k, "key-", i);
			if (i % 5 != 0) CHECK(counting_bloom_check(c, k, len) == 1, "false negative in counting %s", k);
		}
		CHECK(counting_bloom_remove(c, "key-1", 5) == 0, "counting remove from a converted file");
		CHECK(free_counting_bloom(c) == 0, "free");
	}
}

/* Several threads open one original file at once: one converts it, the
 * others open the converted file. */
#define OPENERS 4
static const char *race_path;
static int race_converted;

static void *opener(void *arg) {
	(void)arg;
	scaling_bloom_t *b = new_scaling_bloom_from_file(1000, 0.05, race_path);
	CHECK(b != NULL, "concurrent open of an original file");
	if (b == NULL) return NULL;
	if (dablooms_last_conversion() != NULL) __atomic_add_fetch(&race_converted, 1, __ATOMIC_SEQ_CST);
	CHECK(scaling_bloom_check(b, "key-2", 5) == 1, "key-2 lost in a concurrent conversion");
	CHECK(scaling_bloom_add(b, "raced", 5, 2600) == 1, "add after a concurrent conversion");
	CHECK(free_scaling_bloom(b) == 0, "free");
	return NULL;
}

static void test_concurrent_conversion(void) {
	pthread_t th[OPENERS];
	long t;
	race_path = path_in(workdir, "orig_race.bin");
	CHECK(copy_file(path_in(origdir, "scaling_1000_0.05.bin"), race_path) == 0, "copy");
	for (t = 0; t < OPENERS; t++) pthread_create(&th[t], NULL, opener, NULL);
	for (t = 0; t < OPENERS; t++) pthread_join(th[t], NULL);
	CHECK(race_converted == 1, "%d threads converted the file, want 1", race_converted);
	CHECK(file_size(path_in(workdir, "orig_race.bin.dablooms-0.9.1")) == 13757, "original not kept");
	CHECK(file_size(path_in(workdir, "orig_race.bin.dablooms-0.9.1.1")) == -1, "original kept twice");
}

/* Several threads on one handle, each also opening and freeing its own. */
#define THREADS 8
#define PER_THREAD 2000

static scaling_bloom_t *shared;
static const char *shared_path;
static uint64_t next_id; /* ids increase across threads, as row ids would */

static void *worker(void *arg) {
	long t = (long)arg, i;
	char k[64], prefix[16];
	static __thread uint64_t ids[PER_THREAD];
	snprintf(prefix, sizeof prefix, "t%ld-", t);
	for (i = 0; i < PER_THREAD; i++) {
		int len = keyf(k, sizeof k, prefix, i);
		ids[i] = __atomic_fetch_add(&next_id, 1, __ATOMIC_SEQ_CST);
		CHECK(scaling_bloom_add(shared, k, len, ids[i]) == 1, "thread add %s", k);
		CHECK(scaling_bloom_check(shared, k, len) == 1, "thread false negative %s", k);
		if (i % 97 == t) scaling_bloom_mem_seqnum(shared); /* a count beside the others' adds */
	}
	for (i = 0; i < PER_THREAD; i += 2) {
		int len = keyf(k, sizeof k, prefix, i);
		CHECK(scaling_bloom_remove(shared, k, len, ids[i]) == 1, "thread remove %s", k);
	}
	/* This thread's error text is its own. */
	CHECK(scaling_bloom_remove(shared, "", 0, UINT64_MAX) == 0, "remove with a bad id");
	CHECK(starts_with(dablooms_last_error(), "scaling_bloom_remove"), "thread error text %s", dablooms_last_error());

	/* A second handle on the same file, from this thread. */
	scaling_bloom_t *own = new_scaling_bloom_from_file(0, 0, shared_path);
	CHECK(own != NULL, "thread open");
	if (own != NULL) {
		for (i = 1; i < PER_THREAD; i += 2) {
			int len = keyf(k, sizeof k, prefix, i);
			CHECK(scaling_bloom_check(own, k, len) == 1, "false negative through a second handle %s", k);
		}
		CHECK(free_scaling_bloom(own) == 0, "thread free");
	}
	return NULL;
}

static void test_threads(void) {
	pthread_t th[THREADS];
	long t;
	shared_path = path_in(workdir, "threads.dbl");
	shared = new_scaling_bloom(1000, 0.01, shared_path);
	CHECK(shared != NULL, "new_scaling_bloom for threads");
	if (shared == NULL) return;
	uint64_t mem0 = scaling_bloom_mem_seqnum(shared);
	CHECK(free_scaling_bloom((scaling_bloom_t *)&checks) == -1, "free of a bogus handle");
	for (t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
	for (t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
	CHECK(starts_with(dablooms_last_error(), "free_scaling_bloom"), "main thread error text changed by others: %s", dablooms_last_error());
	uint64_t want = mem0 + THREADS * (PER_THREAD + PER_THREAD / 2);
	/* The field first: counts taken beside other threads' adds neither
	 * lost nor doubled any of them once all have returned. */
	uint64_t field = shared->header->mem_seqnum;
	CHECK(field == want, "mem_seqnum field %llu after the threads, want %llu", (unsigned long long)field, (unsigned long long)want);
	CHECK(scaling_bloom_mem_seqnum(shared) == want, "mem_seqnum %llu, want %llu",
	      (unsigned long long)scaling_bloom_mem_seqnum(shared), (unsigned long long)want);
	CHECK(scaling_bloom_flush(shared) == 0, "flush");
	CHECK(scaling_bloom_disk_seqnum(shared) == want, "disk_seqnum after threads");
	CHECK(free_scaling_bloom(shared) == 0, "free");
}

/* The handles are the original's structs, their fields true on return. */
static void test_structs(void) {
	const char *p = path_in(workdir, "structs.dbl");
	scaling_bloom_t *b = new_scaling_bloom(1000, 0.01, p);
	CHECK(b != NULL, "new_scaling_bloom");
	if (b == NULL) return;
	CHECK(b->capacity == 1000 && b->error_rate == 0.01, "capacity %u error_rate %g", b->capacity, b->error_rate);
	CHECK(b->num_blooms == 1 && b->blooms[0] != NULL && b->blooms[1] == NULL, "num_blooms %u", b->num_blooms);
	CHECK(b->num_bytes == (size_t)file_size(p), "num_bytes %zu, file %ld", b->num_bytes, file_size(p));
	CHECK(b->fd == -1 && b->bitmap != NULL && b->bitmap->array == NULL && b->bitmap->bytes == b->num_bytes, "bitmap");
	CHECK(b->header->max_id == 0 && b->header->mem_seqnum == 0, "header %llu %llu",
	      (unsigned long long)b->header->max_id, (unsigned long long)b->header->mem_seqnum);
	counting_bloom_t *c = b->blooms[0];
	CHECK(c->capacity == 1000 && c->nfuncs > 0 && c->size > 0 && c->counts_per_func == c->size / c->nfuncs &&
	      c->num_bytes > 0 && c->offset > 0 && c->bitmap == b->bitmap && c->header->count == 0, "bloom 0");
	char k[32];
	long i;
	for (i = 0; i < 2500; i++) { /* past capacity: the chain grows */
		keyf(k, sizeof k, "s-", i);
		scaling_bloom_add(b, k, strlen(k), 10 + i);
	}
	CHECK(b->num_blooms >= 2, "num_blooms %u after 2500 adds", b->num_blooms);
	CHECK(b->header->max_id == 2509, "max_id %llu", (unsigned long long)b->header->max_id);
	/* mem_seqnum: the field is true after each add and remove without a call
	 * that counts (read before scaling_bloom_mem_seqnum, which rewrites it). */
	uint64_t field = b->header->mem_seqnum;
	CHECK(field == 2500, "mem_seqnum field %llu after 2500 adds", (unsigned long long)field);
	CHECK(scaling_bloom_remove(b, "never added", 11, 10) == 0, "remove of an absent key");
	CHECK(b->header->mem_seqnum == 2500, "mem_seqnum field %llu after a refused remove", (unsigned long long)b->header->mem_seqnum);
	CHECK(scaling_bloom_mem_seqnum(b) == 2500 && b->header->mem_seqnum == 2500, "mem_seqnum %llu, field %llu",
	      (unsigned long long)scaling_bloom_mem_seqnum(b), (unsigned long long)b->header->mem_seqnum);
	CHECK(b->header->disk_seqnum == 0, "disk_seqnum field %llu before a flush", (unsigned long long)b->header->disk_seqnum);
	/* Another handle's adds: counted at this handle's next count. */
	scaling_bloom_t *other = new_scaling_bloom_from_file(0, 0, p);
	CHECK(other != NULL, "second handle");
	if (other != NULL) {
		CHECK(other->header->mem_seqnum == 2500 && other->num_blooms == b->num_blooms, "second handle's fields");
		CHECK(scaling_bloom_add(other, "o-1", 3, 3000) == 1 && scaling_bloom_add(other, "o-2", 3, 3001) == 1, "adds through the second handle");
		CHECK(other->header->mem_seqnum == 2502 && other->header->max_id == 3001, "second handle's mem_seqnum %llu, max_id %llu",
		      (unsigned long long)other->header->mem_seqnum, (unsigned long long)other->header->max_id);
		CHECK(scaling_bloom_add(b, "s-x", 3, 3002) == 1, "add");
		CHECK(b->header->mem_seqnum == 2501 && b->header->max_id == 3002, "mem_seqnum field %llu before a count, max_id %llu",
		      (unsigned long long)b->header->mem_seqnum, (unsigned long long)b->header->max_id);
		CHECK(scaling_bloom_mem_seqnum(b) == 2503 && b->header->mem_seqnum == 2503, "mem_seqnum field %llu after a count",
		      (unsigned long long)b->header->mem_seqnum);
		CHECK(scaling_bloom_remove(other, "o-1", 3, 3000) == 1 && scaling_bloom_remove(other, "o-2", 3, 3001) == 1, "removes through the second handle");
		CHECK(free_scaling_bloom(other) == 0, "free second handle");
		CHECK(scaling_bloom_remove(b, "s-x", 3, 3002) == 1, "remove");
		CHECK(b->header->mem_seqnum == 2504, "mem_seqnum field %llu", (unsigned long long)b->header->mem_seqnum);
		CHECK(scaling_bloom_mem_seqnum(b) == 2506, "mem_seqnum %llu", (unsigned long long)scaling_bloom_mem_seqnum(b));
	}
	CHECK(b->num_bytes == (size_t)file_size(p), "num_bytes %zu after growth, file %ld", b->num_bytes, file_size(p));
	unsigned long total = 0;
	for (i = 0; i < (long)b->num_blooms; i++) total += b->blooms[i]->header->count;
	CHECK(total == 2500, "counts sum to %lu", total);
	CHECK(scaling_bloom_remove(b, "s-0", 3, 10) == 1, "remove");
	total = 0;
	for (i = 0; i < (long)b->num_blooms; i++) total += b->blooms[i]->header->count;
	CHECK(total == 2499, "counts sum to %lu after a remove", total);
	/* The original's test program flushes through the bitmap. */
	CHECK(bitmap_flush(b->bitmap) == 0, "bitmap_flush of a handle");
	CHECK(b->header->disk_seqnum == b->header->mem_seqnum && b->header->disk_seqnum > 0, "disk_seqnum after bitmap_flush");
	CHECK(bitmap_increment(b->bitmap, 0, 0) == -1 && strstr(dablooms_last_error(), "handle's bitmap"), "increment of a handle's bitmap");
	CHECK(bitmap_check(b->bitmap, 0, 0) == -1 && bitmap_decrement(b->bitmap, 0, 0) == -1, "check/decrement of a handle's bitmap");
	CHECK(bitmap_resize(b->bitmap, 1, 2) == NULL, "resize of a handle's bitmap");
	free_bitmap(b->bitmap); /* refused: the handle owns it */
	CHECK(strstr(dablooms_last_error(), "free_scaling_bloom") != NULL, "free_bitmap of a handle's bitmap");
	CHECK(free_scaling_bloom(b) == 0, "free");

	counting_bloom_t *cb = new_counting_bloom(100, 0.05, path_in(workdir, "structs-counting.dbl"));
	CHECK(cb != NULL, "new_counting_bloom");
	if (cb != NULL) {
		CHECK(cb->capacity == 100 && cb->error_rate == 0.05 && cb->header->count == 0 && cb->num_bytes > 0, "counting fields");
		CHECK(counting_bloom_add(cb, "x", 1) == 0 && cb->header->count == 1, "count %u after an add", cb->header->count);
		CHECK(bitmap_flush(cb->bitmap) == 0, "bitmap_flush of a counting handle");
		CHECK(free_counting_bloom(cb) == 0, "free counting");
	}

	/* A bitmap of the caller's own: 4-bit counters in a mapped file. */
	int fd = open(path_in(workdir, "plain.bitmap"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0, "open");
	bitmap_t *m = new_bitmap(fd, 64);
	CHECK(m != NULL && m->bytes == 64 && m->fd == fd && m->array != NULL, "new_bitmap");
	if (m == NULL) return;
	CHECK(file_size(path_in(workdir, "plain.bitmap")) == 64, "new_bitmap grows the file");
	for (i = 0; i < 15; i++) CHECK(bitmap_increment(m, 3, 10) == 0, "increment %ld", i);
	CHECK(bitmap_increment(m, 3, 10) == -1, "increment past 15");
	CHECK(bitmap_check(m, 3, 10) == 15 && bitmap_check(m, 2, 10) == 0, "check");
	CHECK((unsigned char)m->array[11] == 0x0f, "odd index in the low nibble: %#x", (unsigned char)m->array[11]);
	CHECK(bitmap_increment(m, 2, 10) == 0 && (unsigned char)m->array[11] == 0x1f, "even index in the high nibble");
	CHECK(bitmap_decrement(m, 4, 10) == -1, "decrement of zero");
	CHECK(bitmap_decrement(m, 3, 10) == 0 && bitmap_check(m, 3, 10) == 14, "decrement");
	CHECK(bitmap_check(m, 200, 0) == -1 && bitmap_increment(m, 0, 64) == -1 && bitmap_check(m, 0, -1) == -1, "out of range");
	CHECK(bitmap_flush(m) == 0, "flush");
	m = bitmap_resize(m, 64, 128);
	CHECK(m != NULL && m->bytes == 128 && bitmap_check(m, 3, 10) == 14 && bitmap_check(m, 255, 0) == 0, "resize keeps the counters");
	if (m != NULL) free_bitmap(m);
	CHECK(bitmap_check(NULL, 0, 0) == -1 && bitmap_flush(NULL) == -1, "NULL bitmap");
	CHECK(fcntl(fd, F_GETFD) == -1, "free_bitmap closes the descriptor, as the original's did");
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s WORKDIR ORIGDIR\n", argv[0]);
		return 2;
	}
	workdir = argv[1];
	origdir = argv[2];
	test_version_and_arguments();
	test_scaling();
	test_counting();
	test_original_files();
	test_concurrent_conversion();
	test_threads();
	test_structs();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
