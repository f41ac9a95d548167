/* Cost of a call through the C boundary: bench FILE N
 * Adds N keys "key-%011d" with ids 1..N to a new filter (capacity N, error
 * 0.01), then checks them in the same order; prints ns per add and per check.
 * 100,000 checks of an absent key come first, untimed, as in the Go and
 * Python benchmarks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dablooms.h"

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s FILE N\n", argv[0]);
		return 2;
	}
	long n = atol(argv[2]), i, found = 0;
	char *keys = malloc((size_t)n * 32);
	for (i = 0; i < n && keys != NULL; i++) snprintf(keys + i * 32, 32, "key-%011ld", i % 100000000000L);
	scaling_bloom_t *b = new_scaling_bloom((unsigned)n, 0.01, argv[1]);
	if (b == NULL || keys == NULL) return 1;
	for (i = 0; i < 100000; i++) found += scaling_bloom_check(b, "warm-up", 7); /* first calls from this thread */
	found = 0;
	double t0 = now();
	for (i = 0; i < n; i++)
		if (scaling_bloom_add(b, keys + i * 32, 15, (uint64_t)i + 1) != 1) return 1;
	double t1 = now();
	for (i = 0; i < n; i++) found += scaling_bloom_check(b, keys + i * 32, 15);
	double t2 = now();
	if (found != n) return 1;
	printf("add %.1f\ncheck %.1f\n", (t1 - t0) / n, (t2 - t1) / n);
	free_scaling_bloom(b);
	free(keys);
	return 0;
}
