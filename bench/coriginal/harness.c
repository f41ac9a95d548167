/*
 * harness.c: runs the unmodified C dablooms 0.9.1 for the bench tool (see
 * ../coriginal.go and ../README.md). Not part of the original: it only
 * includes its dablooms.h. The bench tool compiles it at run time together
 * with the original's dablooms.c and murmur.c, taken from
 * ../shared/reference/dablooms-0.9.1-src (never copied into this repo):
 *
 *     cc -O2 -I<src> -o <tmp>/dablooms-c-harness harness.c <src>/dablooms.c <src>/murmur.c -lm
 *
 * Usage: dablooms-c-harness N QUERIES PRESENT_QUERIES REMOVES ORDERFILE
 *
 * ORDERFILE holds PRESENT_QUERIES then QUERIES little-endian uint32 key
 * indexes: the order in which the Go side queries its present and absent
 * keys. Keys are generated here exactly as the Go side does: "key-%012d"
 * and "absent-%012d", each set in one contiguous buffer in index order,
 * queried through an array of pointers in the given order.
 *
 * Then for every line on stdin (a file path) it runs one repetition:
 * new_scaling_bloom(1000000, 0.01, path) (the original's own defaults),
 * add keys 0..N-1 with id = index, contains on the present sample, contains
 * on the absent keys, remove keys 0..REMOVES-1 with their ids, each phase
 * timed with CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID, and prints one
 * JSON line. The file is freed and unlinked afterwards.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dablooms.h"

#define PRESENT_LEN 16 /* "key-" + 12 digits */
#define ABSENT_LEN 19  /* "absent-" + 12 digits */

static int64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0) {
        return -1;
    }
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct {
    int64_t wall0, cpu0;
} stamp_t;

static stamp_t start(void)
{
    stamp_t s;
    s.cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    s.wall0 = clock_ns(CLOCK_MONOTONIC);
    return s;
}

/* stop prints "name_wall":...,"name_cpu":... as total ns. */
static void stop(stamp_t s, const char *name, char *out, size_t cap)
{
    int64_t wall = clock_ns(CLOCK_MONOTONIC) - s.wall0;
    int64_t cpu1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    int64_t cpu = (s.cpu0 < 0 || cpu1 < 0) ? -1 : cpu1 - s.cpu0;
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "\"%s_wall_ns\":%lld,\"%s_cpu_ns\":%lld,", name, (long long)wall, name, (long long)cpu);
}

static char *gen(const char *prefix, int width, long count)
{
    char *buf = malloc((size_t)count * width + 1);
    long i;
    if (buf == NULL) {
        return NULL;
    }
    for (i = 0; i < count; i++) {
        /* writes width chars and a NUL that the next key overwrites */
        snprintf(buf + (size_t)i * width, width + 1, "%s%012ld", prefix, i);
    }
    return buf;
}

int main(int argc, char **argv)
{
    long n, queries, pq, removes, i;
    FILE *f;
    uint32_t *order;
    char *present, *absent, **presentQ, **absentQ;
    char path[4096];

    if (argc != 6) {
        fprintf(stderr, "usage: %s N QUERIES PRESENT_QUERIES REMOVES ORDERFILE\n", argv[0]);
        return 2;
    }
    n = atol(argv[1]);
    queries = atol(argv[2]);
    pq = atol(argv[3]);
    removes = atol(argv[4]);
    if (n < 1 || queries < 1 || pq < 1 || pq > n || removes < 1 || removes > n) {
        fprintf(stderr, "bad sizes\n");
        return 2;
    }

    present = gen("key-", PRESENT_LEN, n);
    absent = gen("absent-", ABSENT_LEN, queries);
    order = malloc(sizeof(uint32_t) * (size_t)(pq + queries));
    presentQ = malloc(sizeof(char *) * (size_t)pq);
    absentQ = malloc(sizeof(char *) * (size_t)queries);
    if (!present || !absent || !order || !presentQ || !absentQ) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if ((f = fopen(argv[5], "rb")) == NULL || fread(order, sizeof(uint32_t), (size_t)(pq + queries), f) != (size_t)(pq + queries)) {
        perror("reading the order file");
        return 1;
    }
    fclose(f);
    for (i = 0; i < pq + queries; i++) {
        const uint8_t *b = (const uint8_t *)&order[i]; /* little-endian on disk */
        uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if ((i < pq && v >= (uint32_t)n) || (i >= pq && v >= (uint32_t)queries)) {
            fprintf(stderr, "order file: index out of range\n");
            return 1;
        }
        if (i < pq) {
            presentQ[i] = present + (size_t)v * PRESENT_LEN;
        } else {
            absentQ[i - pq] = absent + (size_t)v * ABSENT_LEN;
        }
    }
    /* The driver checks that the queries are its own keys in its order. */
    printf("{\"ready\":true,\"version\":\"%s\",\"present_q\":[\"%.*s\",\"%.*s\"],\"absent_q\":[\"%.*s\",\"%.*s\"]}\n",
           dablooms_version(), PRESENT_LEN, presentQ[0], PRESENT_LEN, presentQ[pq - 1],
           ABSENT_LEN, absentQ[0], ABSENT_LEN, absentQ[queries - 1]);
    fflush(stdout);

    while (fgets(path, sizeof path, stdin) != NULL) {
        char out[2048] = "{";
        long falseneg = 0, falsepos = 0, addfail = 0, removefail = 0;
        struct stat st;
        unsigned int filters;
        stamp_t s;
        scaling_bloom_t *bloom;

        path[strcspn(path, "\n")] = 0;
        if ((bloom = new_scaling_bloom(1000000, 0.01, path)) == NULL) {
            printf("{\"error\":\"new_scaling_bloom failed\"}\n");
            fflush(stdout);
            continue;
        }

        s = start();
        for (i = 0; i < n; i++) {
            if (scaling_bloom_add(bloom, present + (size_t)i * PRESENT_LEN, PRESENT_LEN, (uint64_t)i) != 1) {
                addfail++;
            }
        }
        stop(s, "add", out, sizeof out);
        filters = bloom->num_blooms;
        if (stat(path, &st) != 0) {
            st.st_size = 0;
        }

        s = start();
        for (i = 0; i < pq; i++) {
            if (!scaling_bloom_check(bloom, presentQ[i], PRESENT_LEN)) {
                falseneg++;
            }
        }
        stop(s, "present", out, sizeof out);

        s = start();
        for (i = 0; i < queries; i++) {
            if (scaling_bloom_check(bloom, absentQ[i], ABSENT_LEN)) {
                falsepos++;
            }
        }
        stop(s, "absent", out, sizeof out);

        s = start();
        for (i = 0; i < removes; i++) {
            if (scaling_bloom_remove(bloom, present + (size_t)i * PRESENT_LEN, PRESENT_LEN, (uint64_t)i) != 1) {
                removefail++;
            }
        }
        stop(s, "remove", out, sizeof out);

        free_scaling_bloom(bloom);
        unlink(path);
        printf("%s\"false_neg\":%ld,\"false_pos\":%ld,\"add_fail\":%ld,\"remove_fail\":%ld,\"bytes\":%lld,\"filters\":%u}\n",
               out, falseneg, falsepos, addfail, removefail, (long long)st.st_size, filters);
        fflush(stdout);
    }
    return 0;
}
