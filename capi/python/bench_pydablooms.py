"""Cost of a call through ctypes and the C boundary: bench_pydablooms.py FILE N
Adds N keys "key-%011d" (bytes) with ids 1..N to a new filter (capacity N,
error 0.01), then checks them in the same order; prints ns per add and per
check, the loop included (as a script would run it)."""
import sys
import time

import pydablooms

path, n = sys.argv[1], int(sys.argv[2])
keys = [b"key-%011d" % i for i in range(n)]
bloom = pydablooms.Dablooms(capacity=n, error_rate=.01, filepath=path)
add, check = bloom.add, bloom.check
for _ in range(100000):  # untimed, as in the Go and C benchmarks
    check(b"warm-up")
t0 = time.perf_counter_ns()
for i, k in enumerate(keys, 1):
    add(k, i)
t1 = time.perf_counter_ns()
found = 0
for k in keys:
    found += check(k)
t2 = time.perf_counter_ns()
assert found == n
print("add %.1f\ncheck %.1f" % ((t1 - t0) / n, (t2 - t1) / n))
